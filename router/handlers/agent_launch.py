"""agent.launch: start a named agent from a given command line in a shell of its own (I4.2, #18).

The collab service launches and restores sessions from an administrator's launch profiles
with it (collab/session_launch.py); it is a runtime method like any other, and gives a caller
nothing `pane.send` would not. Unlike agent.start it types the argv it is given (the
profile's executable and arguments, quoted one by one), never a built-in start command, and
it answers once the line is typed: whether the agent comes up is for the caller to watch.

- Without `pane_id` it opens a new window with one pane in `cwd`; with one it reuses that
  pane, which must be the only pane of its window and (with `shell_pid`) still run the same
  shell: it empties the prompt's line (Ctrl-E Ctrl-U: nothing typed there before joins the
  command) and types `cd -- CWD && clear && ...` (the screen then holds this launch's output
  only, which startup input conditions read).
- Either way the line is typed only into a shell idle at its prompt that holds the
  terminal's foreground (read from /proc right before typing). A refusal is `invalid_state`
  with `details.reason`: `not_single_pane`, `shell_changed`, `not_at_prompt` or
  `shell_not_foreground`; a window this call opened is closed again.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping

from pebrel.agentkinds import KINDS
from pebrel.errors import ErrorCode, PebrelError
from pebrel.method_params import AgentLaunchParams
from pebrel.router import layout
from pebrel.router.handlers import Handler, Result
from pebrel.router.handlers.agent import record
from pebrel.router.handlers.agent_start import claim_name, launch_agent, settle_prompt
from pebrel.router.handlers.exec import terminal_foreground_group
from pebrel.router.handlers.input_common import pane_ids, require_live, write_input, writing
from pebrel.router.handlers.window import close as close_window
from pebrel.router.handlers.window import open_window
from pebrel.router.runtime import Runtime
from pebrel.router.state import Pane


def refused(pane: Pane, reason: str, message: str) -> PebrelError:
    return PebrelError(ErrorCode.INVALID_STATE, message, {**pane_ids(pane), "reason": reason})


def has_control(text: str) -> bool:
    return any(ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 for ch in text)


def shell_ready(pane: Pane) -> None:
    """The pane is an idle shell at its prompt holding the terminal's foreground."""
    require_live(pane)
    tracker = pane.tracker
    if tracker.busy or pane.agents.session is not None or not tracker.at_prompt:
        raise refused(
            pane, "not_at_prompt", f"pane {pane.pane_id} is not an idle shell at its prompt"
        )
    pid = pane.pid
    try:
        foreground = pid is not None and terminal_foreground_group(pid) == os.getpgid(pid)
    except OSError:
        foreground = False
    if not foreground:
        raise refused(
            pane,
            "shell_not_foreground",
            f"the shell of pane {pane.pane_id} does not hold the terminal",
        )


async def launch(rt: Runtime, params: AgentLaunchParams) -> Result:
    name, kind, argv = params["name"], params["kind"], params["argv"]
    if kind not in KINDS:
        raise PebrelError(
            ErrorCode.INVALID_PARAMS,
            f"unknown agent kind {kind!r}",
            {"kind": kind, "known": list(KINDS)},
        )
    if any(has_control(arg) for arg in argv):
        raise PebrelError(
            ErrorCode.INVALID_PARAMS, "argv holds a control character", {"field": "argv"}
        )
    cwd = rt.check_cwd(params["cwd"])
    assert cwd is not None
    claim_name(rt, name)
    pane_id = params.get("pane_id")
    opened = pane_id is None
    if pane_id is None:
        placed = await open_window(rt, cwd, None)
        pane = rt.state.pane(placed["window_id"], placed["pane_id"])
    else:
        pane = rt.state.pane(params.get("window_id"), pane_id)
        window, _, tab = rt.state.locate(pane)
        if len(window.tabs) != 1 or len(list(layout.leaves(tab.root))) != 1:
            raise refused(pane, "not_single_pane", f"pane {pane_id} is not alone in its window")
        expected = params.get("shell_pid")
        if expected is not None and pane.pid != expected:
            raise refused(pane, "shell_changed", f"pane {pane_id} runs another shell now")
    try:
        await settle_prompt(rt, pane)
        shell_ready(pane)
        if opened:
            line = shlex.join(argv)
        else:
            await empty_line(rt, pane)
            line = f"cd -- {shlex.quote(cwd)} && clear && {shlex.join(argv)}"
        agent = await launch_agent(rt, pane, name, kind, line)
    except PebrelError:
        if opened and rt.state.panes.get(pane.key) is pane:
            await close_window_of(rt, pane)
        raise
    window, index, _ = rt.state.locate(pane)
    return {
        "runtime_id": rt.state.runtime_id,
        "agent": record(rt, agent),
        "window_id": window.window_id,
        "tab_index": index,
        "pane_id": pane.pane_id,
        "shell_pid": pane.pid,
    }


async def empty_line(rt: Runtime, pane: Pane) -> None:
    """Drop whatever was typed at the prompt of a reused pane (end of line, then kill back to
    its start: Ctrl-E Ctrl-U in bash, zsh and fish), so that the line run is the launch's
    alone."""
    with writing(pane) as sent:
        await write_input(rt, pane, b"\x05\x15", sent)


async def close_window_of(rt: Runtime, pane: Pane) -> None:
    """Close the window this call opened for ``pane`` (nothing was typed into it)."""
    await close_window(rt, {"window_id": pane.window_id, "confirm": True})


METHODS: Mapping[str, Handler] = {"agent.launch": launch}
