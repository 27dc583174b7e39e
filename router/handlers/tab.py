"""tab.new and tab.close (R3.2, R3.3)."""

from __future__ import annotations

from collections.abc import Mapping

from pebrel.errors import ErrorCode, PebrelError
from pebrel.method_params import TabCloseParams, TabNewParams
from pebrel.model import DEFAULT_TAB_COLS, DEFAULT_TAB_ROWS
from pebrel.router.handlers import Handler, Result
from pebrel.router.handlers.window import shell_for
from pebrel.router.runtime import Runtime
from pebrel.router.spawn import spawn_pane
from pebrel.router.state import Pane, Window, new_tab


async def open_tab(
    rt: Runtime,
    window: Window,
    cwd: str | None = None,
    shell_id: str | None = None,
    cols: int | None = None,
    rows: int | None = None,
) -> Pane:
    """A new active tab in ``window`` with one pane; the size defaults to the active tab's."""
    shell = shell_for(rt, shell_id)
    directory = rt.start_dir(shell, cwd, rt.launch_cwd)
    assert directory is not None
    current = window.tabs[window.active_tab] if window.tabs else None
    if cols is None:
        cols = current.cols if current else DEFAULT_TAB_COLS
    if rows is None:
        rows = current.rows if current else DEFAULT_TAB_ROWS
    pane = await spawn_pane(rt, window, shell, directory, cols, rows)
    if window.window_id not in rt.state.windows:
        await rt.close_panes([pane])
        rt.state.panes.pop(pane.key, None)
        raise PebrelError(
            ErrorCode.TARGET_NOT_FOUND,
            f"window {window.window_id} was closed meanwhile",
            {"window_id": window.window_id},
        )
    window.tabs.append(new_tab(pane.pane_id, cols, rows))
    window.active_tab = len(window.tabs) - 1
    rt.state.focused_window = window.window_id
    rt.commit()
    return pane


async def new(rt: Runtime, params: TabNewParams) -> Result:
    window = rt.state.window(params.get("window_id"))
    pane = await open_tab(
        rt, window, params.get("cwd"), params.get("shell"), params.get("cols"), params.get("rows")
    )
    return {"window_id": window.window_id, "tab_index": window.active_tab, "pane_id": pane.pane_id}


async def close(rt: Runtime, params: TabCloseParams) -> Result:
    window, tab = rt.state.tab(params.get("window_id"), params["tab_index"])
    panes = rt.state.tab_panes(window.window_id, tab)
    busy = rt.busy_panes(panes)
    if busy and not params.get("confirm", False):
        raise PebrelError(
            ErrorCode.CONFIRMATION_REQUIRED,
            f"tab {params['tab_index']} has busy panes; pass confirm: true to close it",
            {"window_id": window.window_id, "tab_index": params["tab_index"], "busy_panes": busy},
        )
    await rt.close_panes(panes)
    for pane in panes:
        if pane.key in rt.state.panes:
            rt.remove_pane(pane)
    rt.commit()
    return {
        "window_id": window.window_id,
        "tab_index": params["tab_index"],
        "closed_pane_ids": [p.pane_id for p in panes],
    }


METHODS: Mapping[str, Handler] = {"tab.new": new, "tab.close": close}
