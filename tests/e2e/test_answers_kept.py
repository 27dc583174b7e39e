"""Repeated pane.read and runtime.snapshot requests answered by the frontend adapter from the
router's reusable answers (router/answers.py; R4.4, R2.6; issue 6 item 5): they never reach
the router, and a change is seen by the first request after the one that made it."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import pytest

from pebrel.client import Client
from tests.conftest import Runtime, at_prompt, base_env, started_runtime, wait_for
from tests.e2e.polling import follow_ticks, ok

pytestmark = pytest.mark.timeout(120)


def _router_requests(rt: Runtime, method: str) -> int:
    log = (rt.data_dir / "runtime.log").read_text(errors="replace")
    return len(re.findall(rf"router\[\d+\] DEBUG .*request {re.escape(method)} ", log))


def test_repeats_are_answered_without_the_router(tmp_path: Path) -> None:
    env = {**base_env(tmp_path), "PEBREL_LOG_LEVEL": "DEBUG"}
    with started_runtime(env) as rt:
        at_prompt(rt)
        client = rt.client()

        def call(method: str, params: dict[str, Any]) -> dict[str, Any]:
            return ok(client, method, params)

        first = call("pane.read", {"pane_id": 1, "lines": 24})
        snapshot = call("runtime.snapshot", {})
        reads, snapshots = (
            _router_requests(rt, "pane.read"),
            _router_requests(rt, "runtime.snapshot"),
        )
        assert reads >= 1 and snapshots >= 1
        for _ in range(20):
            assert call("pane.read", {"lines": 24, "pane_id": 1}) == first
            assert call("runtime.snapshot", {}) == snapshot
        assert _router_requests(rt, "pane.read") == reads
        assert _router_requests(rt, "runtime.snapshot") == snapshots
        # other params are another question
        call("pane.read", {"pane_id": 1, "lines": 23})
        assert _router_requests(rt, "pane.read") == reads + 1


def test_a_change_is_seen_by_the_next_request(runtime: Runtime) -> None:
    at_prompt(runtime)
    client = runtime.client()

    def call(method: str, params: dict[str, Any]) -> dict[str, Any]:
        return ok(client, method, params)

    for round_ in range(8):
        before = call("runtime.snapshot", {})
        call("runtime.snapshot", {})  # kept by the adapter now
        name = f"renamed-{round_}"
        call("tab.rename", {"window_id": 1, "tab_index": 0, "name": name})
        after = call("runtime.snapshot", {})
        assert after["revision"] > before["revision"]
        assert after["windows"][0]["tabs"][0]["name"] == name
        call("pane.read", {"pane_id": 1, "lines": 10})
        call("pane.read", {"pane_id": 1, "lines": 10})  # kept
        call("pane.run", {"pane_id": 1, "command": f"echo printed-{round_}"})
        read = call("pane.read", {"pane_id": 1, "lines": 10})
        assert f"printed-{round_}" in read["text"]
        assert read["task_state"] != "running"


def test_a_kept_answer_does_not_stand_for_params_of_another_type(runtime: Runtime) -> None:
    at_prompt(runtime)
    assert runtime.ok("pane.read", {"pane_id": 1, "lines": 1})["requested_lines"] == 1
    assert runtime.ok("pane.read", {"pane_id": 1, "lines": 1})["requested_lines"] == 1
    error = runtime.error("pane.read", {"pane_id": 1, "lines": True})
    assert error["code"] == "invalid_params"


def test_a_closed_pane_is_not_read_from_a_kept_answer(runtime: Runtime) -> None:
    at_prompt(runtime)
    split = runtime.ok("pane.split", {"pane_id": 1, "direction": "right"})
    pane = split["pane_id"]
    runtime.ok("pane.read", {"pane_id": pane, "lines": 5})
    runtime.ok("pane.read", {"pane_id": pane, "lines": 5})
    runtime.ok("pane.close", {"pane_id": pane})
    assert runtime.error("pane.read", {"pane_id": pane, "lines": 5})["code"] == "target_not_found"


def test_output_without_any_state_change_is_seen(runtime: Runtime) -> None:
    """Output from a background job changes only the screen (no mark, no revision): the
    worker's change report makes the adapter drop its kept read, watch lapsed or not."""
    at_prompt(runtime)
    runtime.run(1, "(sleep 2.5; echo late-output-$((6 * 7))) &")  # the line shows no 42
    client = runtime.client()

    def late_output() -> str | None:  # every read the same request
        text: str = ok(client, "pane.read", {"pane_id": 1, "lines": 10})["text"]
        return text if "late-output-42" in text else None

    wait_for(late_output, 8, "the background job's output in a repeated read")


def test_reads_of_a_pane_whose_output_goes_on_are_renewed_in_the_adapter(tmp_path: Path) -> None:
    """The worker publishes its screen as it changes and the router passes the new answers to
    the adapter: a client polling a busy pane sees it advance while few of its reads reach the
    router, for longer than the router renews unreported reads (the adapter reports the reads
    it answers)."""
    env = {**base_env(tmp_path), "PEBREL_LOG_LEVEL": "DEBUG"}
    with started_runtime(env) as rt:
        at_prompt(rt)
        client = rt.client()
        params = {"window_id": 1, "pane_id": 1, "lines": 24}
        prompt = client.call(
            "pane.prompt",
            {"pane_id": 1, "text": "for i in $(seq 1 300); do echo tick-$i; sleep 0.01; done"},
        )
        assert prompt["ok"], prompt
        before = _router_requests(rt, "pane.read")
        seen, asked = follow_ticks(client, params, 300, pause_s=0.002)
        assert len(set(seen)) > 50
        routed = _router_requests(rt, "pane.read") - before
        assert routed * 10 < asked, (routed, asked)


def test_reads_naming_no_window_in_flight_when_another_pane_1_appears_are_answered(
    runtime: Runtime,
) -> None:
    """A read that resolved its pane before another window's pane 1 existed still gets its
    answer (it must not be kept: the same request is ambiguous from then on)."""
    at_prompt(runtime)
    stop = threading.Event()
    problems: list[str] = []
    codes: list[str] = []

    def hammer(first: int, reading: threading.Event) -> None:
        with Client(runtime.data_dir, timeout_s=5) as client:
            lines = first
            while not stop.is_set():
                lines = lines % 2000 + 1  # a new line count each time: the worker answers
                try:
                    envelope = client.call("pane.read", {"pane_id": 1, "lines": lines})
                except OSError as exc:
                    problems.append(f"pane.read lines={lines}: {exc!r}")
                    return
                if not envelope["ok"]:
                    codes.append(envelope["error"]["code"])
                    return
                reading.set()

    reading = [threading.Event() for _ in range(4)]
    threads = [threading.Thread(target=hammer, args=(500 * n, reading[n])) for n in range(4)]
    for thread in threads:
        thread.start()
    try:
        for event in reading:  # every reader has had an answer and keeps reading
            assert event.wait(10)
        runtime.ok("window.create", {})
        wait_for(  # each reader stops at its first error
            lambda: len(codes) == len(threads) or problems,
            10,
            "every reader's first error",
            interval_s=0.05,
        )
    finally:
        stop.set()
        for thread in threads:
            thread.join(15)
    assert problems == []
    assert codes == ["ambiguous_target"] * len(threads)
    assert runtime.error("pane.read", {"pane_id": 1, "lines": 7})["code"] == "ambiguous_target"


def test_reads_of_other_line_counts_racing_a_run_never_leave_its_end_out(
    runtime: Runtime,
) -> None:
    """Reads on other connections keep the worker answering and renewing while each command
    runs; the reads after every completed run must all show its last line."""
    at_prompt(runtime)
    stop = threading.Event()

    def hammer() -> None:
        with Client(runtime.data_dir) as client:
            count = 0
            while not stop.is_set():
                count += 1
                client.call("pane.read", {"pane_id": 1, "lines": 20 + count % 3})

    threads = [threading.Thread(target=hammer) for _ in range(3)]
    for thread in threads:
        thread.start()
    client = runtime.client()
    try:
        for round_ in range(30):
            end = f"END-{round_}-X"
            ok(client, "pane.run", {"pane_id": 1, "command": f"seq 1 {2000 + round_}; echo {end}"})
            for lines in (20, 21, 22, 24):
                text = ok(client, "pane.read", {"pane_id": 1, "lines": lines})["text"]
                assert end in text, (round_, lines, text[-200:])
    finally:
        stop.set()
        for thread in threads:
            thread.join(15)
