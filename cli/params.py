"""One builder per protocol method the CLI sends: its params and its client deadline (R8.1-R8.3).

`pebrel ctl <verb>` and the resource verbs (`pebrel pane ...`, `tab`, `window`) call the same
builder, so a method's params are spelled once. A builder leaves out what the user did not give,
and the runtime applies its own default (`pebrel.model`); a waiting method's deadline is its
timeout plus WAIT_MARGIN_S. Agent methods are in `pebrel.cli.agent_params`.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any, NamedTuple

from pebrel.client import DEFAULT_TIMEOUT_S
from pebrel.model import (
    CLI_WAIT_TIMEOUT_MS,
    EXEC_DEFAULT_TIMEOUT_MS,
    ORCHESTRATE_DEFAULT_TIMEOUT_MS,
    RUN_DEFAULT_TIMEOUT_MS,
)

Params = dict[str, Any]
#: How much longer than a waiting method's own timeout the client waits for its answer.
WAIT_MARGIN_S = 10.0


class Request(NamedTuple):
    """One request of the CLI: method, params and how long the client waits for the answer."""

    method: str
    params: Params
    timeout_s: float = DEFAULT_TIMEOUT_S


#: Builds the wait that follows a submission from (submission, its result, state, after_seq,
#: timeout_ms); `pebrel.cli.output.submit_then_wait` sends it.
WaitAfter = Callable[[Request, Params, str, int | None, int | None], Request]


def prune(**params: Any) -> Params:
    """Params without the options the user did not give."""
    return {k: v for k, v in params.items() if v is not None}


def wait_timeout_s(timeout_ms: int | None, default_ms: int) -> float:
    """The client deadline of a method that waits `timeout_ms` (else `default_ms`)."""
    return (timeout_ms if timeout_ms is not None else default_ms) / 1000 + WAIT_MARGIN_S


# ---- runtime and events ------------------------------------------------------------------------


def runtime_describe() -> Request:
    return Request("runtime.describe", {})


def runtime_snapshot() -> Request:
    return Request("runtime.snapshot", {})


def runtime_orchestrate(workflow: Params, timeout_ms: int | None = None) -> Request:
    """The workflow object as params; `timeout_ms` overrides the workflow's own."""
    params = dict(workflow)
    if timeout_ms is not None:
        params["timeout_ms"] = timeout_ms
    given = params.get("timeout_ms")
    effective = given if isinstance(given, int) else ORCHESTRATE_DEFAULT_TIMEOUT_MS
    return Request(
        "runtime.orchestrate", params, wait_timeout_s(effective, ORCHESTRATE_DEFAULT_TIMEOUT_MS)
    )


def events_subscribe(
    *, since_revision: int | None = None, runtime_id: str | None = None, screens: bool = False
) -> Request:
    return Request(
        "events.subscribe",
        prune(since_revision=since_revision, runtime_id=runtime_id, screens=screens or None),
    )


# ---- windows and tabs --------------------------------------------------------------------------


def window_create(
    *,
    cwd: str | None = None,
    shell: str | None = None,
    cols: int | None = None,
    rows: int | None = None,
) -> Request:
    return Request("window.create", prune(cwd=cwd, shell=shell, cols=cols, rows=rows))


def window_focus(*, window_id: int | None, pane_id: int | None = None) -> Request:
    return Request("window.focus", prune(window_id=window_id, pane_id=pane_id))


def window_close(*, window_id: int, confirm: bool = False) -> Request:
    return Request("window.close", prune(window_id=window_id, confirm=confirm or None))


def tab_new(
    *,
    window_id: int | None,
    cwd: str | None = None,
    shell: str | None = None,
    cols: int | None = None,
    rows: int | None = None,
) -> Request:
    params = prune(window_id=window_id, cwd=cwd, shell=shell, cols=cols, rows=rows)
    return Request("tab.new", params)


def tab_close(*, window_id: int | None, tab_index: int, confirm: bool = False) -> Request:
    params = prune(window_id=window_id, tab_index=tab_index, confirm=confirm or None)
    return Request("tab.close", params)


def tab_rename(*, window_id: int | None, tab_index: int, name: str | None) -> Request:
    """A custom name, or None to clear it (sent as null)."""
    return Request("tab.rename", {**prune(window_id=window_id, tab_index=tab_index), "name": name})


def tab_move(*, window_id: int | None, tab_index: int, to_index: int) -> Request:
    params = prune(window_id=window_id, tab_index=tab_index, to_index=to_index)
    return Request("tab.move", params)


# ---- panes: layout -----------------------------------------------------------------------------


def pane_split(
    *,
    window_id: int | None,
    pane_id: int | None,
    direction: str,
    cwd: str | None = None,
    shell: str | None = None,
) -> Request:
    params = prune(window_id=window_id, pane_id=pane_id, direction=direction, cwd=cwd, shell=shell)
    return Request("pane.split", params)


def pane_close(*, window_id: int | None, pane_id: int, confirm: bool = False) -> Request:
    params = prune(window_id=window_id, pane_id=pane_id, confirm=confirm or None)
    return Request("pane.close", params)


def pane_zoom(*, window_id: int | None, pane_id: int, zoomed: bool) -> Request:
    return Request("pane.zoom", prune(window_id=window_id, pane_id=pane_id, zoomed=zoomed))


def pane_resize(*, window_id: int | None, pane_id: int, ratio: float) -> Request:
    return Request("pane.resize", prune(window_id=window_id, pane_id=pane_id, ratio=ratio))


# ---- panes: input, output, waiting -------------------------------------------------------------


def pane_read(
    *, window_id: int | None, pane_id: int, lines: int | None = None, screen: bool = False
) -> Request:
    params = prune(window_id=window_id, pane_id=pane_id, lines=lines, screen=screen or None)
    return Request("pane.read", params)


def pane_prompt(*, window_id: int | None, pane_id: int, text: str, submit: bool = True) -> Request:
    params = prune(window_id=window_id, pane_id=pane_id, text=text, submit=submit)
    return Request("pane.prompt", params)


def pane_paste(*, window_id: int | None, pane_id: int, text: str, submit: bool = True) -> Request:
    params = prune(window_id=window_id, pane_id=pane_id, text=text, submit=submit)
    return Request("pane.paste", params)


def pane_send_key(
    *,
    window_id: int | None,
    pane_id: int,
    key: str,
    control: bool = False,
    alt: bool = False,
    shift: bool = False,
    repeat: int | None = None,
) -> Request:
    """pane.send_key; only the modifiers that are held."""
    held = {"control": control, "alt": alt, "shift": shift}
    modifiers = {name: True for name, on in held.items() if on}
    params = prune(
        window_id=window_id, pane_id=pane_id, key=key, modifiers=modifiers or None, repeat=repeat
    )
    return Request("pane.send_key", params)


def pane_wait(
    *,
    window_id: int | None,
    pane_id: int,
    state: str,
    after_seq: int | None = None,
    timeout_ms: int | None = None,
) -> Request:
    """pane.wait; the CLI always sends a timeout, CLI_WAIT_TIMEOUT_MS unless one is given."""
    wait_ms = CLI_WAIT_TIMEOUT_MS if timeout_ms is None else timeout_ms
    params = prune(
        window_id=window_id,
        pane_id=pane_id,
        state=state,
        after_seq=after_seq,
        timeout_ms=wait_ms,
    )
    return Request("pane.wait", params, wait_timeout_s(wait_ms, CLI_WAIT_TIMEOUT_MS))


def pane_wait_any(
    *,
    targets: list[tuple[int | None, int]],
    state: str,
    timeout_ms: int | None = None,
) -> Request:
    """pane.wait_any over (window_id, pane_id) targets, each counting from its current state
    (no after_seq: a target already in the state answers at once)."""
    wait_ms = CLI_WAIT_TIMEOUT_MS if timeout_ms is None else timeout_ms
    listed = [prune(window_id=window_id, pane_id=pane_id) for window_id, pane_id in targets]
    params = prune(targets=listed, state=state, timeout_ms=wait_ms)
    return Request("pane.wait_any", params, wait_timeout_s(wait_ms, CLI_WAIT_TIMEOUT_MS))


def pane_wait_after(
    submission: Request, result: Params, state: str, after_seq: int | None, timeout_ms: int | None
) -> Request:
    """pane.wait on the pane that a pane.prompt or pane.paste went to (a WaitAfter)."""
    return pane_wait(
        window_id=result["window_id"],
        pane_id=result["pane_id"],
        state=state,
        after_seq=after_seq,
        timeout_ms=timeout_ms,
    )


def pane_run(
    *,
    window_id: int | None,
    pane_id: int,
    command: str,
    wait: bool = True,
    timeout_ms: int | None = None,
) -> Request:
    params = prune(
        window_id=window_id,
        pane_id=pane_id,
        command=command,
        wait=None if wait else False,
        timeout_ms=timeout_ms,
    )
    return Request("pane.run", params, wait_timeout_s(timeout_ms, RUN_DEFAULT_TIMEOUT_MS))


def pane_exec(
    *,
    window_id: int | None,
    pane_id: int,
    argv: tuple[str, ...] | list[str],
    timeout_ms: int | None = None,
    max_output_bytes: int | None = None,
) -> Request:
    params = prune(
        window_id=window_id,
        pane_id=pane_id,
        argv=list(argv),
        timeout_ms=timeout_ms,
        max_output_bytes=max_output_bytes,
    )
    return Request("pane.exec", params, wait_timeout_s(timeout_ms, EXEC_DEFAULT_TIMEOUT_MS))


def pane_procs(*, window_id: int | None, pane_id: int) -> Request:
    return Request("pane.procs", prune(window_id=window_id, pane_id=pane_id))


def pane_screen(*, window_id: int | None, pane_id: int) -> Request:
    return Request("pane.screen", prune(window_id=window_id, pane_id=pane_id))


def pane_user_input(*, window_id: int | None, pane_id: int, data: bytes) -> Request:
    """The local user's keystrokes (`pebrel attach`; refused to callers inside a pane)."""
    encoded = base64.b64encode(data).decode("ascii")
    return Request("pane.user_input", prune(window_id=window_id, pane_id=pane_id, data_b64=encoded))
