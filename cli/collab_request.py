"""How a `pebrel collab` verb builds, sends and prints its request (I1-I4, #16).

One builder for every `collab.*` method (`collab_request`): the params are what the user gave,
nothing else (the service applies its defaults). The acting session comes from the `collab`
group's `--session`; without it the CLI sends none and the service resolves the caller (inside a
pane: the session bound to that pane; elsewhere: the user). With `--principal ID` every verb
goes over the integration socket as that principal instead (pebrel.cli.collab_principal). Every
write carries an idempotency key: `--idempotency-key K`, or one the CLI makes up (uuid4 hex; a
principal must give its own). The printed envelope carries the key it was sent with
(`result.idempotency_key`, or `error.details.idempotency_key`), so a retry of a failed or
unanswered write can reuse it. Output and exit statuses are the other
verbs' (pebrel.cli.output): 0 ok, 1 an error envelope, 2 usage, 3 no runtime, 4 no answer.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

import click

from pebrel.cli import output
from pebrel.cli.options import CommandFunc, read_text_source
from pebrel.cli.params import Request, prune

#: What `task report` and `reply --status` may say (the schema's collab_report_status).
REPORT_STATUSES = ("ack", "working", "blocked", "complete", "failed")
#: A task's status (the schema's collab_task_status).
TASK_STATUSES = ("open", "accepted", "closed")
IDEMPOTENCY_KEY_MAX = 128


@dataclass(frozen=True, slots=True)
class CollabState:
    """What the `collab` group's own options say, for its subcommands."""

    session: str | None = None
    #: `--principal ID`: every verb goes over the integration socket as ID (#17).
    principal: str | None = None


def acting_session() -> str | None:
    """The `--session` given to `pebrel collab`, if any."""
    state = click.get_current_context().find_object(CollabState)
    return state.session if state else None


def acting_principal() -> str | None:
    """The `--principal` given to `pebrel collab`, if any."""
    state = click.get_current_context().find_object(CollabState)
    return state.principal if state else None


def refuse_session(verb: str) -> None:
    """A user-only verb (accept, approve-plan, group and session management) acts as nobody
    else: `--session` would ask for what it cannot do, so it is a usage error."""
    if acting_session() is not None:
        raise click.UsageError(f"`{verb}` is the user's own verb: it takes no --session")


def collab_request(method: str, **params: Any) -> Request:
    """`collab.<method>` with the params that were given."""
    return Request(f"collab.{method}", prune(**params))


def new_idempotency_key() -> str:
    import uuid

    return uuid.uuid4().hex


def check_key(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A given key must be what the schema takes: 1-128 printable ASCII characters, no space."""
    if value is not None and not (
        0 < len(value) <= IDEMPOTENCY_KEY_MAX and all("!" <= ch <= "~" for ch in value)
    ):
        raise click.BadParameter("1-128 printable ASCII characters without spaces")
    return value


idempotency_option = click.option(
    "--idempotency-key",
    "idempotency_key",
    callback=check_key,
    help="Reuse this key to retry the same write safely (default: a new one, printed back;"
    " required with --principal).",
)


def stamp(envelope: dict[str, Any], key: str) -> dict[str, Any]:
    """The envelope with the idempotency key the write was sent with."""
    if envelope.get("ok") and isinstance(envelope.get("result"), dict):
        envelope["result"].setdefault("idempotency_key", key)
    elif isinstance(envelope.get("error"), dict):
        details = envelope["error"].setdefault("details", {})
        if isinstance(details, dict):
            details.setdefault("idempotency_key", key)
    return envelope


def read(req: Request, pretty: bool) -> NoReturn:
    """A read: print its envelope (as a principal: its answer line) and exit with the usual
    status."""
    principal = acting_principal()
    if principal is not None:
        from pebrel.cli import collab_principal

        collab_principal.call(principal, req, pretty)
    output.call(req, pretty)


def write(method: str, key: str | None, pretty: bool, **params: Any) -> NoReturn:
    """A write with its idempotency key (given or new), printed back with the envelope. A
    principal's write needs its own key (I3.1): it is how the principal retries safely."""
    principal = acting_principal()
    if principal is not None:
        if key is None:
            raise click.UsageError("a write as a principal needs --idempotency-key KEY")
        read(collab_request(method, **params, idempotency_key=key), pretty)
    used = key or new_idempotency_key()
    req = collab_request(method, **params, idempotency_key=used)
    try:
        envelope = output.request(req)
    except output.Unreachable as exc:
        output.emit(stamp(exc.envelope, used), pretty)
        sys.exit(exc.status)
    output.finish(stamp(envelope, used), pretty)


# ---- text and JSON given on the command line -----------------------------------------------


def content_options(required: bool) -> Callable[[CommandFunc], CommandFunc]:
    """``--content TEXT`` (``-``: read stdin) or ``--content-file FILE`` (``-``: stdin)."""
    del required  # read_content enforces it; the help reads the same either way

    def add(command: CommandFunc) -> CommandFunc:
        command = click.option(
            "--content-file",
            type=click.Path(dir_okay=False, allow_dash=True),
            help="Read the text from FILE (- for stdin).",
        )(command)
        return click.option("--content", help="The text (- reads stdin).")(command)

    return add


def read_content(content: str | None, content_file: str | None, required: bool) -> str | None:
    """The text from exactly one of --content and --content-file (the CLI reads files)."""
    if content is not None and content_file is not None:
        raise click.UsageError("give --content or --content-file, not both")
    source = content_file if content_file is not None else ("-" if content == "-" else None)
    if source is None:
        if content is None and required:
            raise click.UsageError("give --content TEXT, --content - (stdin) or --content-file")
        return content
    return read_text_source(source)


def json_value(option: str, text: str | None, kinds: tuple[type, ...]) -> Any:
    """The JSON an option holds, which must be one of ``kinds`` (dict, list, str)."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise click.UsageError(f"{option} is not valid JSON: {exc}") from exc
    if not isinstance(value, kinds):
        words: dict[type, str] = {dict: "object", list: "array", str: "string"}
        names = [words[kind] for kind in kinds]
        wanted = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
        raise click.UsageError(f"{option} must be a JSON {wanted}")
    return value


def metadata_value(text: str | None) -> Any:
    return json_value("--metadata", text, (dict,))


def evidence_value(text: str | None) -> Any:
    return json_value("--evidence", text, (dict, list, str))
