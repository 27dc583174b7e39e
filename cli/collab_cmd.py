"""`pebrel collab ...`: groups, sessions, tasks, messages and the journal (I1-I4, #16).

Each verb sends one `collab.*` method and prints its envelope (docs/collab.md has the model and
a full life cycle). The local user runs them as they are; an agent in a pane acts as the session
bound to its pane (`--session` names it explicitly, and is checked, not trusted). Task verbs are
in `pebrel.cli.collab_task_cmd`; the request plumbing in `pebrel.cli.collab_request`.
"""

from __future__ import annotations

import os
import sys

import click

import pebrel
from pebrel.cli import output
from pebrel.cli.collab_request import (
    REPORT_STATUSES,
    CollabState,
    acting_principal,
    acting_session,
    collab_request,
    content_options,
    evidence_value,
    idempotency_option,
    read,
    read_content,
    refuse_session,
    write,
)
from pebrel.cli.lazygroup import LazyGroup
from pebrel.cli.options import pretty_option

LAZY_COMMANDS = {"task": "pebrel.cli.collab_task_cmd:task"}


@click.group(cls=LazyGroup, lazy_commands=LAZY_COMMANDS)
@click.option(
    "--session",
    help="Act as this session (ses_...). Default: inside a pane, the session bound to that "
    "pane; elsewhere, the user. A pane may name only its own session.",
)
@click.option(
    "--principal",
    help="Act as this integration identity, over the integration socket; its token is read "
    "only from the credential file PEBREL_INTEGRATION_CREDENTIAL_FILE names "
    "(docs/integration.md). Writes then need --idempotency-key.",
)
@click.pass_context
def collab(ctx: click.Context, session: str | None, principal: str | None) -> None:
    """Groups, sessions and tasks shared with agents in panes (docs/collab.md)."""
    if session is not None and principal is not None:
        raise click.UsageError("give --session or --principal, not both")
    ctx.obj = CollabState(session=session, principal=principal)


@collab.command("capabilities")
@pretty_option
def capabilities(pretty: bool) -> None:
    """The collab service's version, protocol, features and who you act as; `cli_version` is
    this CLI's."""
    if acting_principal() is not None:
        read(collab_request("capabilities"), pretty)  # the principal path adds cli_version
    try:
        envelope = output.request(collab_request("capabilities"))
    except output.Unreachable as exc:
        output.emit(exc.envelope, pretty)
        sys.exit(exc.status)
    if envelope.get("ok") and isinstance(envelope.get("result"), dict):
        envelope["result"]["cli_version"] = pebrel.__version__
    output.finish(envelope, pretty)


# ---- groups --------------------------------------------------------------------------------


@collab.group("group")
def group() -> None:
    """Groups of sessions that share tasks (writes: the user only)."""


@group.command("create")
@click.argument("name")
@idempotency_option
@pretty_option
def group_create(name: str, idempotency_key: str | None, pretty: bool) -> None:
    """Create a group NAME (letters, digits, '.', '_', '-')."""
    refuse_session("group create")
    write("group.create", idempotency_key, pretty, name=name)


@group.command("list")
@pretty_option
def group_list(pretty: bool) -> None:
    """Every group."""
    read(collab_request("group.list"), pretty)


@group.command("show")
@click.argument("group_ref", metavar="GROUP")
@pretty_option
def group_show(group_ref: str, pretty: bool) -> None:
    """GROUP (id or name) with its sessions' records."""
    read(collab_request("group.show", group=group_ref), pretty)


@group.command("add")
@click.argument("group_ref", metavar="GROUP")
@click.argument("session")
@idempotency_option
@pretty_option
def group_add(group_ref: str, session: str, idempotency_key: str | None, pretty: bool) -> None:
    """Put SESSION into GROUP."""
    refuse_session("group add")
    write("group.add", idempotency_key, pretty, group=group_ref, session=session)


@group.command("remove")
@click.argument("group_ref", metavar="GROUP")
@click.argument("session")
@idempotency_option
@pretty_option
def group_remove(group_ref: str, session: str, idempotency_key: str | None, pretty: bool) -> None:
    """Take SESSION out of GROUP; its undelivered messages fail with a recorded reason."""
    refuse_session("group remove")
    write("group.remove", idempotency_key, pretty, group=group_ref, session=session)


# ---- sessions ------------------------------------------------------------------------------


@collab.group("session")
def session_group() -> None:
    """Sessions: named Pebrel agents registered for collaboration."""


@session_group.command("register")
@click.option("--agent", required=True, help="A running named agent (`pebrel agent start`).")
@click.option("--group", "group_ref", help="Put the new session into this group (id or name).")
@idempotency_option
@pretty_option
def session_register(
    agent: str, group_ref: str | None, idempotency_key: str | None, pretty: bool
) -> None:
    """Register a named agent as a session (the user only)."""
    refuse_session("session register")
    write("session.register", idempotency_key, pretty, agent=agent, group=group_ref)


@session_group.command("get")
@click.argument("session_id", metavar="SESSION")
@pretty_option
def session_get(session_id: str, pretty: bool) -> None:
    """SESSION's record: state, online, native session id, terminal binding."""
    read(collab_request("session.get", session=session_id), pretty)


@session_group.command("create")
@click.option("--launch-profile", "profile", required=True, help="A launch profile's id.")
@click.option(
    "--cwd",
    required=True,
    help="The directory to start in: it must exist inside one of the profile's cwdRoots.",
)
@click.option(
    "--group",
    "group_ref",
    help="The user only: the group whose integration identity holds the profile.",
)
@click.option(
    "--integration",
    help="The user only: that identity, when several of the group hold a profile of this id.",
)
@idempotency_option
@pretty_option
def session_create(
    profile: str,
    cwd: str,
    group_ref: str | None,
    integration: str | None,
    idempotency_key: str | None,
    pretty: bool,
) -> None:
    """Launch an agent session from a launch profile in a new window (I4.2)."""
    refuse_session("session create")
    write(
        "session.create",
        idempotency_key,
        pretty,
        launch_profile=profile,
        # Made absolute without collapsing `..` (the service resolves symbolic links first).
        cwd=cwd if os.path.isabs(cwd) else os.path.join(os.getcwd(), cwd),
        group=group_ref,
        integration=integration,
    )


@session_group.command("restore")
@click.argument("session_id", metavar="SESSION")
@idempotency_option
@pretty_option
def session_restore(session_id: str, idempotency_key: str | None, pretty: bool) -> None:
    """Resume exactly SESSION's native conversation (I4.3)."""
    refuse_session("session restore")
    write("session.restore", idempotency_key, pretty, session=session_id)


@session_group.command("list")
@click.option("--group", "group_ref", help="Only this group's sessions (id or name).")
@pretty_option
def session_list(group_ref: str | None, pretty: bool) -> None:
    """Every session, or one group's."""
    read(collab_request("session.list", group=group_ref), pretty)


# ---- messages, replies, events ------------------------------------------------------------


@collab.group("message")
def message() -> None:
    """Messages queued to sessions and their delivery receipts."""


@message.command("get")
@click.argument("message_id", metavar="MESSAGE")
@pretty_option
def message_get(message_id: str, pretty: bool) -> None:
    """MESSAGE with its receipt: stages (queued, writing, delivered, failed), retries, reason."""
    read(collab_request("message.get", message=message_id), pretty)


@collab.command("reply")
@click.argument("message_id", metavar="MESSAGE")
@content_options(required=True)
@click.option(
    "--status",
    type=click.Choice(REPORT_STATUSES),
    help="Report this status on the message's task (without it: a linked respond).",
)
@click.option("--evidence", help="With --status: JSON (object, array or string) backing it.")
@idempotency_option
@pretty_option
def reply(
    message_id: str,
    content: str | None,
    content_file: str | None,
    status: str | None,
    evidence: str | None,
    idempotency_key: str | None,
    pretty: bool,
) -> None:
    """Reply to a delivered MESSAGE: a respond to its consultation, or with --status a report."""
    if evidence is not None and status is None:
        raise click.UsageError("--evidence goes with --status (a report)")
    write(
        "reply",
        idempotency_key,
        pretty,
        message=message_id,
        content=read_content(content, content_file, required=True),
        status=status,
        evidence=evidence_value(evidence),
        session=acting_session(),
    )


@collab.group(
    "events",
    cls=LazyGroup,
    lazy_commands={
        "subscribe": "pebrel.cli.collab_events_cmd:subscribe",
        "ack": "pebrel.cli.collab_events_cmd:ack",
    },
)
def events() -> None:
    """A group's durable event journal; with --principal, its pushed stream and ACKs."""


@events.command("list")
@click.option("--group", "group_ref", required=True, help="The group (id or name).")
@click.option(
    "--after", type=click.IntRange(min=0), help="Only events after this sequence (default 0)."
)
@click.option("--limit", type=click.IntRange(1, 1000), help="At most N events (default 100).")
@pretty_option
def events_list(group_ref: str, after: int | None, limit: int | None, pretty: bool) -> None:
    """GROUP's events in sequence order, with the retention floor and the last sequence."""
    read(collab_request("events.list", group=group_ref, after=after, limit=limit), pretty)
