"""`pebrel hook EVENT --kind KIND ...`: an AI CLI's hook reports a lifecycle edge (DESIGN "Agents").

The contract: it always exits 0, silently and fast, whatever it is given and wherever it runs
(outside a pane, with no runtime, with garbage input), so a hook can never break the agent that
runs it. It never waits on a terminal stdin: stdin is read only when it is not a TTY, for at most
half a second and at most a few MiB. A JSON object on stdin (Claude Code hooks) or as the last
argument (Codex `notify`) is merged in: `session_id` (`session-id`, `thread-id`) and the final
message (`last_assistant_message`, `last-assistant-message`, `message`).

Arguments are parsed by hand, not by click options, so no input can turn into a usage error.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from typing import Any

import click

EVENTS = ("start", "prompt", "stop", "attention", "waiting-input", "end")
KINDS = ("claude", "codex", "opencode", "cursor", "pi", "omp", "kimi")
#: How long the hook may wait for stdin, and how much of it is read.
STDIN_DEADLINE_S = 0.5
STDIN_CAP_BYTES = 8 * 1024 * 1024
#: Client deadline of the one agent.hook request.
HOOK_TIMEOUT_S = 2.0
#: The final message is cut to this many UTF-8 bytes (the schema's limit is 1 MiB).
MESSAGE_CAP_BYTES = 1024 * 1024
#: Request lines are at most 4 MiB; leave room for the envelope around the message.
REQUEST_CAP_BYTES = 4 * 1024 * 1024 - 4096
SESSION_ID_CAP = 256
SESSION_KEYS = ("session_id", "session-id", "sessionId", "thread-id", "thread_id")
MESSAGE_KEYS = ("last_assistant_message", "last-assistant-message", "message")
PANE_ENV = (("PEBREL_WINDOW_ID", "PEBREL_PANE_ID"), ("NEBULA_WINDOW_ID", "NEBULA_PANE_ID"))


class HookArgs:
    """What the command line says (every field may be missing)."""

    def __init__(self) -> None:
        self.event: str | None = None
        self.kind: str | None = None
        self.session_id: str | None = None
        self.message: str | None = None
        self.positionals: list[str] = []


def parse_args(args: list[str]) -> HookArgs:
    """EVENT, --kind, --session-id, --message (also as --opt=value); unknown options ignored."""
    parsed = HookArgs()
    valued = {"--kind": "kind", "--session-id": "session_id", "--message": "message"}
    i = 0
    while i < len(args):
        arg = args[i]
        name, sep, inline = arg.partition("=")
        if name in valued:
            value = inline if sep else (args[i + 1] if i + 1 < len(args) else None)
            i += 1 if sep else 2
            if value is not None:
                setattr(parsed, valued[name], value)
            continue
        if arg == "--":
            parsed.positionals.extend(args[i + 1 :])
            break
        if not arg.startswith("--"):
            parsed.positionals.append(arg)
        i += 1
    if parsed.positionals:
        parsed.event = parsed.positionals[0]
    return parsed


def read_stdin() -> bytes:
    """Whatever a non-TTY stdin holds within the deadline and the cap; never blocks for long."""
    import select

    try:
        if sys.stdin is None or sys.stdin.isatty():
            return b""
        fd = sys.stdin.fileno()
    except (OSError, ValueError, AttributeError):
        return b""
    chunks: list[bytes] = []
    total = 0
    deadline = time.monotonic() + STDIN_DEADLINE_S
    while total <= STDIN_CAP_BYTES:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def json_object(raw: bytes | str) -> dict[str, Any]:
    """The JSON object `raw` holds, or {} for anything else."""
    try:
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        text = text.strip()
        if not text.startswith("{"):
            return {}
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return obj if isinstance(obj, dict) else {}


def first_string(payload: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = payload.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def cut_utf8(text: str, cap_bytes: int) -> str:
    data = text.encode("utf-8", "replace")
    if len(data) <= cap_bytes:
        return text
    return data[:cap_bytes].decode("utf-8", "ignore")


def pane_from_env() -> tuple[int, int] | None:
    for window_key, pane_key in PANE_ENV:
        window, pane = os.environ.get(window_key), os.environ.get(pane_key)
        if window and pane:
            try:
                window_id, pane_id = int(window), int(pane)
            except ValueError:
                continue
            if window_id >= 1 and pane_id >= 1:
                return window_id, pane_id
    return None


def build_params(args: list[str], stdin: bytes) -> dict[str, Any] | None:
    """The agent.hook params, or None when there is nothing valid to report."""
    parsed = parse_args(args)
    if parsed.event not in EVENTS or parsed.kind not in KINDS:
        return None
    pane = pane_from_env()
    if pane is None:
        return None
    payload = json_object(stdin)
    if len(parsed.positionals) > 1:
        payload.update(json_object(parsed.positionals[-1]))
    session_id = parsed.session_id or first_string(payload, SESSION_KEYS)
    message = parsed.message if parsed.message is not None else first_string(payload, MESSAGE_KEYS)
    params: dict[str, Any] = {
        "window_id": pane[0],
        "pane_id": pane[1],
        "event": parsed.event,
        "kind": parsed.kind,
    }
    if session_id:
        params["session_id"] = session_id[:SESSION_ID_CAP]
    if message is not None:
        message = cut_utf8(message, MESSAGE_CAP_BYTES)
        # JSON escapes (control characters) can grow a message up to six times: stay in a line.
        while message and len(json.dumps(message, ensure_ascii=False)) > REQUEST_CAP_BYTES:
            message = message[: len(message) // 2]
        params["message"] = message
    return params


def send(params: dict[str, Any]) -> None:
    from pebrel.client import Client

    with Client(timeout_s=HOOK_TIMEOUT_S) as client:
        client.call("agent.hook", params, timeout_s=HOOK_TIMEOUT_S)


def run_hook(args: list[str]) -> None:
    parsed = parse_args(args)
    if parsed.event not in EVENTS or parsed.kind not in KINDS or pane_from_env() is None:
        return  # nothing to report: do not even look at stdin
    params = build_params(args, read_stdin())
    if params is not None:
        send(params)


@click.command(
    "hook",
    add_help_option=False,
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def hook(args: tuple[str, ...]) -> None:
    """EVENT --kind KIND [--session-id ID] [--message TEXT] [PAYLOAD]: report an agent's edge.

    EVENT: start, prompt, stop, attention, waiting-input, end. Always exits 0, silently.
    """
    # The contract: a hook never fails its agent, whatever goes wrong here.
    with contextlib.suppress(BaseException):
        run_hook(list(args))
    sys.exit(0)
