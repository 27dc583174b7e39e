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


def test_shell_owns_its_terminal_with_default_signals(runtime: Runtime) -> None:
    """R2.1: the pane's shell leads its own session on the pane's terminal (job control works)
    and does not inherit the worker's ignored signals: `yes | head -1` ends quietly."""
    runtime.run(1, "yes | head -1; echo pipe-status=${PIPESTATUS[0]}")
    text = runtime.read_text(1)
    assert "Broken pipe" not in text
    assert "pipe-status=141" in text  # yes was killed by SIGPIPE (128 + 13)
    runtime.run(1, 'echo sid=$(ps -o sid= -p $$ | tr -d " ") pid=$$ tty=$(tty)')
    text = runtime.read_text(1)
    assert "tty=/dev/pts/" in text
    line = next(line for line in text.splitlines() if line.startswith("sid="))
    sid, pid = (part.split("=")[1] for part in line.split()[:2])
    assert sid == pid
    runtime.run(1, "sleep 30 & jobs; kill %1")
    assert "Running" in runtime.read_text(1)
