"""Shared CLI plumbing: one request function, one way to print envelopes, exit statuses.

Exit statuses (DESIGN "Result shapes"): 0 ok; 1 the runtime answered an error envelope; 2 usage
error (click); 3 no runtime reachable (a `runtime_unavailable` envelope is still printed).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, NoReturn

import click

from pebrel.client import DEFAULT_TIMEOUT_S, Client, RuntimeUnavailable, unavailable_envelope

if TYPE_CHECKING:
    from collections.abc import Callable

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 3

WINDOW_ENV = ["PEBREL_WINDOW_ID", "NEBULA_WINDOW_ID"]
#: Default timeout of `pane wait`, `agent wait` and a submission's `--wait` in the CLI: 10 minutes.
CLI_WAIT_TIMEOUT_MS = 600_000

pretty_option = click.option("--pretty", is_flag=True, help="Indent the JSON output.")
window_option = click.option(
    "--window",
    "window_id",
    type=click.IntRange(min=1),
    envvar=WINDOW_ENV,
    show_envvar=True,
    help="Window of the pane (default: the calling pane's window, PEBREL_WINDOW_ID).",
)
wait_timeout_option = click.option(
    "--timeout-ms", type=click.IntRange(min=0), help="Wait timeout (default 600000)."
)


def size_options(command: Any) -> Any:
    """--cols/--rows of a new tab or window (headless default 200x50)."""
    command = click.option("--rows", type=click.IntRange(1, 500), help="Tab height in cells.")(
        command
    )
    return click.option("--cols", type=click.IntRange(2, 1000), help="Tab width in cells.")(command)


def emit(envelope: dict[str, Any], pretty: bool) -> None:
    click.echo(json.dumps(envelope, indent=2 if pretty else None, ensure_ascii=False))


class Unreachable(Exception):
    def __init__(self, envelope: dict[str, Any]) -> None:
        super().__init__(envelope["error"]["message"])
        self.envelope = envelope


def request(
    method: str, params: dict[str, Any], timeout_s: float = DEFAULT_TIMEOUT_S
) -> dict[str, Any]:
    """Send one request; return its envelope; raise Unreachable when no runtime answers."""
    try:
        with Client(timeout_s=timeout_s) as client:
            return client.call(method, params)
    except (RuntimeUnavailable, OSError) as exc:
        raise Unreachable(unavailable_envelope(str(exc))) from exc


def finish(envelope: dict[str, Any], pretty: bool) -> NoReturn:
    emit(envelope, pretty)
    sys.exit(EXIT_OK if envelope.get("ok") else EXIT_ERROR)


def call(
    method: str,
    params: dict[str, Any],
    pretty: bool,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> NoReturn:
    """Request, print the envelope, exit with the matching status."""
    try:
        envelope = request(method, params, timeout_s)
    except Unreachable as exc:
        emit(exc.envelope, pretty)
        sys.exit(EXIT_UNAVAILABLE)
    finish(envelope, pretty)


def prune(**params: Any) -> dict[str, Any]:
    """Params without the options the user did not give."""
    return {k: v for k, v in params.items() if v is not None}


def wait_timeout_s(timeout_ms: int | None, default_ms: int) -> float:
    return (timeout_ms if timeout_ms is not None else default_ms) / 1000 + 10


def wait_baseline(seq: int, state: str) -> int | None:
    """The after_seq for a wait that follows a submission (R5.5).

    The submission's synchronous running edge is the returned seq itself: a wait for `running`
    counts it (after_seq one lower); any other target needs a later transition.
    """
    baseline = seq - 1 if state == "running" else seq
    return baseline if baseline >= 1 else None


def check_submit_wait(no_submit: bool, wait_state: str | None) -> None:
    """Refuse --no-submit with --wait: without a submission there is no turn to wait for."""
    if no_submit and wait_state is not None:
        raise click.UsageError("--no-submit and --wait contradict each other")


def submit_then_wait(
    method: str,
    params: dict[str, Any],
    state: str | None,
    timeout_ms: int | None,
    pretty: bool,
    wait_method: str,
    wait_target: Callable[[dict[str, Any]], dict[str, Any]],
) -> NoReturn:
    """A submission, then (with a state) `wait_method` from its post-submit seq (R5.5).

    `wait_target` picks the waited-on target (pane or agent generation) out of the submission's
    result. The wait runs CLI_WAIT_TIMEOUT_MS unless `timeout_ms`; its envelope is printed with
    `submitted: true`.
    """
    try:
        sent = request(method, params)
        if state is None or not sent.get("ok"):
            finish(sent, pretty)
        result = sent["result"]
        wait_ms = timeout_ms if timeout_ms is not None else CLI_WAIT_TIMEOUT_MS
        wait_params = {
            **wait_target(result),
            "state": state,
            "after_seq": wait_baseline(result["state_change_seq"], state),
            "timeout_ms": wait_ms,
        }
        if wait_params["after_seq"] is None:
            del wait_params["after_seq"]
        waited = request(wait_method, wait_params, wait_timeout_s(wait_ms, CLI_WAIT_TIMEOUT_MS))
    except Unreachable as exc:
        emit(exc.envelope, pretty)
        sys.exit(EXIT_UNAVAILABLE)
    if waited.get("ok"):
        waited["result"]["submitted"] = True
    finish(waited, pretty)


def prompt_then_wait(
    params: dict[str, Any],
    state: str | None,
    timeout_ms: int | None,
    pretty: bool,
    method: str = "pane.prompt",
) -> NoReturn:
    """pane.prompt or pane.paste, then (if asked) pane.wait on that pane (R5.5)."""

    def pane_of(result: dict[str, Any]) -> dict[str, Any]:
        return prune(window_id=result["window_id"], pane_id=result["pane_id"])

    submit_then_wait(method, params, state, timeout_ms, pretty, "pane.wait", pane_of)
