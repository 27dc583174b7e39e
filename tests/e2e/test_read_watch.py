"""pane.read of a pane whose output goes on: reads are answered from the screen the pane's
worker publishes (``workers/publisher.py``), never waiting for a busy worker, and a read after a
completed wait still sees the command's end (R4.4, R5.3; issue 6 item 5, #19)."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import pytest

from tests.conftest import Runtime, at_prompt, wait_for
from tests.e2e.polling import follow_ticks
from tests.e2e.test_robustness import worker_of

pytestmark = pytest.mark.timeout(120)


def read(rt: Runtime, **params: Any) -> dict[str, Any]:
    return rt.ok("pane.read", {"pane_id": 1, "lines": 24, **params})


def test_read_after_a_completed_wait_sees_the_end_of_a_flood_while_reads_go_on(
    runtime: Runtime,
) -> None:
    """Reads taken while the output runs are answered from the published screen; the last
    publication goes out before the shell's done mark, so the read after the wait has it all."""
    at_prompt(runtime)
    client = runtime.client()
    for round_ in range(10):
        read(runtime)  # a kept read
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
    assert len(set(seen)) > 10  # published as the loop went on, not once at the end
    waited = client.call(
        "pane.wait",
        {"pane_id": 1, "state": "settled", "after_seq": prompt["result"]["state_change_seq"]},
    )
    assert waited["ok"], waited
    assert "tick-150" in read(runtime)["lines"]


def test_a_read_after_typing_shows_what_the_terminal_echoed(runtime: Runtime) -> None:
    """A read right after an input write (its answer given) shows the echo the terminal made
    of it: the kernel echoes typing to a program in cooked mode (here `cat`) as the bytes are
    written, and until the worker publishes output that came after the write, reads go to the
    worker, which takes in all the output there is first (#19). Each round types while an
    earlier line's output is still being published."""
    at_prompt(runtime)
    client = runtime.client()
    started = client.call("pane.prompt", {"pane_id": 1, "text": "cat > /dev/null"})
    assert started["ok"], started
    wait_for(lambda: cat_in_foreground(runtime), 10, "cat in the terminal's foreground")
    for round_ in range(20):
        typed = client.call(
            "pane.prompt", {"pane_id": 1, "text": f"typed-{round_}", "submit": False}
        )
        assert typed["ok"] and typed["result"]["written"], typed
        lines = client.call("pane.read", {"pane_id": 1, "lines": 5})["result"]["lines"]
        assert lines[-1].endswith(f"typed-{round_}"), (round_, lines)
        entered = client.call("pane.send_key", {"pane_id": 1, "key": "enter"})
        assert entered["ok"], entered
    key = {"pane_id": 1, "key": "c", "modifiers": {"control": True}}
    assert client.call("pane.send_key", key)["ok"]


def cat_in_foreground(rt: Runtime) -> bool:
    procs = rt.ok("pane.procs", {"pane_id": 1})["processes"]
    return any(p["name"] == "cat" and p["foreground"] for p in procs)


def test_reads_of_every_line_count_follow_the_screen(runtime: Runtime) -> None:
    """A publication replaces every kept answer, so reads of each line count after a change
    are fresh, the longer ones (asked of the worker) too."""
    at_prompt(runtime)
    read(runtime, lines=5)
    read(runtime, lines=40)
    read(runtime, lines=1500)
    runtime.run(1, "echo first-change")
    assert "first-change" in read(runtime, lines=5)["text"]
    assert "first-change" in read(runtime, lines=40)["text"]
    assert "first-change" in read(runtime, lines=1500)["text"]
    runtime.run(1, "echo second-change")
    assert "second-change" in read(runtime, lines=1500)["text"]
    assert "second-change" in read(runtime, lines=40)["text"]
    assert "second-change" in read(runtime, lines=5)["text"]


def test_a_pane_whose_worker_cannot_run_is_still_read_from_its_published_screen(
    runtime: Runtime,
) -> None:
    """#19: a read never waits for the pane's worker. Its worker stopped (as a worker that gets
    no CPU behind a flood, only longer), the pane is still read at once, from the screen
    the worker published last, which says when it was captured."""
    at_prompt(runtime)
    runtime.run(1, "seq 1 300; echo before-the-stop")
    worker = worker_of(runtime, 1)
    before = time.time()
    os.kill(worker.pid, signal.SIGSTOP)
    try:
        wait_for(lambda: worker.status() == "stopped", 10, "the worker stopped")
        client = runtime.client()
        for lines in (2, 24, 120):
            answer = client.call("pane.read", {"pane_id": 1, "lines": lines}, timeout_s=5)
            assert answer["ok"], answer
            result = answer["result"]
            assert result["returned_lines"] == lines and "before-the-stop" in result["text"]
            assert result["screen_captured_at"] <= before
        snapshot = client.call("runtime.snapshot", {}, timeout_s=5)
        assert snapshot["ok"], snapshot
    finally:
        os.kill(worker.pid, signal.SIGCONT)
    assert "before-the-stop" in read(runtime)["text"]
