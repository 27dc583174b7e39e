"""pane.zoom, pane.resize, tab.rename and tab.move (R3.3, R3.5)."""

from __future__ import annotations

from collections.abc import Mapping

from pebrel.errors import ErrorCode, PebrelError
from pebrel.router import layout, sizing
from pebrel.router.handlers import Handler, Params, Result
from pebrel.router.runtime import Runtime


async def zoom(rt: Runtime, params: Params) -> Result:
    """Explicit, idempotent zoom: `zoomed: true` zooms this pane, `false` unzooms the tab."""
    pane = rt.state.pane(params.get("window_id"), params["pane_id"])
    window, index, tab = rt.state.locate(pane)
    wanted = pane.pane_id if params["zoomed"] else None
    if not params["zoomed"] and tab.zoomed_pane not in (None, pane.pane_id):
        wanted = tab.zoomed_pane  # unzooming a pane that is not the zoomed one changes nothing
    changed = tab.zoomed_pane != wanted
    tab.zoomed_pane = wanted
    if params["zoomed"]:
        tab.focused_pane = pane.pane_id
    sizing.resize_tab(rt, window, tab)
    rt.commit()
    return {
        "window_id": pane.window_id,
        "tab_index": index,
        "pane_id": pane.pane_id,
        "zoomed": tab.zoomed_pane == pane.pane_id,
        "changed": changed,
    }


async def resize(rt: Runtime, params: Params) -> Result:
    pane = rt.state.pane(params.get("window_id"), params["pane_id"])
    window, index, tab = rt.state.locate(pane)
    if layout.parent_split(tab.root, pane.pane_id) is None:
        raise PebrelError(
            ErrorCode.INVALID_STATE,
            f"pane {pane.pane_id} is alone in its tab: there is no split to resize",
            {"window_id": pane.window_id, "pane_id": pane.pane_id},
        )
    ratio = round(float(params["ratio"]), 6)
    tab.root = layout.set_ratio(tab.root, pane.pane_id, ratio)
    sizing.resize_tab(rt, window, tab)
    rt.commit()
    return {
        "window_id": pane.window_id,
        "tab_index": index,
        "pane_id": pane.pane_id,
        "ratio": ratio,
        "cols": pane.cols,
        "rows": pane.rows,
    }


async def rename(rt: Runtime, params: Params) -> Result:
    window, tab = rt.state.tab(params.get("window_id"), params["tab_index"])
    name = params["name"]
    if name is not None and not name.strip():
        raise PebrelError(ErrorCode.INVALID_PARAMS, "name must not be blank; use null to clear")
    tab.custom_name = name
    rt.commit()
    record = rt.state.snapshot_tab(window.window_id, params["tab_index"])
    return {
        "window_id": window.window_id,
        "tab_index": params["tab_index"],
        "name": record["name"],
        "custom_name": record["custom_name"],
    }


async def move(rt: Runtime, params: Params) -> Result:
    window, tab = rt.state.tab(params.get("window_id"), params["tab_index"])
    to_index = params["to_index"]
    if to_index >= len(window.tabs):
        raise PebrelError(
            ErrorCode.TARGET_NOT_FOUND,
            f"window {window.window_id} has {len(window.tabs)} tabs; no index {to_index}",
            {"window_id": window.window_id, "to_index": to_index, "tab_count": len(window.tabs)},
        )
    active = window.tabs[window.active_tab]
    window.tabs.remove(tab)
    window.tabs.insert(to_index, tab)
    window.active_tab = window.tabs.index(active)
    rt.commit()
    return {"window_id": window.window_id, "from_index": params["tab_index"], "tab_index": to_index}


METHODS: Mapping[str, Handler] = {
    "pane.zoom": zoom,
    "pane.resize": resize,
    "tab.rename": rename,
    "tab.move": move,
}
