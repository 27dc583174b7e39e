"""pane.zoom, pane.resize, tab.rename and tab.move (R3.3, R3.5)."""

from __future__ import annotations

from collections.abc import Mapping

from pebrel.errors import ErrorCode, PebrelError
from pebrel.inputs import check_no_controls
from pebrel.method_params import PaneResizeParams, PaneZoomParams, TabMoveParams, TabRenameParams
from pebrel.router import layout, sizing
from pebrel.router.handlers import Handler, Result
from pebrel.router.runtime import Runtime
from pebrel.router.state import Pane, Window
from pebrel.schema import invalid

#: A split's share range (the schema's for pane.resize's ``ratio``).
RATIO_MIN, RATIO_MAX = 0.05, 0.95


def zoom_pane(rt: Runtime, pane: Pane, zoomed: bool) -> Result:
    """Explicit, idempotent zoom: `zoomed` zooms this pane, else unzooms the tab."""
    window, index, tab = rt.state.locate(pane)
    wanted = pane.pane_id if zoomed else None
    if not zoomed and tab.zoomed_pane not in (None, pane.pane_id):
        wanted = tab.zoomed_pane  # unzooming a pane that is not the zoomed one changes nothing
    changed = tab.zoomed_pane != wanted
    tab.zoomed_pane = wanted
    if zoomed:
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


async def zoom(rt: Runtime, params: PaneZoomParams) -> Result:
    return zoom_pane(
        rt, rt.state.pane(params.get("window_id"), params["pane_id"]), params["zoomed"]
    )


def resize_pane(rt: Runtime, pane: Pane, ratio: float) -> Result:
    """Set the pane's share of its direct parent split (`invalid_state` if it is alone)."""
    window, index, tab = rt.state.locate(pane)
    if layout.parent_split(tab.root, pane.pane_id) is None:
        raise PebrelError(
            ErrorCode.INVALID_STATE,
            f"pane {pane.pane_id} is alone in its tab: there is no split to resize",
            {"window_id": pane.window_id, "pane_id": pane.pane_id},
        )
    ratio = round(float(ratio), 6)
    if not RATIO_MIN <= ratio <= RATIO_MAX:  # also NaN: nothing changes unless it holds
        raise invalid("pane.resize", f"params.ratio: must be from {RATIO_MIN} to {RATIO_MAX}")
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


async def resize(rt: Runtime, params: PaneResizeParams) -> Result:
    return resize_pane(
        rt, rt.state.pane(params.get("window_id"), params["pane_id"]), params["ratio"]
    )


def rename_tab(rt: Runtime, window: Window, tab_index: int, name: str | None) -> Result:
    """Set or (``None``) clear a tab's custom name; a blank name, or one with a control
    character (a newline, ESC...), is `invalid_params`."""
    window, tab = rt.state.tab(window.window_id, tab_index)
    if name is not None and not name.strip():
        raise PebrelError(ErrorCode.INVALID_PARAMS, "name must not be blank; use null to clear")
    if name is not None:
        check_no_controls(name, "name")
    tab.custom_name = name
    rt.commit()
    record = rt.state.snapshot_tab(window.window_id, tab_index)
    return {
        "window_id": window.window_id,
        "tab_index": tab_index,
        "name": record["name"],
        "custom_name": record["custom_name"],
    }


async def rename(rt: Runtime, params: TabRenameParams) -> Result:
    window = rt.state.window(params.get("window_id"))
    return rename_tab(rt, window, params["tab_index"], params["name"])


async def move(rt: Runtime, params: TabMoveParams) -> Result:
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
