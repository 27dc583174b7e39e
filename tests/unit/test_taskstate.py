"""Case tables for `pebrel.taskstate.ShellTracker`, the pure task-state bookkeeping (R5.1-R5.4).

Each row is a sequence of facts written as short words, fed to a fresh tracker:

- `submit@T`: a prompt with Enter was written at time T (seconds);
- `expire@T`: the router's expiry timer fired at time T;
- `A`, `B`, `C`: OSC 133 marks; `D` a done mark without exit code, `D0`, `D1`, ... with one;
- `fg+` / `fg-`: the shell got / lost the PTY's foreground process group;
- `exit0`, `exit1`, `exit?`: the shell exited (with that status, `?` unknown);
- `p:STATE`: the foreground program's status implies STATE (OSC 7501, #20); `p:-` it reports
  nothing any more; `pleft`: its records ended because it left the foreground.

The end-to-end tests in tests/e2e/test_taskstate.py prove the same rules against real shells.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import pytest

from pebrel.model import SUBMIT_CONFIRM_MS
from pebrel.taskstate import ShellTracker, matches, strongest

EDGE_S = SUBMIT_CONFIRM_MS / 1000


def feed(tracker: ShellTracker, events: tuple[str, ...]) -> list[bool]:
    """Apply each fact; return what each call said about a transition."""
    said = []
    for event in events:
        if event.startswith("submit@"):
            said.append(tracker.submit(float(event.removeprefix("submit@"))))
        elif event.startswith("expire@"):
            said.append(tracker.expire(float(event.removeprefix("expire@"))))
        elif event in ("fg+", "fg-"):
            said.append(tracker.foreground(event == "fg+"))
        elif event.startswith("exit"):
            code = event.removeprefix("exit")
            said.append(tracker.exited(None if code == "?" else int(code)))
        elif event.startswith("p:"):
            state = event.removeprefix("p:")
            said.append(tracker.set_program(None if state == "-" else state))  # type: ignore[arg-type]
        elif event == "pleft":
            said.append(tracker.set_program(None, left=True))
        elif event[0] in "ABCD":
            said.append(tracker.mark(event[0], int(event[1:]) if event[1:] else None))
        else:
            raise ValueError(event)
    return said


def tracker_of(integrated: bool, events: tuple[str, ...]) -> ShellTracker:
    tracker = ShellTracker()
    tracker.integrated = integrated
    feed(tracker, events)
    return tracker


class Case(NamedTuple):
    id: str
    integrated: bool
    events: tuple[str, ...]
    state: str
    seq: int


CASES = [
    Case("fresh-pane-idle-at-1", True, (), "idle", 1),
    Case("prompt-marks-change-nothing", True, ("A", "B", "A"), "idle", 1),
    Case("submit-running-edge", True, ("submit@0",), "running", 2),
    Case("submit-C-is-the-same-running", True, ("submit@0", "C"), "running", 2),
    Case("submit-C-D0-completed", True, ("submit@0", "C", "D0"), "completed", 3),
    Case("submit-C-D1-failed", True, ("submit@0", "C", "D1"), "failed", 3),
    Case("submit-C-D-without-code-idle", True, ("submit@0", "C", "D"), "idle", 3),
    Case("C-D0-without-submit", True, ("C", "D0"), "completed", 3),
    Case("true-false-true", True, ("C", "D0", "C", "D1", "C", "D0"), "completed", 7),
    Case("completed-to-completed-is-no-change", True, ("C", "D0", "A", "C", "D0"), "completed", 5),
    Case("D-without-C-ignored", True, ("D0",), "idle", 1),
    Case("D-after-D-ignored", True, ("C", "D0", "D1"), "completed", 3),
    Case("A-after-C-without-D-idle", True, ("C", "A"), "idle", 3),
    Case("B-after-C-without-D-idle", True, ("C", "B"), "idle", 3),
    Case(
        "edge-before-deadline-stays", True, ("submit@0", f"expire@{EDGE_S - 0.001}"), "running", 2
    ),
    Case("edge-reverts-at-deadline", True, ("submit@0", f"expire@{EDGE_S}"), "idle", 3),
    Case(
        "edge-reverts-to-previous-result",
        True,
        ("C", "D1", "submit@10", f"expire@{10 + EDGE_S}"),
        "failed",
        5,
    ),
    Case("confirmed-edge-never-reverts", True, ("submit@0", "C", "expire@5"), "running", 2),
    Case("edge-kept-while-program-owns-fg", True, ("submit@0", "fg-", "expire@5"), "running", 2),
    Case("second-submit-while-running-no-change", True, ("C", "submit@0"), "running", 2),
    Case("integrated-ignores-foreground", True, ("fg-",), "idle", 1),
    Case("fallback-fg-lost-running", False, ("fg-",), "running", 2),
    Case("fallback-fg-back-idle", False, ("fg-", "fg+"), "idle", 3),
    Case("fallback-submit-fg-cycle-idle", False, ("submit@0", "fg-", "fg+"), "idle", 3),
    Case(
        "fallback-no-revert-after-fg-end", False, ("submit@0", "fg-", "fg+", "expire@5"), "idle", 3
    ),
    Case("fallback-unconfirmed-edge-reverts", False, ("submit@0", f"expire@{EDGE_S}"), "idle", 3),
    Case("fallback-fg-back-keeps-pending-edge", False, ("submit@0", "fg+"), "running", 2),
    Case("fallback-after-A-mark-ignores-fg", False, ("A", "fg-"), "idle", 1),
    Case("exit0-while-running-completed", True, ("C", "exit0"), "completed", 3),
    Case("exit1-while-running-failed", True, ("submit@0", "exit1"), "failed", 3),
    Case("exit-unknown-while-running-failed", True, ("C", "exit?"), "failed", 3),
    Case("exit-while-idle-no-change", True, ("exit0",), "idle", 1),
    # program status (#20)
    Case("program-states", True, ("C", "p:running", "p:attention", "p:completed"), "completed", 4),
    Case("program-idle-after-done-sticks", True, ("C", "p:completed", "p:idle"), "completed", 3),
    Case("program-error-then-idle-sticks", True, ("C", "p:failed", "p:idle"), "failed", 3),
    Case("program-exit-code-wins", True, ("C", "p:completed", "D2"), "failed", 4),
    Case("program-left-waits-for-D", True, ("C", "p:attention", "pleft", "D0"), "completed", 4),
    Case("program-cleared-by-itself", True, ("C", "p:attention", "p:-"), "running", 4),
    Case("program-next-command-ends-sticky", True, ("C", "p:completed", "C"), "running", 4),
    Case(
        "program-confirms-an-edge",
        True,
        ("p:idle", "submit@0", "p:running", "expire@5"),
        "running",
        2,
    ),
    Case(
        "program-idle-while-edge-pending",
        True,
        ("p:waiting_input", "submit@0", "p:idle"),
        "running",
        3,
    ),
    Case(
        "program-unconfirmed-edge-reverts",
        True,
        ("p:waiting_input", "submit@0", f"expire@{EDGE_S}"),
        "waiting_input",
        4,
    ),
    Case("fallback-program-states", False, ("fg-", "p:completed", "fg+", "pleft"), "idle", 4),
    Case("program-exit-clears", True, ("p:attention", "exit0"), "idle", 3),
    Case(
        "program-left-late-keeps-a-later-edge",
        True,
        ("C", "p:running", "D0", "A", "submit@10", "pleft", f"expire@{10 + EDGE_S}"),
        "completed",
        5,
    ),
    Case(
        "fallback-program-left-with-an-edge",
        False,
        ("fg-", "p:completed", "submit@0", "fg+", "pleft", "expire@5"),
        "idle",
        5,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_state_and_seq(case: Case) -> None:
    """R5.1, R5.2, R5.4: the projection after a sequence of facts."""
    tracker = tracker_of(case.integrated, case.events)
    assert (tracker.state, tracker.seq) == (case.state, case.seq)
    assert tracker.history[-1] == (case.seq, case.state)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_seq_moves_only_on_real_transitions(case: Case) -> None:
    """R5.2: each call that reports a transition bumps seq by one; the others never do."""
    tracker = ShellTracker()
    tracker.integrated = case.integrated
    said = feed(tracker, case.events)
    assert tracker.seq == 1 + sum(said)
    states = [state for _, state in tracker.history]
    assert all(a != b for a, b in itertools.pairwise(states))
    assert [seq for seq, _ in tracker.history] == list(range(1, tracker.seq + 1))


class ResultCase(NamedTuple):
    id: str
    events: tuple[str, ...]
    results: dict[int, int | None]


RESULTS = [
    ResultCase("none-yet", ("submit@0", "C"), {}),
    ResultCase("codes-by-start-number", ("C", "D0", "C", "D7"), {1: 0, 2: 7}),
    ResultCase("A-without-D-unknown", ("C", "A"), {1: None}),
    ResultCase("D-without-code-unknown", ("C", "D"), {1: None}),
    ResultCase("stray-D-recorded-nowhere", ("D3",), {}),
]


@pytest.mark.parametrize("case", RESULTS, ids=[c.id for c in RESULTS])
def test_results_by_command_number(case: ResultCase) -> None:
    """R6.2: pane.run reads real exit codes by command number; None when none was reported."""
    assert tracker_of(True, case.events).results == case.results


class BarrierCase(NamedTuple):
    id: str
    events: tuple[str, ...]
    now: float
    blocked: bool


BARRIERS = [
    BarrierCase("fresh", (), 0.0, False),
    BarrierCase("just-submitted", ("submit@0",), 0.0, True),
    BarrierCase("before-deadline", ("submit@0",), EDGE_S - 0.001, True),
    BarrierCase("at-deadline", ("submit@0",), EDGE_S, False),
    BarrierCase("confirmed-by-C", ("submit@0", "C"), 0.1, False),
    BarrierCase("submit-while-running", ("C", "submit@0"), 0.1, False),
    BarrierCase("fallback-confirmed-by-fg", ("submit@0", "fg-"), 0.1, False),
    BarrierCase("cleared-by-exit", ("submit@0", "exit0"), 0.1, False),
]


@pytest.mark.parametrize("case", BARRIERS, ids=[c.id for c in BARRIERS])
def test_submit_barrier(case: BarrierCase) -> None:
    """R5.4: a submitted input blocks the next one until confirmed or the 2 s deadline."""
    tracker = tracker_of(False, case.events)
    assert tracker.input_blocked(case.now) is case.blocked


class BusyCase(NamedTuple):
    id: str
    integrated: bool
    events: tuple[str, ...]
    command_active: bool
    busy: bool


BUSY = [
    BusyCase("idle", True, (), False, False),
    BusyCase("edge", True, ("submit@0",), True, True),
    BusyCase("command", True, ("C",), True, True),
    BusyCase("done", True, ("C", "D0"), False, False),
    BusyCase("integrated-fg-program", True, ("fg-",), False, True),
    BusyCase("fallback-fg-program", False, ("fg-",), True, True),
]


@pytest.mark.parametrize("case", BUSY, ids=[c.id for c in BUSY])
def test_busy_and_command_active(case: BusyCase) -> None:
    """R3.1, R3.4: what makes closing a pane need confirmation."""
    tracker = tracker_of(case.integrated, case.events)
    assert (tracker.command_active, tracker.busy) == (case.command_active, case.busy)


#: history: idle@1, running@2, completed@3, running@4, failed@5
HISTORY = ("C", "D0", "C", "D1")


class ObservationCase(NamedTuple):
    id: str
    target: str
    after_seq: int | None
    found: tuple[int, str] | None


OBSERVATIONS = [
    ObservationCase("current-settled", "settled", None, (5, "failed")),
    ObservationCase("current-not-idle", "idle", None, None),
    ObservationCase("current-failed", "failed", None, (5, "failed")),
    ObservationCase("first-settled-after-2", "settled", 2, (3, "completed")),
    ObservationCase("first-settled-after-3", "settled", 3, (5, "failed")),
    ObservationCase("running-after-2", "running", 2, (4, "running")),
    ObservationCase("running-after-1", "running", 1, (2, "running")),
    ObservationCase("completed-not-after-3", "completed", 3, None),
    ObservationCase("nothing-after-current", "settled", 5, None),
    ObservationCase("future-baseline", "settled", 99, None),
    ObservationCase("initial-idle-is-not-after-1", "idle", 1, None),
]


@pytest.mark.parametrize("case", OBSERVATIONS, ids=[c.id for c in OBSERVATIONS])
def test_observation(case: ObservationCase) -> None:
    """R5.3: with after_seq only later transitions count; without it, the current state."""
    tracker = tracker_of(True, HISTORY)
    assert tracker.observation(case.target, case.after_seq) == case.found


class PriorityCase(NamedTuple):
    id: str
    states: list[str]
    strongest: str


PRIORITIES = [
    PriorityCase("none-is-idle", [], "idle"),
    PriorityCase("failed-beats-all", ["idle", "running", "failed", "attention"], "failed"),
    PriorityCase("attention-beats-waiting", ["waiting_input", "attention"], "attention"),
    PriorityCase("waiting-beats-running", ["running", "waiting_input"], "waiting_input"),
    PriorityCase("running-beats-completed", ["completed", "running"], "running"),
    PriorityCase("completed-beats-idle", ["idle", "completed"], "completed"),
]


@pytest.mark.parametrize("case", PRIORITIES, ids=[c.id for c in PRIORITIES])
def test_strongest(case: PriorityCase) -> None:
    """R5.1: failed > attention > waiting_input > running > completed > idle."""
    assert strongest(case.states) == case.strongest  # type: ignore[arg-type]


class MatchCase(NamedTuple):
    target: str
    state: str
    matches: bool


MATCHES = [
    MatchCase("settled", "idle", True),
    MatchCase("settled", "completed", True),
    MatchCase("settled", "failed", True),
    MatchCase("settled", "attention", True),
    MatchCase("settled", "running", False),
    MatchCase("running", "running", True),
    MatchCase("idle", "completed", False),
]


@pytest.mark.parametrize("case", MATCHES, ids=[f"{c.target}-{c.state}" for c in MATCHES])
def test_matches(case: MatchCase) -> None:
    """DESIGN Model: `settled` means "not running"; any other target matches itself."""
    assert matches(case.target, case.state) is case.matches
