"""pane.read of a pane whose output goes on: the router's kept answer is renewed by the worker
(``workers/readwatch.py``), and a read after a completed wait still sees the command's end
(R4.4, R5.3; issue 6 item 5)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Runtime, at_prompt
from tests.e2e.polling import follow_ticks

pytestmark = pytest.mark.timeout(120)


def read(rt: Runtime, **params: Any) -> dict[str, Any]:
    return rt.ok("pane.read", {"pane_id": 1, "lines": 24, **params})


def test_read_after_a_completed_wait_sees_the_end_of_a_flood_while_reads_are_watched(
    runtime: Runtime,
) -> None:
    """Reads taken while the output runs are answered from the copy the worker keeps current;
    the copy goes out before the shell's done mark, so the read after the wait has it all."""
    at_prompt(runtime)
    client = runtime.client()
    for round_ in range(10):
        read(runtime)  # a kept, watched read
        end = f"END-{round_}-of-the-flood"
        prompt = client.call(
            "pane.prompt", {"pane_id": 1, "text": f"seq 1 {20000 + round_}; echo {end}"}
        )
        assert prompt["ok"], prompt
        for _ in range(5):  # reads during the flood, on the same connection
            during = client.call("pane.read", {"pane_id": 1, "lines": 24})
            assert during["ok"], during
        waited = client.call(
            "pane.wait",
            {"pane_id": 1, "state": "settled", "after_seq": prompt["result"]["state_change_seq"]},
        )
        assert waited["ok"], waited
        after = client.call("pane.read", {"pane_id": 1, "lines": 24})
        assert after["ok"], after
        text = after["result"]["text"]
        assert end in text, text
        assert f"\n{20000 + round_}\n" in text, text


def test_reads_follow_output_that_goes_on(runtime: Runtime) -> None:
    """A pane printing a line every few ms: repeated reads see it advance (never go back),
    and once the loop is done the last line is there."""
    at_prompt(runtime)
    client = runtime.client()
    prompt = client.call(
        "pane.prompt",
        {"pane_id": 1, "text": "for i in $(seq 1 150); do echo tick-$i; sleep 0.01; done"},
    )
    assert prompt["ok"], prompt
    seen, _ = follow_ticks(client, {"pane_id": 1, "lines": 24}, 150)
    assert len(set(seen)) > 10  # the copy was renewed as the loop went on, not once at the end
    waited = client.call(
        "pane.wait",
        {"pane_id": 1, "state": "settled", "after_seq": prompt["result"]["state_change_seq"]},
    )
    assert waited["ok"], waited
    assert "tick-150" in read(runtime)["lines"]


def test_reads_of_other_line_counts_are_not_served_from_the_watched_one(
    runtime: Runtime,
) -> None:
    """Only one read is watched; an update replaces every kept answer, so a read of another
    line count after a change is fresh too."""
    at_prompt(runtime)
    read(runtime, lines=5)
    read(runtime, lines=40)  # now the watched one
    runtime.run(1, "echo first-change")
    assert "first-change" in read(runtime, lines=5)["text"]
    assert "first-change" in read(runtime, lines=40)["text"]
    runtime.run(1, "echo second-change")
    assert "second-change" in read(runtime, lines=40)["text"]
    assert "second-change" in read(runtime, lines=5)["text"]
