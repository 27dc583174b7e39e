"""pane.zoom, pane.resize, tab.rename, tab.move and tab sizes, end to end (R3.3, R3.5)."""

from __future__ import annotations

from typing import Any

from tests.conftest import Runtime


def stty_size(rt: Runtime, pane_id: int, window_id: int = 1) -> tuple[int, int]:
    """rows, cols as the shell inside the pane sees them."""
    marker = f"size-{pane_id}-{window_id}:"
    rt.run(pane_id, f'echo "{marker}$(stty size)"', window_id)
    for line in reversed(rt.read_text(pane_id, window_id).splitlines()):
        if line.startswith(marker):
            rows, cols = line[len(marker) :].split()
            return int(rows), int(cols)
    raise AssertionError("no stty output")


def tab_of(rt: Runtime, window_id: int = 1, index: int = 0) -> dict[str, Any]:
    for win in rt.snapshot()["windows"]:
        if win["window_id"] == window_id:
            tab: dict[str, Any] = win["tabs"][index]
            return tab
    raise KeyError(window_id)


def test_zoom_is_explicit_idempotent_and_resizes_the_pty(runtime: Runtime) -> None:
    """R3.5: zoomed true twice changes once; the zoomed pane gets the whole tab; false restores."""
    runtime.ok("pane.split", {"window_id": 1, "pane_id": 1, "direction": "right"})
    assert stty_size(runtime, 1) == (50, 100)
    first = runtime.ok("pane.zoom", {"window_id": 1, "pane_id": 1, "zoomed": True})
    assert first["zoomed"] is True and first["changed"] is True
    revision = runtime.snapshot()["revision"]
    again = runtime.ok("pane.zoom", {"window_id": 1, "pane_id": 1, "zoomed": True})
    assert again["changed"] is False
    assert runtime.snapshot()["revision"] == revision
    assert tab_of(runtime)["zoomed_pane_id"] == 1
    assert stty_size(runtime, 1) == (50, 200)
    runtime.ok("pane.zoom", {"window_id": 1, "pane_id": 1, "zoomed": False})
    assert tab_of(runtime)["zoomed_pane_id"] is None
    assert stty_size(runtime, 1) == (50, 100)


def test_unzooming_another_pane_changes_nothing(runtime: Runtime) -> None:
    """R3.5: zoomed false names a pane that is not zoomed: the tab stays zoomed."""
    runtime.ok("pane.split", {"window_id": 1, "pane_id": 1, "direction": "down"})
    runtime.ok("pane.zoom", {"window_id": 1, "pane_id": 2, "zoomed": True})
    result = runtime.ok("pane.zoom", {"window_id": 1, "pane_id": 1, "zoomed": False})
    assert result["changed"] is False and result["zoomed"] is False
    assert tab_of(runtime)["zoomed_pane_id"] == 2


def test_resize_sets_the_share_of_the_direct_parent_split(runtime: Runtime) -> None:
    """R3.5: ratio of pane 2 (second child) is 0.3: the split's ratio becomes 0.7."""
    runtime.ok("pane.split", {"window_id": 1, "pane_id": 1, "direction": "right"})
    result = runtime.ok("pane.resize", {"window_id": 1, "pane_id": 2, "ratio": 0.3})
    assert result["cols"] == 60 and result["rows"] == 50
    layout = tab_of(runtime)["layout"]
    assert layout["split"] == "right" and abs(layout["ratio"] - 0.7) < 1e-9
    assert stty_size(runtime, 2) == (50, 60)
    assert stty_size(runtime, 1) == (50, 140)


def test_resize_errors_change_nothing(runtime: Runtime) -> None:
    """R3.5: a lone pane has no split (invalid_state); ratios outside 0.05-0.95 are refused."""
    revision = runtime.snapshot()["revision"]
    lone = runtime.error("pane.resize", {"window_id": 1, "pane_id": 1, "ratio": 0.5})
    assert lone["code"] == "invalid_state"
    runtime.ok("pane.split", {"window_id": 1, "pane_id": 1, "direction": "down"})
    revision = runtime.snapshot()["revision"]
    for ratio in (0.01, 0.96, "half"):
        bad = runtime.error("pane.resize", {"window_id": 1, "pane_id": 1, "ratio": ratio})
        assert bad["code"] == "invalid_params"
    missing = runtime.error("pane.resize", {"window_id": 1, "pane_id": 9, "ratio": 0.5})
    assert missing["code"] == "target_not_found"
    assert runtime.snapshot()["revision"] == revision


def test_tab_rename_sets_and_clears(runtime: Runtime) -> None:
    """R3.3: a custom name shows in the snapshot; null clears it back to the default name."""
    named = runtime.ok("tab.rename", {"window_id": 1, "tab_index": 0, "name": "tests"})
    assert named["name"] == "tests" and named["custom_name"] == "tests"
    assert tab_of(runtime)["custom_name"] == "tests"
    cleared = runtime.ok("tab.rename", {"window_id": 1, "tab_index": 0, "name": None})
    assert cleared["custom_name"] is None and cleared["name"] != "tests"


def test_tab_rename_errors(runtime: Runtime) -> None:
    """R3.3: blank names and missing tabs are refused; the snapshot is unchanged."""
    revision = runtime.snapshot()["revision"]
    assert runtime.error("tab.rename", {"tab_index": 0, "name": "  "})["code"] == "invalid_params"
    assert runtime.error("tab.rename", {"tab_index": 0, "name": ""})["code"] == "invalid_params"
    assert runtime.error("tab.rename", {"tab_index": 3, "name": "x"})["code"] == "target_not_found"
    assert runtime.error("tab.rename", {"tab_index": 0})["code"] == "invalid_params"
    assert runtime.snapshot()["revision"] == revision


def test_tab_move_reorders_and_keeps_the_active_tab(runtime: Runtime) -> None:
    """R3.3: moving tab 2 to 0 shifts the others; the active tab stays the same tab."""
    runtime.ok("tab.rename", {"tab_index": 0, "name": "a"})
    runtime.ok("tab.new", {"window_id": 1})
    runtime.ok("tab.rename", {"tab_index": 1, "name": "b"})
    runtime.ok("tab.new", {"window_id": 1})
    runtime.ok("tab.rename", {"tab_index": 2, "name": "c"})
    runtime.ok("window.focus", {"window_id": 1, "pane_id": 2})  # tab "b" active
    moved = runtime.ok("tab.move", {"window_id": 1, "tab_index": 2, "to_index": 0})
    assert moved == {"window_id": 1, "from_index": 2, "tab_index": 0}
    tabs = runtime.snapshot()["windows"][0]["tabs"]
    assert [t["custom_name"] for t in tabs] == ["c", "a", "b"]
    assert [t["active"] for t in tabs] == [False, False, True]
    assert [t["tab_index"] for t in tabs] == [0, 1, 2]
    out_of_range = runtime.error("tab.move", {"window_id": 1, "tab_index": 0, "to_index": 3})
    assert out_of_range["code"] == "target_not_found"


def test_tab_size_is_settable_on_create(runtime: Runtime) -> None:
    """A headless tab is 200x50 unless window.create / tab.new say otherwise."""
    win = runtime.ok("window.create", {"cols": 80, "rows": 24})
    assert stty_size(runtime, 1, win["window_id"]) == (24, 80)
    tab = runtime.ok("tab.new", {"window_id": 1, "cols": 120, "rows": 30})
    assert stty_size(runtime, tab["pane_id"], 1) == (30, 120)
    bad = runtime.error("tab.new", {"window_id": 1, "cols": 1})
    assert bad["code"] == "invalid_params"


def test_cli_verbs(runtime: Runtime) -> None:
    """R8.1: pane zoom/resize, tab rename/move through the resource verbs."""
    runtime.ok("pane.split", {"window_id": 1, "pane_id": 1, "direction": "right"})
    assert runtime.cli("pane", "zoom", "2", "--window", "1").json["result"]["zoomed"] is True
    assert runtime.cli("pane", "zoom", "2", "--zoomed", "false").json["result"]["zoomed"] is False
    assert runtime.cli("pane", "resize", "1", "0.25", "--window", "1").json["result"]["cols"] == 50
    assert runtime.cli("tab", "rename", "0", "work").json["result"]["custom_name"] == "work"
    assert runtime.cli("tab", "rename", "0", "--clear").json["result"]["custom_name"] is None
    assert runtime.cli("tab", "rename", "0").code == 2
    runtime.ok("tab.new", {"window_id": 1})
    assert runtime.cli("tab", "move", "1", "0", "--window", "1").json["result"]["tab_index"] == 0
    assert runtime.cli("pane", "resize", "1", "0.99").code == 2
