"""ForegroundTracker over a fake /proc: candidates, recheck cadence, cheap idle path."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import pytest

from pebrel.workers.foreground import RECHECK_S, Foreground, ForegroundTracker, group_members

SHELL = 100
SHELL_CMD = ["bash", "--rcfile", "/x/rc"]


@dataclass
class FakeProc:
    procs: dict[int, tuple[int, int, list[str]]] = field(default_factory=dict)  # pid: ppid,pgrp,cmd
    reads: int = 0

    def add(self, pid: int, ppid: int, pgrp: int, cmd: list[str]) -> None:
        self.procs[pid] = (ppid, pgrp, cmd)

    def pgrp(self, pid: int) -> int | None:
        self.reads += 1
        return self.procs[pid][1] if pid in self.procs else None

    def cmdline(self, pid: int) -> list[str] | None:
        self.reads += 1
        return list(self.procs[pid][2]) if pid in self.procs else None

    def children(self, pid: int) -> list[int]:
        self.reads += 1
        return [p for p, (ppid, _, _) in self.procs.items() if ppid == pid]


def fake() -> FakeProc:
    proc = FakeProc()
    proc.add(SHELL, 1, SHELL, SHELL_CMD)
    return proc


class Case(NamedTuple):
    id: str
    procs: list[tuple[int, int, int, list[str]]]  # pid, ppid, pgrp, cmd
    pgid: int
    kind: str | None
    program: str


CASES = [
    Case("plain-agent", [(200, SHELL, 200, ["claude"])], 200, "claude", "claude"),
    Case("node-script", [(200, SHELL, 200, ["node", "/bin/codex"])], 200, "codex", "codex"),
    Case("not-agent", [(200, SHELL, 200, ["vim", "codex.py"])], 200, None, "vim"),
    Case(
        "wrapper-first",
        [(200, SHELL, 200, ["npx", "@openai/codex"]), (201, 200, 200, ["claude"])],
        200,
        "codex",
        "codex",
    ),
    Case(
        "child-of-wrapper",
        [(200, SHELL, 200, ["bash", "./run.sh"]), (201, 200, 200, ["node", "/x/claude"])],
        200,
        "claude",
        "claude",
    ),
    Case(
        "grandchild",
        [
            (200, SHELL, 200, ["make", "agent"]),
            (201, 200, 200, ["sh", "-c", "kimi"]),
            (202, 201, 200, ["kimi"]),
        ],
        200,
        "kimi",
        "kimi",
    ),
    Case(
        "pipeline-sibling",
        [(200, SHELL, 200, ["cat", "task.md"]), (201, SHELL, 200, ["opencode"])],
        200,
        "opencode",
        "opencode",
    ),
    Case(
        "other-group-child-ignored",
        [(200, SHELL, 200, ["sleep", "30"]), (201, 200, 201, ["claude"])],
        200,
        None,
        "sleep",
    ),
    Case(
        "background-job-ignored",
        [(200, SHELL, 200, ["sleep", "30"]), (300, SHELL, 300, ["codex"])],
        200,
        None,
        "sleep",
    ),
    Case("leader-gone", [(201, SHELL, 200, ["pi"])], 200, "pi", "pi"),
    Case("group-gone", [], 200, None, ""),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_classification(case: Case) -> None:
    proc = fake()
    for pid, ppid, pgrp, cmd in case.procs:
        proc.add(pid, ppid, pgrp, cmd)
    tracker = ForegroundTracker(SHELL, proc)
    assert tracker.update(case.pgid, 10.0) == Foreground(False, case.pgid, case.kind, case.program)


def test_group_members_order() -> None:
    proc = fake()
    proc.add(200, SHELL, 200, ["a"])
    proc.add(202, 200, 200, ["b"])
    proc.add(203, 202, 200, ["c"])
    proc.add(201, SHELL, 200, ["d"])
    assert group_members(proc, 200, SHELL) == [200, 202, 203, 201]


def test_idle_shell_reads_nothing() -> None:
    """Apart from the shell's own argv, read once at start, an idle pane reads no /proc."""
    proc = fake()
    tracker = ForegroundTracker(SHELL, proc)
    start_reads = proc.reads
    for step in range(100):
        assert tracker.update(SHELL, step * 0.05) is None
    assert proc.reads == start_reads <= 1


def test_back_to_shell_and_changes_only() -> None:
    proc = fake()
    proc.add(200, SHELL, 200, ["claude"])
    tracker = ForegroundTracker(SHELL, proc)
    assert tracker.update(200, 0.0) == Foreground(False, 200, "claude", "claude")
    assert tracker.update(200, 0.05) is None
    assert tracker.update(SHELL, 0.1) == Foreground(True, SHELL, None, "")
    assert tracker.update(SHELL, 0.15) is None


def test_recognised_agent_recheck_is_cheap_and_throttled() -> None:
    proc = fake()
    proc.add(200, SHELL, 200, ["claude"])
    tracker = ForegroundTracker(SHELL, proc)
    tracker.update(200, 0.0)
    proc.reads = 0
    for step in range(1, 10):  # 50 ms polls inside the recheck interval
        assert tracker.update(200, step * 0.05) is None
    assert proc.reads == 0
    assert tracker.update(200, RECHECK_S + 0.01) is None
    assert proc.reads == 1  # just the leader's cmdline


def test_exec_into_agent_is_caught_on_recheck() -> None:
    proc = fake()
    proc.add(200, SHELL, 200, ["sh", "./start-agent.sh"])
    tracker = ForegroundTracker(SHELL, proc)
    assert tracker.update(200, 0.0) == Foreground(False, 200, None, "start-agent")
    proc.add(200, SHELL, 200, ["codex"])  # exec
    assert tracker.update(200, 0.2) is None  # not before the recheck interval
    assert tracker.update(200, RECHECK_S + 0.01) == Foreground(False, 200, "codex", "codex")


def test_wrapper_spawning_agent_later_is_caught() -> None:
    proc = fake()
    proc.add(200, SHELL, 200, ["bash", "wrap.sh"])
    tracker = ForegroundTracker(SHELL, proc)
    tracker.update(200, 0.0)
    proc.add(201, 200, 200, ["claude"])
    assert tracker.update(200, RECHECK_S + 0.01) == Foreground(False, 200, "claude", "claude")
    del proc.procs[201]  # the agent exits, the wrapper goes on
    assert tracker.update(200, 2 * RECHECK_S + 0.02) == Foreground(False, 200, None, "wrap")


def test_unexeced_fork_is_rechecked_every_poll() -> None:
    proc = fake()
    proc.add(200, SHELL, 200, SHELL_CMD)  # forked by the shell, exec pending
    tracker = ForegroundTracker(SHELL, proc)
    assert tracker.update(200, 0.0) == Foreground(False, 200, None, "bash")
    proc.add(200, SHELL, 200, ["claude"])
    assert tracker.update(200, 0.05) == Foreground(False, 200, "claude", "claude")


def test_new_group_reclassifies_immediately() -> None:
    proc = fake()
    proc.add(200, SHELL, 200, ["sleep", "1"])
    proc.add(300, SHELL, 300, ["codex"])
    tracker = ForegroundTracker(SHELL, proc)
    tracker.update(200, 0.0)
    assert tracker.update(300, 0.05) == Foreground(False, 300, "codex", "codex")
