"""Stateful fuzzing: a rule-based state machine against one real runtime whose panes all run
`cat` (tests/fuzz/stateful_machine.py says what is drawn and what is checked after every step).

The runtime is started once for the module; each example re-syncs its model from a snapshot
and closes its windows at the end. Budget: the `ci` profile (tests/fuzz/conftest.py) runs
:data:`STATEFUL_BUDGET` ``ci`` (about a minute on two cores); `PEBREL_FUZZ_PROFILE=long` many
more. Steps that once failed are replayed by :func:`test_regression_steps`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from tests.fuzz.conftest import STATEFUL_BUDGET
from tests.fuzz.stateful_machine import Harness, RuntimeMachine, cat_runtime

#: The ci budget takes a minute or two; the long one (3,000 steps) up to half an hour.
pytestmark = pytest.mark.timeout(1800 if settings.get_current_profile_name() == "long" else 600)

#: Step sequences that once broke an invariant, replayed on every run (method, params).
#: Each starts from one fresh window (window W, pane 1); ``W`` is filled in at replay.
REGRESSIONS: dict[str, list[tuple[str, Any]]] = {
    # Issue 15: a NaN ratio was written into the layout before the resize failed, and every
    # later split/zoom of that tab answered internal_error.
    "nan-ratio-then-split-and-zoom": [
        ("pane.split", {"window_id": "W", "pane_id": 1, "direction": "right"}),
        ("pane.resize", {"window_id": "W", "pane_id": 1, "ratio": math.nan}),
        ("pane.resize", {"window_id": "W", "pane_id": 2, "ratio": math.inf}),
        ("pane.split", {"window_id": "W", "pane_id": 2, "direction": "down"}),
        ("pane.zoom", {"window_id": "W", "pane_id": 3, "zoomed": True}),
        ("pane.close", {"window_id": "W", "pane_id": 3}),
    ],
    # Closing panes around a zoomed one, a tab's last pane, then the window.
    "zoom-close-tab-window": [
        ("tab.new", {"window_id": "W", "shell": "false"}),
        ("pane.split", {"window_id": "W", "pane_id": 1, "direction": "down"}),
        ("pane.zoom", {"window_id": "W", "pane_id": 1, "zoomed": True}),
        ("tab.move", {"window_id": "W", "tab_index": 1, "to_index": 0}),
        ("pane.close", {"window_id": "W", "pane_id": 3, "confirm": True}),
        ("tab.close", {"window_id": "W", "tab_index": 0}),
        ("window.close", {"window_id": "W"}),
    ],
}


def _in_window(params: Any, window_id: int) -> Any:
    if isinstance(params, dict) and params.get("window_id") == "W":
        return {**params, "window_id": window_id}
    return params


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    with cat_runtime(Path(tmp_path_factory.mktemp("stateful"))) as rt:
        yield Harness(rt)


def test_the_runtime_follows_the_model(harness: Harness) -> None:
    examples, steps = STATEFUL_BUDGET.get(
        settings.get_current_profile_name(), STATEFUL_BUDGET["ci"]
    )
    budget = settings(settings.default, max_examples=examples, stateful_step_count=steps)
    RuntimeMachine.harness = harness
    try:
        run_state_machine_as_test(RuntimeMachine, settings=budget)
    finally:
        summary = ", ".join(f"{k} {n}" for k, n in sorted(harness.outcomes.items()))
        print(f"stateful fuzz answers: {summary}")


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_regression_steps(harness: Harness, name: str) -> None:
    RuntimeMachine.harness = harness
    machine = RuntimeMachine()
    try:
        (window_id,) = machine.model.windows
        for method, params in REGRESSIONS[name]:
            machine.step(method, _in_window(params, window_id))
            machine.after_every_step()
    finally:
        machine.teardown()
