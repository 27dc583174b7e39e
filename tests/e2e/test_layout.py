"""Windows, tabs, panes and the snapshot that projects them, against a real runtime.

Covers R2.5, R2.6, R2.8 and R3.1-R3.4: every test drives the socket and checks the snapshot,
the shell inside the pane (`stty size`, `pwd`) or the process table.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, NamedTuple

import psutil
import pytest

from pebrel.model import DEFAULT_TAB_COLS, DEFAULT_TAB_ROWS
from tests.conftest import Runtime, assert_never, at_prompt, wait_for


def window_of(snap: dict[str, Any], window_id: int) -> dict[str, Any]:
    for win in snap["windows"]:
        if win["window_id"] == window_id:
            return dict(win)
    raise KeyError(window_id)


def panes_of(snap: dict[str, Any], window_id: int | None = None) -> list[dict[str, Any]]:
    return [
        pane
        for win in snap["windows"]
        if window_id is None or win["window_id"] == window_id
        for tab in win["tabs"]
        for pane in tab["panes"]
    ]


def focused_panes(snap: dict[str, Any]) -> list[tuple[int, int]]:
    return [(p["window_id"], p["pane_id"]) for p in panes_of(snap) if p["focused"]]


def pane_processes(rt: Runtime, pane_id: int, window_id: int = 1) -> list[psutil.Process]:
    """The pane's shell and every process below it, as psutil handles (pid-reuse safe)."""
    shell = psutil.Process(rt.pane(pane_id, window_id)["pid"])
    return [shell, *shell.children(recursive=True)]


def gone(procs: list[psutil.Process]) -> bool:
    for proc in procs:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.NoSuchProcess:
            continue
    return True


def start_sleep(rt: Runtime, pane_id: int, window_id: int = 1) -> list[psutil.Process]:
    """Type `sleep 30` into a pane, wait until it runs; return the pane's processes."""
    at_prompt(rt, pane_id, window_id)
    sent = rt.ok("pane.prompt", {"window_id": window_id, "pane_id": pane_id, "text": "sleep 30"})
    waited = rt.ok(
        "pane.wait",
        {
            "window_id": window_id,
            "pane_id": pane_id,
            "state": "running",
            "after_seq": sent["state_change_seq"] - 1,
            "timeout_ms": 10_000,
        },
    )
    assert waited["state"] == "running"

    def with_sleep() -> list[psutil.Process] | None:
        found = pane_processes(rt, pane_id, window_id)
        return found if any(p.name() == "sleep" for p in found) else None

    procs: list[psutil.Process] = wait_for(
        with_sleep, 15, f"a sleep process under pane {window_id}:{pane_id}"
    )
    return procs


def revision(rt: Runtime) -> int:
    rev: int = rt.snapshot()["revision"]
    return rev


# -- windows -----------------------------------------------------------------------------------


def test_window_create_focuses_a_new_window_with_a_live_shell(runtime: Runtime) -> None:
    """R3.1: window.create returns window 2 / tab 0 / pane 1, focused, with a working shell."""
    created = runtime.ok("window.create")
    assert created == {"window_id": 2, "tab_index": 0, "pane_id": 1}
    snap = runtime.snapshot()
    assert [w["window_id"] for w in snap["windows"]] == [1, 2]
    assert snap["focused_window_id"] == 2
    assert [w["focused"] for w in snap["windows"]] == [False, True]
    assert focused_panes(snap) == [(2, 1)]
    ran = runtime.run(1, "true", window_id=2)
    assert ran["status"] == "finished" and ran["exit_code"] == 0


def test_pane_id_shared_by_two_windows_is_ambiguous(runtime: Runtime) -> None:
    """R2.8: pane 1 without window_id in two windows -> ambiguous_target, never a guess."""
    runtime.ok("window.create")
    error = runtime.error("pane.read", {"pane_id": 1})
    assert error["code"] == "ambiguous_target"
    assert error["details"]["window_ids"] == [1, 2]
    read = runtime.ok("pane.read", {"window_id": 2, "pane_id": 1})
    assert read["window_id"] == 2 and read["pane_id"] == 1


class Missing(NamedTuple):
    id: str
    params: dict[str, Any]


MISSING = [
    Missing("pane-9", {"pane_id": 9}),
    Missing("pane-9-in-window-1", {"window_id": 1, "pane_id": 9}),
    Missing("window-7", {"window_id": 7, "pane_id": 1}),
]


@pytest.mark.parametrize("case", MISSING, ids=[c.id for c in MISSING])
def test_unknown_pane_or_window_is_target_not_found(runtime: Runtime, case: Missing) -> None:
    """R2.8: a pane or window that does not exist -> target_not_found."""
    runtime.ok("window.create")
    assert runtime.error("pane.read", case.params)["code"] == "target_not_found"


# -- panes ---------------------------------------------------------------------------------------


def test_pane_ids_are_per_window_and_never_reused(runtime: Runtime) -> None:
    """R2.8, DESIGN Model: split gives pane 2; after closing it the next split gives pane 3."""
    first = runtime.ok("pane.split", {"window_id": 1, "pane_id": 1, "direction": "right"})
    assert first["pane_id"] == 2
    runtime.ok("pane.close", {"window_id": 1, "pane_id": 2})
    second = runtime.ok("pane.split", {"window_id": 1, "pane_id": 1, "direction": "right"})
    assert second["pane_id"] == 3
    assert [p["pane_id"] for p in panes_of(runtime.snapshot(), 1)] == [1, 3]
    other = runtime.ok("window.create")
    assert other["pane_id"] == 1


class SplitCase(NamedTuple):
    direction: str
    wire: str
    sizes: tuple[tuple[int, int], tuple[int, int]]  # (cols, rows) of pane 1 and pane 2


HALF_COLS, HALF_ROWS = DEFAULT_TAB_COLS // 2, DEFAULT_TAB_ROWS // 2
SIDE_BY_SIDE = ((HALF_COLS, DEFAULT_TAB_ROWS), (HALF_COLS, DEFAULT_TAB_ROWS))
STACKED = ((DEFAULT_TAB_COLS, HALF_ROWS), (DEFAULT_TAB_COLS, HALF_ROWS))
SPLITS = [
    SplitCase("right", "right", SIDE_BY_SIDE),
    SplitCase("left_right", "right", SIDE_BY_SIDE),
    SplitCase("down", "down", STACKED),
    SplitCase("top_bottom", "down", STACKED),
]


@pytest.mark.parametrize("case", SPLITS, ids=[c.direction for c in SPLITS])
def test_split_layout_sizes_and_tty_size(runtime: Runtime, case: SplitCase) -> None:
    """R3.4, R2.5: the split node, the new pane second and focused, sizes seen by `stty size`."""
    created = runtime.ok("pane.split", {"pane_id": 1, "direction": case.direction})
    assert created == {"window_id": 1, "tab_index": 0, "pane_id": 2}
    tab = window_of(runtime.snapshot(), 1)["tabs"][0]
    assert tab["layout"] == {
        "split": case.wire,
        "ratio": 0.5,
        "first": {"pane_id": 1},
        "second": {"pane_id": 2},
    }
    assert (tab["cols"], tab["rows"]) == (DEFAULT_TAB_COLS, DEFAULT_TAB_ROWS)
    by_id = {p["pane_id"]: p for p in tab["panes"]}
    assert [by_id[1]["focused"], by_id[2]["focused"]] == [False, True]
    got = tuple((by_id[i]["cols"], by_id[i]["rows"]) for i in (1, 2))
    assert got == case.sizes
    along = 0 if case.wire == "right" else 1
    assert got[0][along] + got[1][along] == (DEFAULT_TAB_COLS, DEFAULT_TAB_ROWS)[along]
    for pane_id, (cols, rows) in zip((1, 2), case.sizes, strict=True):
        runtime.run(pane_id, "echo SIZE:$(stty size):END")
        runtime.wait_text(pane_id, f"SIZE:{rows} {cols}:END")


# -- tabs ------------------------------------------------------------------------------------------


def test_tab_new_adds_an_active_tab(runtime: Runtime) -> None:
    """R3.2: tab.new returns the new index; it becomes the active tab with a focused shell."""
    created = runtime.ok("tab.new")
    assert created == {"window_id": 1, "tab_index": 1, "pane_id": 2}
    tabs = window_of(runtime.snapshot(), 1)["tabs"]
    assert [t["active"] for t in tabs] == [False, True]
    assert focused_panes(runtime.snapshot()) == [(1, 2)]
    assert runtime.run(2, "true")["exit_code"] == 0


def test_tab_new_with_shell_sh_runs_sh(runtime: Runtime) -> None:
    """R3.2: `shell: "sh"` starts sh (its resolved path is the pane's `shell`)."""
    created = runtime.ok("tab.new", {"shell": "sh"})
    expected = shutil.which("sh", path=runtime.env["PATH"])
    pane = runtime.pane(created["pane_id"])
    assert pane["shell"] == expected
    assert psutil.Process(pane["pid"]).exe() == str(Path(str(expected)).resolve())


def test_tab_new_with_unknown_shell_changes_nothing(runtime: Runtime) -> None:
    """R3.2, R2.2: an unknown shell id -> invalid_shell, no fallback, no tab, same revision."""
    before = runtime.snapshot()
    error = runtime.error("tab.new", {"shell": "nosuch"})
    assert error["code"] == "invalid_shell"
    after = runtime.snapshot()
    assert after["revision"] == before["revision"]
    assert len(window_of(after, 1)["tabs"]) == 1


def test_tab_new_starts_in_the_given_cwd(runtime: Runtime, tmp_path: Path) -> None:
    """R3.2: `cwd` is where the new tab's shell starts (`pwd` inside the pane)."""
    workdir = (tmp_path / "work dir").resolve()
    workdir.mkdir()
    created = runtime.ok("tab.new", {"cwd": str(workdir)})
    runtime.run(created["pane_id"], "echo PWD:$(pwd):END")
    runtime.wait_text(created["pane_id"], f"PWD:{workdir}:END")


class BadCwd(NamedTuple):
    id: str
    cwd: str


BAD_CWDS = [BadCwd("relative", "some/relative/dir"), BadCwd("missing", "/nonexistent/pebrel")]


@pytest.mark.parametrize("case", BAD_CWDS, ids=[c.id for c in BAD_CWDS])
def test_tab_new_with_bad_cwd_is_invalid_params(runtime: Runtime, case: BadCwd) -> None:
    """R3.2, R2.2: a relative or missing cwd -> invalid_params and no tab."""
    before = runtime.snapshot()
    assert runtime.error("tab.new", {"cwd": case.cwd})["code"] == "invalid_params"
    after = runtime.snapshot()
    assert after["revision"] == before["revision"]
    assert len(window_of(after, 1)["tabs"]) == 1


def test_tab_close_closes_an_idle_tab(runtime: Runtime) -> None:
    """R3.3: an idle tab closes at once; its shell is gone."""
    runtime.ok("tab.new")
    at_prompt(runtime, 2)
    procs = pane_processes(runtime, 2)
    closed = runtime.ok("tab.close", {"tab_index": 1})
    assert closed["closed_pane_ids"] == [2]
    tabs = window_of(runtime.snapshot(), 1)["tabs"]
    assert len(tabs) == 1 and tabs[0]["active"]
    wait_for(lambda: gone(procs), 10, "the closed tab's shell to exit")


def test_tab_close_of_a_busy_tab_needs_confirmation(runtime: Runtime) -> None:
    """R3.3, R2.2: a tab running `sleep 30` -> confirmation_required, and nothing changes."""
    runtime.ok("tab.new")
    procs = start_sleep(runtime, 2)
    before = runtime.snapshot()
    error = runtime.error("tab.close", {"tab_index": 1})
    assert error["code"] == "confirmation_required"
    assert [p["pane_id"] for p in error["details"]["busy_panes"]] == [2]
    assert runtime.snapshot()["revision"] == before["revision"]
    assert all(p.is_running() for p in procs)


def test_tab_close_with_confirm_kills_the_busy_command(runtime: Runtime) -> None:
    """R3.3: `confirm: true` closes a busy tab; its shell and `sleep 30` are gone."""
    runtime.ok("tab.new")
    procs = start_sleep(runtime, 2)
    runtime.ok("tab.close", {"tab_index": 1, "confirm": True})
    assert len(window_of(runtime.snapshot(), 1)["tabs"]) == 1
    wait_for(lambda: gone(procs), 10, "the shell and sleep of the closed tab to exit")


# -- pane.close and window.close -------------------------------------------------------------------


def test_pane_close_of_a_busy_pane_needs_confirmation(runtime: Runtime) -> None:
    """R3.4: pane.close on a pane running `sleep 30` -> confirmation_required, no change."""
    runtime.ok("pane.split", {"pane_id": 1, "direction": "right"})
    procs = start_sleep(runtime, 2)
    before = runtime.snapshot()
    error = runtime.error("pane.close", {"pane_id": 2})
    assert error["code"] == "confirmation_required"
    assert error["details"]["task_state"] == "running"
    assert runtime.snapshot()["revision"] == before["revision"]
    assert all(p.is_running() for p in procs)


def test_pane_close_with_confirm_kills_the_busy_command(runtime: Runtime) -> None:
    """R3.4: `confirm: true` closes the busy pane; the sibling takes the whole tab."""
    runtime.ok("pane.split", {"pane_id": 1, "direction": "right"})
    procs = start_sleep(runtime, 2)
    closed = runtime.ok("pane.close", {"pane_id": 2, "confirm": True})
    assert closed["tab_closed"] is False and closed["window_closed"] is False
    tab = window_of(runtime.snapshot(), 1)["tabs"][0]
    assert tab["layout"] == {"pane_id": 1}
    assert (tab["panes"][0]["cols"], tab["panes"][0]["rows"]) == (
        DEFAULT_TAB_COLS,
        DEFAULT_TAB_ROWS,
    )
    assert tab["panes"][0]["focused"]
    wait_for(lambda: gone(procs), 10, "the closed pane's shell and sleep to exit")


def test_closing_the_last_pane_of_a_tab_removes_the_tab(runtime: Runtime) -> None:
    """R3.4: the tab of a closed last pane goes; the window keeps its other tab."""
    runtime.ok("tab.new")
    closed = runtime.ok("pane.close", {"pane_id": 2})
    assert closed["tab_closed"] is True and closed["window_closed"] is False
    tabs = window_of(runtime.snapshot(), 1)["tabs"]
    assert [t["tab_index"] for t in tabs] == [0]
    assert tabs[0]["active"]


def test_closing_the_last_pane_of_a_window_removes_the_window(runtime: Runtime) -> None:
    """R3.4, R3.1: the window of a closed last pane goes; focus falls back to window 1."""
    runtime.ok("window.create")
    closed = runtime.ok("pane.close", {"window_id": 2, "pane_id": 1})
    assert closed["tab_closed"] is True and closed["window_closed"] is True
    snap = runtime.snapshot()
    assert [w["window_id"] for w in snap["windows"]] == [1]
    assert snap["focused_window_id"] == 1


def test_window_close_closes_an_idle_window(runtime: Runtime) -> None:
    """R3.1: window.close of an idle window; its shell exits; ids are not reused."""
    runtime.ok("window.create")
    at_prompt(runtime, 1, 2)
    procs = pane_processes(runtime, 1, 2)
    assert runtime.ok("window.close", {"window_id": 2})["closed_pane_ids"] == [1]
    snap = runtime.snapshot()
    assert [w["window_id"] for w in snap["windows"]] == [1]
    assert snap["focused_window_id"] == 1
    wait_for(lambda: gone(procs), 10, "the closed window's shell to exit")
    assert runtime.ok("window.create")["window_id"] == 3


def test_window_close_of_a_busy_window_needs_confirmation(runtime: Runtime) -> None:
    """R3.1: a window with a busy pane -> confirmation_required, and nothing changes."""
    runtime.ok("window.create")
    procs = start_sleep(runtime, 1, 2)
    before = runtime.snapshot()
    error = runtime.error("window.close", {"window_id": 2})
    assert error["code"] == "confirmation_required"
    assert error["details"]["busy_panes"] == [
        {"window_id": 2, "pane_id": 1, "task_state": "running"}
    ]
    assert runtime.snapshot()["revision"] == before["revision"]
    assert all(p.is_running() for p in procs)


def test_window_close_with_confirm_kills_the_busy_command(runtime: Runtime) -> None:
    """R3.1: `confirm: true` closes a busy window; its shell and `sleep 30` are gone."""
    runtime.ok("window.create")
    procs = start_sleep(runtime, 1, 2)
    runtime.ok("window.close", {"window_id": 2, "confirm": True})
    assert [w["window_id"] for w in runtime.snapshot()["windows"]] == [1]
    wait_for(lambda: gone(procs), 10, "the closed window's shell and sleep to exit")


# -- focus -----------------------------------------------------------------------------------------


def test_window_focus_by_window_id(runtime: Runtime) -> None:
    """R3.1: window.focus(window_id) moves focused_window_id and the focused flags."""
    runtime.ok("window.create")
    focused = runtime.ok("window.focus", {"window_id": 1})
    assert focused == {"window_id": 1, "tab_index": 0, "pane_id": 1}
    snap = runtime.snapshot()
    assert snap["focused_window_id"] == 1
    assert [w["focused"] for w in snap["windows"]] == [True, False]
    assert focused_panes(snap) == [(1, 1)]


def test_window_focus_by_pane_id_activates_its_tab(runtime: Runtime) -> None:
    """R3.1: window.focus(window_id, pane_id) focuses the pane, its tab and its window."""
    runtime.ok("tab.new", {"window_id": 1})  # window 1: tab 1 (pane 2) active
    runtime.ok("window.create")  # window 2 focused
    focused = runtime.ok("window.focus", {"window_id": 1, "pane_id": 1})
    assert focused == {"window_id": 1, "tab_index": 0, "pane_id": 1}
    snap = runtime.snapshot()
    assert snap["focused_window_id"] == 1
    assert [t["active"] for t in window_of(snap, 1)["tabs"]] == [True, False]
    assert focused_panes(snap) == [(1, 1)]


# -- revision --------------------------------------------------------------------------------------


def test_revision_increases_on_each_real_change(runtime: Runtime) -> None:
    """R2.6: split, tab.new, focus and a submitted prompt each bump the revision."""
    at_prompt(runtime)
    seen = [revision(runtime)]
    runtime.ok("pane.split", {"pane_id": 1, "direction": "down"})
    seen.append(revision(runtime))
    runtime.ok("tab.new")
    seen.append(revision(runtime))
    runtime.ok("window.focus", {"window_id": 1, "pane_id": 1})
    seen.append(revision(runtime))
    runtime.ok("pane.prompt", {"pane_id": 1, "text": "sleep 5"})
    seen.append(revision(runtime))
    assert seen == sorted(set(seen)), seen


def test_revision_unchanged_by_read_only_calls(runtime: Runtime) -> None:
    """R2.6: snapshot, read, describe, an instant wait and a no-op focus change nothing."""
    at_prompt(runtime)
    before = revision(runtime)
    runtime.ok("runtime.describe")
    runtime.ok("pane.read", {"pane_id": 1})
    runtime.ok("pane.wait", {"pane_id": 1, "state": "settled", "timeout_ms": 1000})
    runtime.ok("window.focus", {"window_id": 1})
    assert revision(runtime) == before


def test_sixteen_idle_panes_leave_revision_unchanged(runtime: Runtime) -> None:
    """R2.6: 16 idle panes at their prompt do not move the revision for 2 s."""
    panes = [(1, 1)]
    for _ in range(3):
        panes.append((1, runtime.ok("tab.new")["pane_id"]))
    for _, first in list(panes):
        target = first
        for direction in ("right", "down", "right"):
            target = runtime.ok("pane.split", {"pane_id": target, "direction": direction})[
                "pane_id"
            ]
            panes.append((1, target))
    assert len(panes) == 16
    assert len(panes_of(runtime.snapshot())) == 16
    for window_id, pane_id in panes:
        at_prompt(runtime, pane_id, window_id)
    before = runtime.snapshot()
    assert_never(
        lambda: revision(runtime) != before["revision"],
        2,
        "R2.6 names the window: idle panes leave the revision alone for 2 s",
        interval_s=0.1,
    )
    assert runtime.snapshot() == before
