"""`pebrel collab task ...`: tasks, attempts, reports and consultations (I3, #16).

The user creates, assigns, comments, revises, answers, approves plans and accepts; the
assignee (an agent acting as its session) reports, responds, asks and submits plans. Which
caller may do what is the service's to check (docs/collab.md, "Who may do what"); the CLI only
sends what it was given, with the acting session of `pebrel collab --session` and an
idempotency key on every write.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from pebrel.cli.collab_request import (
    REPORT_STATUSES,
    TASK_STATUSES,
    acting_session,
    collab_request,
    content_options,
    evidence_value,
    idempotency_option,
    json_value,
    metadata_value,
    read,
    read_content,
    refuse_session,
    write,
)
from pebrel.cli.options import CommandFunc, pretty_option

task_arg = click.argument("task_id", metavar="TASK")
revision_option = click.option(
    "--revision",
    type=click.IntRange(min=1),
    required=True,
    help="The task's current revision (TASK_CHANGED if it moved on).",
)


def provenance_options(metadata: bool) -> Callable[[CommandFunc], CommandFunc]:
    """Where a write comes from outside Pebrel (I3.3): `--external-actor JSON`,
    `--external-message-id ID` and (``metadata``) `--metadata JSON`; all of it at most 16 KiB."""

    def add(command: CommandFunc) -> CommandFunc:
        command = click.option(
            "--external-message-id",
            "external_message_id",
            help="The outside system's id of the message this comes from.",
        )(command)
        command = click.option(
            "--external-actor",
            "external_actor",
            help='Who this is done for outside Pebrel: a JSON object ({"id": "..."}).',
        )(command)
        if metadata:
            command = click.option("--metadata", help="A JSON object kept with it.")(command)
        return command

    return add


def provenance(
    external_actor: str | None, external_message_id: str | None, metadata: str | None = None
) -> dict[str, Any]:
    return {
        "external_actor": json_value("--external-actor", external_actor, (dict,)),
        "external_message_id": external_message_id,
        "metadata": metadata_value(metadata),
    }


@click.group()
def task() -> None:
    """Create, assign and follow tasks; report on them as their assignee."""


@task.command("create")
@click.option("--group", "group_ref", required=True, help="The task's group (id or name).")
@click.option("--title", required=True, help="A short title (at most 256 characters).")
@content_options(required=True)
@click.option("--assignee", help="Assign it at once to this session (ses_...) of the group.")
@click.option(
    "--source",
    help="Your own word for where the task comes from (kept as origin.source; the task's"
    " source stays user, session or integration).",
)
@provenance_options(metadata=True)
@idempotency_option
@pretty_option
def create(
    group_ref: str,
    title: str,
    content: str | None,
    content_file: str | None,
    assignee: str | None,
    source: str | None,
    metadata: str | None,
    external_actor: str | None,
    external_message_id: str | None,
    idempotency_key: str | None,
    pretty: bool,
) -> None:
    """Create an open task; with --assignee, attempt 1 and its delivery are queued too."""
    write(
        "task.create",
        idempotency_key,
        pretty,
        group=group_ref,
        title=title,
        content=read_content(content, content_file, required=True),
        assignee=assignee,
        source=source,
        **provenance(external_actor, external_message_id, metadata),
        session=acting_session(),
    )


@task.command("get")
@task_arg
@pretty_option
def get(task_id: str, pretty: bool) -> None:
    """TASK with its attempts, events, artifacts, decisions and outbox (deliveries)."""
    read(collab_request("task.get", task=task_id), pretty)


@task.command("list")
@click.option("--group", "group_ref", help="Only this group's tasks (id or name).")
@click.option("--status", type=click.Choice(TASK_STATUSES), help="Only tasks in this status.")
@pretty_option
def list_tasks(group_ref: str | None, status: str | None, pretty: bool) -> None:
    """Task summaries."""
    read(collab_request("task.list", group=group_ref, status=status), pretty)


@task.command("assign")
@task_arg
@click.option("--assignee", required=True, help="The session (ses_...) to work on it.")
@revision_option
@provenance_options(metadata=True)
@idempotency_option
@pretty_option
def assign(
    task_id: str,
    assignee: str,
    revision: int,
    metadata: str | None,
    external_actor: str | None,
    external_message_id: str | None,
    idempotency_key: str | None,
    pretty: bool,
) -> None:
    """Open a new attempt of TASK for --assignee and queue the task to it."""
    write(
        "task.assign",
        idempotency_key,
        pretty,
        task=task_id,
        assignee=assignee,
        revision=revision,
        **provenance(external_actor, external_message_id, metadata),
        session=acting_session(),
    )


def text_verb(name: str, method: str, help_text: str) -> None:
    """A verb that sends TASK and a text, as the `pebrel collab --session` session."""

    @task.command(name, help=help_text)
    @task_arg
    @content_options(required=True)
    @idempotency_option
    @pretty_option
    def command(
        task_id: str,
        content: str | None,
        content_file: str | None,
        idempotency_key: str | None,
        pretty: bool,
    ) -> None:
        write(
            method,
            idempotency_key,
            pretty,
            task=task_id,
            content=read_content(content, content_file, required=True),
            session=acting_session(),
        )


@task.command("comment")
@task_arg
@content_options(required=True)
@provenance_options(metadata=True)
@idempotency_option
@pretty_option
def comment(
    task_id: str,
    content: str | None,
    content_file: str | None,
    metadata: str | None,
    external_actor: str | None,
    external_message_id: str | None,
    idempotency_key: str | None,
    pretty: bool,
) -> None:
    """Ask the current assignee about TASK; the delivered text ends with the respond command."""
    write(
        "task.comment",
        idempotency_key,
        pretty,
        task=task_id,
        content=read_content(content, content_file, required=True),
        **provenance(external_actor, external_message_id, metadata),
        session=acting_session(),
    )


text_verb(
    "question",
    "task.question",
    "As TASK's assignee, ask a question the user answers once (a decision).",
)
text_verb(
    "submit-plan", "task.submit_plan", "As TASK's assignee, submit a plan for the user to approve."
)


@task.command("revise")
@task_arg
@revision_option
@content_options(required=True)
@provenance_options(metadata=True)
@idempotency_option
@pretty_option
def revise(
    task_id: str,
    revision: int,
    content: str | None,
    content_file: str | None,
    metadata: str | None,
    external_actor: str | None,
    external_message_id: str | None,
    idempotency_key: str | None,
    pretty: bool,
) -> None:
    """Change TASK's requirements: it reopens and its accepted result loses acceptance."""
    write(
        "task.revise",
        idempotency_key,
        pretty,
        task=task_id,
        revision=revision,
        content=read_content(content, content_file, required=True),
        **provenance(external_actor, external_message_id, metadata),
        session=acting_session(),
    )


@task.command("answer")
@task_arg
@click.option("--decision", required=True, help="The question's decision id (dec_...).")
@content_options(required=True)
@provenance_options(metadata=True)
@idempotency_option
@pretty_option
def answer(
    task_id: str,
    decision: str,
    content: str | None,
    content_file: str | None,
    metadata: str | None,
    external_actor: str | None,
    external_message_id: str | None,
    idempotency_key: str | None,
    pretty: bool,
) -> None:
    """Answer an open question of TASK's current attempt; the answer goes to the assignee."""
    write(
        "task.answer",
        idempotency_key,
        pretty,
        task=task_id,
        decision=decision,
        content=read_content(content, content_file, required=True),
        **provenance(external_actor, external_message_id, metadata),
        session=acting_session(),
    )


@task.command("respond")
@task_arg
@click.option("--attempt", required=True, help="The attempt the comment was made on (att_...).")
@click.option("--to-event", "to_event", required=True, help="The comment's event id (evt_...).")
@content_options(required=True)
@idempotency_option
@pretty_option
def respond(
    task_id: str,
    attempt: str,
    to_event: str,
    content: str | None,
    content_file: str | None,
    idempotency_key: str | None,
    pretty: bool,
) -> None:
    """As the attempt's assignee, answer a comment on TASK (changes no status)."""
    write(
        "task.respond",
        idempotency_key,
        pretty,
        task=task_id,
        attempt=attempt,
        to_event=to_event,
        content=read_content(content, content_file, required=True),
        session=acting_session(),
    )


@task.command("report")
@task_arg
@click.option("--status", type=click.Choice(REPORT_STATUSES), required=True)
@content_options(required=False)
@click.option("--summary", help="One line on the result (with complete).")
@click.option("--evidence", help="JSON (object, array or string) backing the report.")
@click.option("--attempt", help="Refuse unless this (att_...) is still the current attempt.")
@idempotency_option
@pretty_option
def report(
    task_id: str,
    status: str,
    content: str | None,
    content_file: str | None,
    summary: str | None,
    evidence: str | None,
    attempt: str | None,
    idempotency_key: str | None,
    pretty: bool,
) -> None:
    """As TASK's assignee, report ack, working, blocked, complete (a new artifact) or failed."""
    write(
        "task.report",
        idempotency_key,
        pretty,
        task=task_id,
        status=status,
        content=read_content(content, content_file, required=False),
        summary=summary,
        evidence=evidence_value(evidence),
        attempt=attempt,
        session=acting_session(),
    )


@task.command("approve-plan")
@task_arg
@idempotency_option
@pretty_option
def approve_plan(task_id: str, idempotency_key: str | None, pretty: bool) -> None:
    """Approve TASK's submitted plan (the user only)."""
    refuse_session("task approve-plan")
    write("task.approve_plan", idempotency_key, pretty, task=task_id)


@task.command("accept")
@task_arg
@idempotency_option
@pretty_option
def accept(task_id: str, idempotency_key: str | None, pretty: bool) -> None:
    """Accept the current attempt's latest complete result (the user only)."""
    refuse_session("task accept")
    write("task.accept", idempotency_key, pretty, task=task_id)


@task.command("close")
@task_arg
@idempotency_option
@pretty_option
def close(task_id: str, idempotency_key: str | None, pretty: bool) -> None:
    """Close TASK."""
    write("task.close", idempotency_key, pretty, task=task_id, session=acting_session())


@task.command("reopen")
@task_arg
@idempotency_option
@pretty_option
def reopen(task_id: str, idempotency_key: str | None, pretty: bool) -> None:
    """Reopen a closed TASK."""
    write("task.reopen", idempotency_key, pretty, task=task_id, session=acting_session())
