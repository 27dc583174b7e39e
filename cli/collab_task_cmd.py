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


def provenance_options(command: CommandFunc) -> CommandFunc:
    """Where a write comes from outside Pebrel (I3.3): `--external-actor JSON`,
    `--external-message-id ID` and `--metadata JSON`; all of it at most 16 KiB."""
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
    return click.option("--metadata", help="A JSON object kept with it.")(command)


def provenance(
    external_actor: str | None, external_message_id: str | None, metadata: str | None
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
@provenance_options
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
@provenance_options
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


#: What decorates a verb's function (an option, an argument).
Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def stacked(*decorators: Decorator) -> Decorator:
    """The decorators as one, applied as if written one above the other."""

    def add(command: Callable[..., Any]) -> Callable[..., Any]:
        for decorate in reversed(decorators):
            command = decorate(command)
        return command

    return add


def text_verb(
    name: str,
    method: str,
    help_text: str,
    *options: Decorator,
    fields: tuple[str, ...] = (),
    with_provenance: bool = False,
) -> None:
    """A verb that sends TASK, the ``fields`` its ``options`` give (in that order) and a
    text, as the `pebrel collab --session` session; ``with_provenance``: where it comes from
    outside Pebrel too (`provenance_options`)."""

    @task.command(name, help=help_text)
    @task_arg
    @stacked(*options)
    @content_options(required=True)
    @stacked(*[provenance_options] if with_provenance else [])
    @idempotency_option
    @pretty_option
    def command(
        task_id: str,
        content: str | None,
        content_file: str | None,
        idempotency_key: str | None,
        pretty: bool,
        **given: Any,
    ) -> None:
        write(
            method,
            idempotency_key,
            pretty,
            task=task_id,
            **{field: given[field] for field in fields},
            content=read_content(content, content_file, required=True),
            **(
                provenance(given["external_actor"], given["external_message_id"], given["metadata"])
                if with_provenance
                else {}
            ),
            session=acting_session(),
        )


text_verb(
    "comment",
    "task.comment",
    "Ask the current assignee about TASK; the delivered text ends with the respond command.",
    with_provenance=True,
)
text_verb(
    "question",
    "task.question",
    "As TASK's assignee, ask a question the user answers once (a decision).",
)
text_verb(
    "submit-plan", "task.submit_plan", "As TASK's assignee, submit a plan for the user to approve."
)
text_verb(
    "revise",
    "task.revise",
    "Change TASK's requirements: it reopens and its accepted result loses acceptance.",
    revision_option,
    fields=("revision",),
    with_provenance=True,
)
text_verb(
    "answer",
    "task.answer",
    "Answer an open question of TASK's current attempt; the answer goes to the assignee.",
    click.option("--decision", required=True, help="The question's decision id (dec_...)."),
    fields=("decision",),
    with_provenance=True,
)
text_verb(
    "respond",
    "task.respond",
    "As the attempt's assignee, answer a comment on TASK (changes no status).",
    click.option("--attempt", required=True, help="The attempt the comment was made on (att_...)."),
    click.option("--to-event", "to_event", required=True, help="The comment's event id (evt_...)."),
    fields=("attempt", "to_event"),
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
