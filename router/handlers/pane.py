"""pane.split and pane.close (R3.4)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from pebrel.errors import ErrorCode, PebrelError
from pebrel.method_params import DirectionWord, PaneCloseParams, PaneSplitParams
from pebrel.model import DIRECTIONS
from pebrel.router import layout, sizing
from pebrel.router.handlers import Handler, Result
from pebrel.router.handlers.window import placed, shell_for
from pebrel.router.runtime import Runtime
from pebrel.router.spawn import spawn_pane
from pebrel.router.state import Pane

#: Stands for the new pane in the layout planned before its id is allocated.
_PLANNED = -1


async def split_pane(
    rt: Runtime,
    target: Pane,
    direction_word: DirectionWord,
    cwd: str | None = None,
    shell_id: str | None = None,
) -> Pane:
    """Split ``target``; the new pane is second in the split and gets focus."""
    direction = DIRECTIONS[direction_word]
    shell = shell_for(rt, shell_id)
    directory = rt.start_dir(shell, cwd, None)
    if directory is None:
        # The split pane's cwd, unless that directory is gone by now (or on another host).
        exists = not target.remote and os.path.isabs(target.cwd) and os.path.isdir(target.cwd)
        directory = target.cwd if exists else rt.launch_cwd
    window, _, tab = rt.state.locate(target)
    # Started at the size it will have in the split: a resize right after would make the new
    # shell redraw its first prompt (SIGWINCH) while it is still starting. The split pane is
    # told its new size now, so that its own redraw overlaps the start (router/sizing.py).
    sizes = layout.sizes(
        layout.split_leaf(tab.root, target.pane_id, _PLANNED, direction), tab.cols, tab.rows
    )
    planned = sizes.pop(_PLANNED)
    told = sizing.presize(rt, window, sizes)
    try:
        pane = await spawn_pane(rt, window, shell, directory, *planned)
    except BaseException:
        sizing.restore(rt, told)
        raise
    if target.key not in rt.state.panes:
        # The target closed while the new shell started: nothing to split any more.
        sizing.restore(rt, told)
        await rt.close_panes([pane])
        rt.state.panes.pop(pane.key, None)
        raise PebrelError(
            ErrorCode.TARGET_NOT_FOUND,
            f"pane {target.pane_id} was closed meanwhile",
            {"window_id": target.window_id, "pane_id": target.pane_id},
        )
    window, index, tab = rt.state.locate(target)
    tab.root = layout.split_leaf(tab.root, target.pane_id, pane.pane_id, direction)
    tab.focused_pane = pane.pane_id
    tab.zoomed_pane = None
    window.active_tab = index
    rt.state.focused_window = window.window_id
    sizing.resize_tab(rt, window, tab)
    rt.commit()
    return pane


async def split(rt: Runtime, params: PaneSplitParams) -> Result:
    target = rt.state.pane(params.get("window_id"), params.get("pane_id"))
    pane = await split_pane(rt, target, params["direction"], params.get("cwd"), params.get("shell"))
    return placed(rt, pane)


async def close(rt: Runtime, params: PaneCloseParams) -> Result:
    pane = rt.state.pane(params.get("window_id"), params["pane_id"])
    if not pane.exited and pane.tracker.busy and not params.get("confirm", False):
        raise PebrelError(
            ErrorCode.CONFIRMATION_REQUIRED,
            f"pane {pane.pane_id} is busy ({pane.tracker.state}); pass confirm: true to close it",
            {
                "window_id": pane.window_id,
                "pane_id": pane.pane_id,
                "task_state": pane.tracker.state,
            },
        )
    await rt.close_panes([pane])
    tab_closed = window_closed = False
    if pane.key in rt.state.panes:
        tab_closed, window_closed = rt.remove_pane(pane)
    rt.commit()
    return {
        "window_id": pane.window_id,
        "pane_id": pane.pane_id,
        "tab_closed": tab_closed,
        "window_closed": window_closed,
    }


METHODS: Mapping[str, Handler] = {"pane.split": split, "pane.close": close}
