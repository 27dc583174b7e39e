"""pane.wait_any: the first of several panes to reach a state (#20 item 3), end to end.

Real bash panes; each target keeps pane.wait's race-free baseline rules (R5.3).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.conftest import Runtime, at_prompt, wait_for

pytestmark = pytest.mark.timeout(120)


def three_panes(rt: Runtime) -> list[int]:
    at_prompt(rt)
    for _ in range(2):
        rt.ok("pane.split", {"window_id": 1, "pane_id": 1, "direction": "left_right"})
    ids = [p["pane_id"] for tab in rt.snapshot()["windows"][0]["tabs"] for p in tab["panes"]]
    for pane_id in ids:
        at_prompt(rt, pane_id)
    return sorted(ids)


def targets(rt: Runtime, ids: list[int]) -> list[dict[str, Any]]:
    """Each pane with its current seq as baseline."""
    return [
        {"window_id": 1, "pane_id": i, "after_seq": rt.pane(i)["state_change_seq"]} for i in ids
    ]


def test_the_first_pane_to_change_answers_after_its_own_baseline(runtime: Runtime) -> None:
    ids = three_panes(runtime)
    waits = targets(runtime, ids)
    answer: dict[str, Any] = {}

    def wait() -> None:
        answer.update(
            runtime.ok("pane.wait_any", {"targets": waits, "state": "failed", "timeout_ms": 30000})
        )

    waiter = threading.Thread(target=wait)
    waiter.start()
    runtime.run(ids[0], "true")  # completes, not failed: does not count
    runtime.run(ids[2], "false")
    waiter.join(40)
    assert answer["pane_id"] == ids[2] and answer["index"] == 2 and answer["state"] == "failed"
    assert answer["state_change_seq"] > waits[2]["after_seq"]


def test_already_matching_targets_the_first_listed_wins(runtime: Runtime) -> None:
    ids = three_panes(runtime)
    for pane_id in ids:
        runtime.run(pane_id, "true")
    found = runtime.ok(
        "pane.wait_any",
        {"targets": [{"window_id": 1, "pane_id": i} for i in (ids[1], ids[0])], "state": "settled"},
    )
    assert (found["pane_id"], found["index"]) == (ids[1], 0)
    done = runtime.cli("pane", "wait-any", f"1:{ids[2]}", str(ids[0]), "--state", "settled")
    assert done.code == 0 and done.json["result"]["pane_id"] == ids[2], done


def test_targets_are_checked_before_waiting(runtime: Runtime) -> None:
    ids = three_panes(runtime)
    unknown = runtime.error(
        "pane.wait_any",
        {
            "targets": [{"window_id": 1, "pane_id": ids[0]}, {"window_id": 1, "pane_id": 99}],
            "state": "idle",
        },
    )
    assert unknown["code"] == "target_not_found" and unknown["details"]["index"] == 1
    twice = runtime.error(
        "pane.wait_any",
        {"targets": [{"window_id": 1, "pane_id": ids[0]}, {"pane_id": ids[0]}], "state": "idle"},
    )
    assert twice["code"] == "invalid_params" and twice["details"]["index"] == 1
    ahead = runtime.error(
        "pane.wait_any",
        {"targets": [{"window_id": 1, "pane_id": ids[0], "after_seq": 10_000}], "state": "idle"},
    )
    assert ahead["code"] == "invalid_params" and ahead["details"]["index"] == 0
    late = runtime.error(
        "pane.wait_any",
        {"targets": targets(runtime, ids[:2]), "state": "failed", "timeout_ms": 300},
    )
    assert late["code"] == "timeout"
    assert [t["pane_id"] for t in late["details"]["targets"]] == ids[:2]
    bad = runtime.cli("pane", "wait-any", "1:x", "--state", "idle")
    assert bad.code == 2


def test_targets_that_exited_drop_out_and_none_left_is_invalid_state(runtime: Runtime) -> None:
    """A target whose shell exited will never reach the state: it drops out (the same path as
    one closed while the wait runs); with none left the wait ends at once."""
    ids = three_panes(runtime)
    for pane_id in ids[1:]:
        runtime.ok("pane.prompt", {"window_id": 1, "pane_id": pane_id, "text": "exit"})
    wait_for(lambda: all(runtime.pane(i)["exited"] for i in ids[1:]), 20, "the shells gone")
    gone = runtime.error(
        "pane.wait_any",
        {"targets": [{"window_id": 1, "pane_id": i} for i in ids[1:]], "state": "failed"},
    )
    assert gone["code"] == "invalid_state"
    assert [g["pane_id"] for g in gone["details"]["gone"]] == ids[1:]
    runtime.run(ids[0], "false")
    found = runtime.ok(
        "pane.wait_any",
        {"targets": [{"window_id": 1, "pane_id": i} for i in (ids[1], ids[0])], "state": "failed"},
    )
    assert (found["pane_id"], found["index"]) == (ids[0], 1)
