"""pane.prompt, pane.read, pane.wait and pane.run (R4.1, R4.4, R5.3-R5.4, R6.2)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from pebrel import messages as m
from pebrel.envelope import EncodedResult, dump_value
from pebrel.errors import ErrorCode, PebrelError
from pebrel.method_params import (
    AgentReadParams,
    PanePromptParams,
    PaneReadParams,
    PaneRunParams,
    PaneWaitParams,
)
from pebrel.model import (
    READ_DEFAULT_LINES,
    RUN_DEFAULT_TIMEOUT_MS,
    WAIT_DEFAULT_TIMEOUT_MS,
)
from pebrel.router.handlers import Method, Result
from pebrel.router.handlers.input_common import (
    checked_line,
    not_sent,
    pane_ids,
    require_live,
    require_unlocked,
    submit_at_prompt,
    submit_line,
    submitted_result,
)
from pebrel.router.handlers.kept_reads import kept_read
from pebrel.router.handlers.screen_read import grid_result
from pebrel.router.runtime import Runtime
from pebrel.router.state import KeptRead, Pane

#: How long pane.run waits for a just-started shell's first prompt, and for its command start.
FIRST_PROMPT_TIMEOUT_S = 10.0
RUN_START_TIMEOUT_S = 5.0
#: The details of a pane.run error once its line (with Enter) was typed.
SENT = {"submitted": True, "written": True}


async def prompt_pane(rt: Runtime, pane: Pane, text: str, submit: bool = True) -> Result:
    """Type one line of plain text and, with ``submit``, Enter as a separate write (R4.1)."""
    data = checked_line(text)
    require_live(pane, not_sent())
    require_unlocked(pane, not_sent())
    sent = await submit_line(rt, pane, data, submit)
    return submitted_result(rt, pane, sent)


async def prompt(rt: Runtime, params: PanePromptParams) -> Result:
    pane = rt.state.pane(params.get("window_id"), params["pane_id"])
    return await prompt_pane(rt, pane, params["text"], params.get("submit", True))


def read_json(pane: Pane, lines: int, kept: KeptRead) -> bytes:
    """pane.read's result JSON from a kept answer: the screen part is encoded once per kept
    answer (a 24x80 screen is most of the line), the pane's state part every time."""
    if kept.head is None:
        kept.head = dump_value(_screen_part(pane, lines, kept.reply, kept.captured_at))[
            :-1
        ]  # without its "}"
    return kept.head + b"," + dump_value(_state_part(pane))[1:]


def _screen_part(pane: Pane, lines: int, reply: m.ScreenRead, captured_at: float) -> Result:
    """What a read answer says about the screen: unchanged until the screen changes."""
    return {
        **pane_ids(pane),
        "text": "\n".join(reply.lines),
        "lines": reply.lines,
        "requested_lines": lines,
        "returned_lines": len(reply.lines),
        "history_available": reply.history_available,
        "truncated": reply.truncated,
        "screen_captured_at": round(captured_at, 6),
    }


def _state_part(pane: Pane) -> Result:
    """What a read answer says about the pane's state: built for every answer."""
    return {
        "task_state": pane.tracker.state,
        "state_change_seq": pane.tracker.seq,
        "exited": pane.exited,
        "exit_reason": pane.exit_reason,
    }


async def read_result(rt: Runtime, pane: Pane, params: PaneReadParams | AgentReadParams) -> Result:
    """pane.read's result as a dict (agent.read adds the agent's identity to it)."""
    if _screen_read(params):
        return await grid_result(rt, pane, _state_part(pane))
    lines = params.get("lines", READ_DEFAULT_LINES)
    kept = await kept_read(rt, pane, lines)
    return {**_screen_part(pane, lines, kept.reply, kept.captured_at), **_state_part(pane)}


def _screen_read(params: PaneReadParams | AgentReadParams) -> bool:
    """Whether a read asks for the visible grid (``screen``), which takes no ``lines``."""
    if not params.get("screen", False):
        return False
    if "lines" in params:
        raise PebrelError(
            ErrorCode.INVALID_PARAMS,
            "lines cannot be combined with screen (a screen read answers every row)",
            {"field": "lines"},
        )
    return True


async def read(rt: Runtime, params: PaneReadParams) -> EncodedResult:
    """pane.read, encoded (see read_json; a screen read is never reused)."""
    pane = rt.state.pane(params.get("window_id"), params["pane_id"])
    if _screen_read(params):
        return EncodedResult(dump_value(await grid_result(rt, pane, _state_part(pane))))
    lines = params.get("lines", READ_DEFAULT_LINES)
    kept = await kept_read(rt, pane, lines)
    return EncodedResult(
        read_json(pane, lines, kept),
        reusable=pane.reads.get(lines) is kept,  # good until the screen or the state changes
        read_of=(pane.window_id, pane.pane_id, lines),
    )


def _still_there(rt: Runtime, pane: Pane, extra: dict[str, Any]) -> None:
    if rt.state.panes.get(pane.key) is not pane:
        raise _closed(pane, extra)


def _closed(pane: Pane, extra: dict[str, Any]) -> PebrelError:
    return PebrelError(
        ErrorCode.TARGET_NOT_FOUND, f"pane {pane.pane_id} was closed", {**pane_ids(pane), **extra}
    )


def check_baseline(pane: Pane, after_seq: int | None, extra: dict[str, Any] | None = None) -> None:
    """Refuse a wait baseline ahead of the pane's seq (one from another runtime, a typo): no
    transition could ever count, so the wait would only run out its timeout (R5.3)."""
    if after_seq is not None and after_seq > pane.tracker.seq:
        raise PebrelError(
            ErrorCode.INVALID_PARAMS,
            f"after_seq {after_seq} is ahead of pane {pane.pane_id}'s state_change_seq "
            f"{pane.tracker.seq}",
            {
                **(extra or {}),
                **pane_ids(pane),
                "field": "after_seq",
                "after_seq": after_seq,
                "state_change_seq": pane.tracker.seq,
            },
        )


async def wait(rt: Runtime, params: PaneWaitParams) -> Result:
    pane = rt.state.pane(params.get("window_id"), params["pane_id"])
    target = params["state"]
    after_seq: int | None = params.get("after_seq")
    check_baseline(pane, after_seq)
    timeout_s = params.get("timeout_ms", WAIT_DEFAULT_TIMEOUT_MS) / 1000
    deadline = time.monotonic() + timeout_s
    while True:
        _still_there(rt, pane, {})
        found = pane.tracker.observation(target, after_seq)
        if found is not None:
            seq, state = found
            return {"state": state, "state_change_seq": seq, **pane_ids(pane)}
        details = {
            **pane_ids(pane),
            "state": target,
            "after_seq": after_seq,
            "observed_state": pane.tracker.state,
            "observed_state_change_seq": pane.tracker.seq,
        }
        if pane.exited:
            raise PebrelError(
                ErrorCode.INVALID_STATE,
                f"pane {pane.pane_id} has exited; it will not reach {target}",
                {**details, "exited": True, "exit_reason": pane.exit_reason},
            )
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise PebrelError(
                ErrorCode.TIMEOUT, f"pane {pane.pane_id} did not reach {target} in time", details
            )
        await rt.next_change(pane, remaining)


async def ssh_settled(rt: Runtime, pane: Pane, limit: float) -> None:
    """Until an SSH pane's connection is ready or failed, or ``limit`` (time.monotonic())."""
    while (
        pane.ssh is not None
        and pane.ssh["phase"] not in ("ready", "failed")
        and (left := limit - time.monotonic()) > 0
    ):
        await rt.next_change(pane, left)


def _not_at_prompt(pane: Pane) -> PebrelError:
    state = pane.tracker.state
    return PebrelError(
        ErrorCode.INVALID_STATE,
        f"pane {pane.pane_id} is not at a shell prompt ({state})",
        {**pane_ids(pane), "task_state": state, **not_sent()},
    )


async def run_command(
    rt: Runtime,
    pane: Pane,
    command: str,
    wait: bool = True,
    timeout_ms: int = RUN_DEFAULT_TIMEOUT_MS,
) -> Result:
    """Type ``command`` at the shell prompt; with ``wait``, return its exit code (R6.2)."""
    data = checked_line(command, "command")
    timeout_s = timeout_ms / 1000
    unsent = not_sent()
    start = time.monotonic()
    # An SSH pane still connecting is waited for, as a local pane's first prompt is.
    await ssh_settled(rt, pane, start + min(timeout_s, FIRST_PROMPT_TIMEOUT_S))
    require_live(pane, unsent)
    if not pane.integrated:
        raise PebrelError(
            ErrorCode.EXIT_CODE_UNAVAILABLE,
            f"pane {pane.pane_id} runs a shell without OSC 133 integration; use pane.prompt",
            {**pane_ids(pane), **unsent},
        )
    tracker = pane.tracker
    require_unlocked(pane, unsent)
    if tracker.command_active:
        raise _not_at_prompt(pane)
    # The pane's worker types the line once the shell is at its prompt: at once if it is,
    # else (starting, between a command's end and its next prompt, still drawing its
    # prompt) when the prompt has been drawn.
    limit = start + min(timeout_s, FIRST_PROMPT_TIMEOUT_S)
    try:
        typed = await submit_at_prompt(rt, pane, data, limit)
    except PebrelError:
        if pane.closing:  # closed meanwhile: say so, not "its worker is gone"
            raise _closed(pane, unsent) from None
        _still_there(rt, pane, unsent)
        require_live(pane, unsent)
        raise
    _still_there(rt, pane, unsent if typed is None else SENT)
    if typed is None:
        require_live(pane, unsent)
        raise _not_at_prompt(pane)
    baseline, number = typed
    submitted_at = time.monotonic()
    rt.commit()
    if not wait:
        return {
            "status": "started",
            "exit_code": None,
            "duration_ms": None,
            "state_change_seq": baseline,
            **pane_ids(pane),
        }
    sent = {**pane_ids(pane), **SENT}
    while number not in tracker.results:
        _still_there(rt, pane, SENT)
        now = time.monotonic()
        if pane.exited:
            raise PebrelError(
                ErrorCode.RUN_ABORTED,
                f"pane {pane.pane_id} exited before the command finished",
                {**sent, "exit_reason": pane.exit_reason},
            )
        if tracker.commands_started > number:
            raise PebrelError(
                ErrorCode.RUN_ABORTED, "another command started before this one finished", sent
            )
        if tracker.commands_started < number and now - submitted_at > min(
            RUN_START_TIMEOUT_S, timeout_s
        ):
            raise PebrelError(
                ErrorCode.RUN_START_TIMEOUT, "the shell did not start the command", sent
            )
        if now - start > timeout_s:
            raise PebrelError(
                ErrorCode.TIMEOUT,
                "the command did not finish in time",
                {**sent, "state_change_seq": tracker.seq},
            )
        limit = min(start + timeout_s, submitted_at + RUN_START_TIMEOUT_S)
        if tracker.commands_started >= number:
            limit = start + timeout_s
        await rt.next_change(pane, max(limit - now, 0.001))
    exit_code = tracker.results[number]
    duration_ms = int((time.monotonic() - submitted_at) * 1000)
    if exit_code is None:
        raise PebrelError(
            ErrorCode.EXIT_CODE_UNAVAILABLE,
            "the command finished without reporting an exit code",
            {**sent, "duration_ms": duration_ms},
        )
    return {
        "status": "finished" if exit_code == 0 else "failed",
        "exit_code": exit_code,
        "duration_ms": duration_ms,
        "state_change_seq": tracker.seq,
        **pane_ids(pane),
    }


async def run(rt: Runtime, params: PaneRunParams) -> Result:
    pane = rt.state.pane(params.get("window_id"), params["pane_id"])
    return await run_command(
        rt,
        pane,
        params["command"],
        params.get("wait", True),
        params.get("timeout_ms", RUN_DEFAULT_TIMEOUT_MS),
    )


METHODS: Mapping[str, Method] = {
    "pane.prompt": prompt,
    "pane.read": read,
    "pane.wait": wait,
    "pane.run": run,
}
