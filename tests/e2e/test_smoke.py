"""A first end-to-end pass: start, run, read, stop (R1.5, R6.2, R4.4)."""

from __future__ import annotations

from tests.conftest import Runtime


def test_fresh_runtime_has_one_window_one_tab_one_pane(runtime: Runtime) -> None:
    snap = runtime.snapshot()
    assert [w["window_id"] for w in snap["windows"]] == [1]
    tabs = snap["windows"][0]["tabs"]
    assert len(tabs) == 1
    assert [p["pane_id"] for p in tabs[0]["panes"]] == [1]
    pane = tabs[0]["panes"][0]
    assert pane["task_state"] == "idle" and pane["state_change_seq"] == 1


def test_run_reports_real_exit_codes(runtime: Runtime) -> None:
    assert runtime.run(1, "true")["exit_code"] == 0
    failed = runtime.run(1, "exit_with() { return 7; }; exit_with")
    assert failed["status"] == "failed" and failed["exit_code"] == 7
    runtime.run(1, "echo marker-$((40+2))")
    assert "marker-42" in runtime.read_text(1)
