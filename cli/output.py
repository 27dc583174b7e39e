"""Shared CLI plumbing: one request function, one way to print envelopes, exit statuses.

Exit statuses (DESIGN "Result shapes"): 0 ok; 1 the runtime answered an error envelope; 2 usage
error (click); 3 no runtime reachable (a `runtime_unavailable` envelope is still printed); 4 the
runtime took the request but did not answer within the CLI's deadline (a `client_timeout`
envelope is printed; the request may still be carried out).
`--exit-code` of `pane exec` exits with the child's status instead, or one of its own below.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, NoReturn

import click

from pebrel.client import (
    Client,
    ClientTimeout,
    RuntimeUnavailable,
    timeout_envelope,
    unavailable_envelope,
)

if TYPE_CHECKING:
    from pebrel.cli.params import Request, WaitAfter

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 3
EXIT_CLIENT_TIMEOUT = 4
#: `--exit-code` statuses of our own (DESIGN "Result shapes"): like timeout(1) and env(1).
EXIT_EXEC_TIMED_OUT = 124
EXIT_EXEC_FAILED = 125


def emit(envelope: dict[str, Any], pretty: bool) -> None:
    click.echo(json.dumps(envelope, indent=2 if pretty else None, ensure_ascii=False))


class Unreachable(Exception):
    """No answer: no runtime reachable (exit 3), or none in time (exit 4); `envelope` says so."""

    def __init__(self, envelope: dict[str, Any], status: int = EXIT_UNAVAILABLE) -> None:
        super().__init__(envelope["error"]["message"])
        self.envelope = envelope
        self.status = status


def request(req: Request) -> dict[str, Any]:
    """Send one request; return its envelope; raise Unreachable when no runtime answers."""
    try:
        with Client(timeout_s=req.timeout_s) as client:
            return client.call(req.method, req.params)
    except ClientTimeout as exc:
        raise Unreachable(timeout_envelope(exc), EXIT_CLIENT_TIMEOUT) from exc
    except (RuntimeUnavailable, OSError) as exc:
        raise Unreachable(unavailable_envelope(str(exc))) from exc


def finish(envelope: dict[str, Any], pretty: bool) -> NoReturn:
    emit(envelope, pretty)
    sys.exit(EXIT_OK if envelope.get("ok") else EXIT_ERROR)


def call(req: Request, pretty: bool) -> NoReturn:
    """Request, print the envelope, exit with the matching status."""
    try:
        envelope = request(req)
    except Unreachable as exc:
        emit(exc.envelope, pretty)
        sys.exit(exc.status)
    finish(envelope, pretty)


def wait_baseline(seq: int, state: str) -> int | None:
    """The after_seq for a wait that follows a submission (R5.5).

    The submission's synchronous running edge is the returned seq itself: a wait for `running`
    counts it (after_seq one lower); any other target needs a later transition.
    """
    baseline = seq - 1 if state == "running" else seq
    return baseline if baseline >= 1 else None


def submit_then_wait(
    submission: Request,
    state: str | None,
    timeout_ms: int | None,
    pretty: bool,
    wait_after: WaitAfter,
) -> NoReturn:
    """A submission, then (with a state) the wait `wait_after` builds from its result (R5.5).

    The wait names the submission's target (pane or agent generation) and counts from the
    post-submit baseline; its envelope is printed with `submitted: true, written: true`.
    """
    try:
        sent = request(submission)
        if state is None or not sent.get("ok"):
            finish(sent, pretty)
        result = sent["result"]
        after_seq = wait_baseline(result["state_change_seq"], state)
        waited = request(wait_after(submission, result, state, after_seq, timeout_ms))
    except Unreachable as exc:
        emit(exc.envelope, pretty)
        sys.exit(exc.status)
    if waited.get("ok"):
        waited["result"].update(submitted=True, written=True)
    finish(waited, pretty)


def exec_exit_status(envelope: dict[str, Any]) -> int:
    """The CLI status for `--exit-code`: the child's own, or 124/128+N/125."""
    if not envelope.get("ok"):
        return EXIT_EXEC_FAILED
    result = envelope["result"]
    if result.get("timed_out"):
        return EXIT_EXEC_TIMED_OUT
    if result.get("signal") is not None:
        return 128 + int(result["signal"])
    code = result.get("exit_code")
    return int(code) if code is not None else EXIT_EXEC_FAILED


def exec_call(req: Request, exit_code: bool, pretty: bool) -> NoReturn:
    """pane.exec: print the envelope; exit 0/1/3/4, or with the child's status (`exit_code`)."""
    try:
        envelope = request(req)
    except Unreachable as exc:
        emit(exc.envelope, pretty)
        sys.exit(EXIT_EXEC_FAILED if exit_code else exc.status)
    if not exit_code:
        finish(envelope, pretty)
    emit(envelope, pretty)
    sys.exit(exec_exit_status(envelope))


def refuse_remote_paste(window_id: int | None, pane_id: int, source: str, pretty: bool) -> None:
    """Refuse to forward a local file or stdin into an SSH pane (R11.1): the remote host would
    get this machine's content. Text given on the command line is the caller's own choice."""
    from pebrel.cli import params
    from pebrel.envelope import error_response
    from pebrel.errors import ErrorCode, PebrelError

    try:
        snapshot = request(params.runtime_snapshot())
    except Unreachable as exc:
        emit(exc.envelope, pretty)
        sys.exit(exc.status)
    for window in snapshot.get("result", {}).get("windows", []):
        for tab in window["tabs"]:
            for pane in tab["panes"]:
                if pane["pane_id"] != pane_id or pane.get("remote") is not True:
                    continue
                if window_id is not None and window["window_id"] != window_id:
                    continue
                error = PebrelError(
                    ErrorCode.INVALID_PARAMS,
                    f"pane {pane_id} is an SSH pane: local content from {source} is not "
                    "forwarded to a remote host; pass the text itself",
                    {
                        "window_id": window["window_id"],
                        "pane_id": pane_id,
                        "remote": True,
                        "field": source,
                        "written": False,
                    },
                )
                finish(error_response(None, error), pretty)


def refuse_remote_agent_paste(agent: str, source: str, pretty: bool) -> None:
    """`refuse_remote_paste` for the pane an agent runs in (an agent in an SSH pane)."""
    from pebrel.cli import agent_params

    try:
        found = request(agent_params.agent_get(agent=agent))
    except Unreachable as exc:
        emit(exc.envelope, pretty)
        sys.exit(exc.status)
    result = found.get("result") or {}
    if found.get("ok") and isinstance(result.get("pane_id"), int):
        refuse_remote_paste(result.get("window_id"), result["pane_id"], source, pretty)
