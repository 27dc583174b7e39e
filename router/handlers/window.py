"""window.create, window.focus, window.close and the legacy ATTACH (R3.1, R1.4)."""

from __future__ import annotations

from collections.abc import Mapping

from pebrel.errors import ErrorCode, PebrelError
from pebrel.method_params import (
    LegacyAttachParams,
    WindowCloseParams,
    WindowCreateParams,
    WindowFocusParams,
)
from pebrel.model import DEFAULT_TAB_COLS, DEFAULT_TAB_ROWS
from pebrel.router.handlers import Handler, Result
from pebrel.router.runtime import Runtime
from pebrel.router.spawn import spawn_pane
from pebrel.router.state import Pane, Window, new_tab
from pebrel.shellids import ShellChoice, default_shell, resolve_shell


def placed(rt: Runtime, pane: Pane) -> Result:
    """Where a pane sits: `window_id`, `tab_index`, `pane_id` (what creating or focusing one
    answers)."""
    window, index, _ = rt.state.locate(pane)
    return {"window_id": window.window_id, "tab_index": index, "pane_id": pane.pane_id}


def shell_for(rt: Runtime, shell_id: str | None) -> ShellChoice:
    """The named shell or profile (`invalid_shell` if unknown), else the default shell."""
    return (
        resolve_shell(shell_id, rt.settings)
        if shell_id
        else default_shell(rt.settings, rt.base_env)
    )


async def open_window(
    rt: Runtime,
    cwd: str | None,
    shell_id: str | None,
    cols: int = DEFAULT_TAB_COLS,
    rows: int = DEFAULT_TAB_ROWS,
) -> Result:
    shell = shell_for(rt, shell_id)
    directory = rt.start_dir(shell, cwd, rt.launch_cwd)
    assert directory is not None
    window = Window(window_id=rt.state.allocate_window_id())
    pane = await spawn_pane(rt, window, shell, directory, cols, rows)
    window.tabs.append(new_tab(pane.pane_id, cols, rows))
    rt.state.windows[window.window_id] = window
    rt.state.focused_window = window.window_id
    rt.commit()
    return {"window_id": window.window_id, "tab_index": 0, "pane_id": pane.pane_id}


async def create(rt: Runtime, params: WindowCreateParams) -> Result:
    return await open_window(
        rt,
        params.get("cwd"),
        params.get("shell"),
        params.get("cols", DEFAULT_TAB_COLS),
        params.get("rows", DEFAULT_TAB_ROWS),
    )


def focus_pane(rt: Runtime, target: Pane) -> Result:
    """Focus a pane with its tab and window."""
    window, index, tab = rt.state.locate(target)
    rt.state.focused_window = window.window_id
    window.active_tab = index
    tab.focused_pane = target.pane_id
    rt.commit()
    return {"window_id": window.window_id, "tab_index": index, "pane_id": target.pane_id}


async def focus(rt: Runtime, params: WindowFocusParams) -> Result:
    """A pane, or a window's focused pane (of its active tab)."""
    window_id, pane_id = params.get("window_id"), params.get("pane_id")
    if window_id is None and pane_id is None:
        raise PebrelError(ErrorCode.INVALID_PARAMS, "give window_id, pane_id or both")
    return focus_pane(rt, rt.state.pane(window_id, pane_id))


async def close(rt: Runtime, params: WindowCloseParams) -> Result:
    window = rt.state.window(params.get("window_id"))
    panes = [p for tab in window.tabs for p in rt.state.tab_panes(window.window_id, tab)]
    busy = rt.busy_panes(panes)
    if busy and not params.get("confirm", False):
        raise PebrelError(
            ErrorCode.CONFIRMATION_REQUIRED,
            f"window {window.window_id} has busy panes; pass confirm: true to close it",
            {"window_id": window.window_id, "busy_panes": busy},
        )
    await rt.close_panes(panes)
    for pane in panes:
        if pane.key in rt.state.panes:
            rt.remove_pane(pane)
    rt.commit()
    return {"window_id": window.window_id, "closed_pane_ids": [p.pane_id for p in panes]}


async def attach(rt: Runtime, params: LegacyAttachParams) -> Result:
    """Legacy `ATTACH <token> [cwd]`: focus window 1 (or the first one), creating one if none."""
    if not rt.state.windows:
        return await open_window(rt, params.get("cwd"), None)
    window_id = 1 if 1 in rt.state.windows else min(rt.state.windows)
    rt.state.focused_window = window_id
    rt.commit()
    window = rt.state.windows[window_id]
    tab = window.tabs[window.active_tab]
    return {"window_id": window_id, "tab_index": window.active_tab, "pane_id": tab.focused_pane}


METHODS: Mapping[str, Handler] = {
    "window.create": create,
    "window.focus": focus,
    "window.close": close,
}
