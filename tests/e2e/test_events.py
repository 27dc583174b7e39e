"""events.subscribe and `pebrel ctl subscribe` (R2.6, R2.7)."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from pebrel.client import Client
from tests.conftest import PEBREL, Runtime, base_env, stop_and_check


class Subscriber:
    """A raw subscription connection reading event lines with deadlines."""

    def __init__(self, rt: Runtime, params: dict[str, Any] | None = None) -> None:
        info = json.loads((rt.data_dir / "runtime.port").read_text())
        self.sock = socket.create_connection(("127.0.0.1", info["port"]), timeout=10)
        self.buffer = b""
        request = {
            "protocol": "nebula.runtime",
            "version": 1,
            "id": "sub",
            "token": info["token"],
            "method": "events.subscribe",
            "params": params or {},
        }
        self.sock.sendall(json.dumps(request).encode() + b"\n")
        self.ack = self.line(10)

    def raw_line(self, timeout_s: float) -> bytes | None:
        """The next line; b"" at EOF; None if none arrived within `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(1 << 16)
            except TimeoutError:
                return None
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                return b""
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line

    def line(self, timeout_s: float) -> dict[str, Any]:
        raw = self.raw_line(timeout_s)
        assert raw, "no line (timeout or subscription closed)"
        loaded: dict[str, Any] = json.loads(raw)
        return loaded

    def nothing_for(self, seconds: float) -> bool:
        raw = self.raw_line(seconds)
        assert raw is None, f"unexpected line: {raw[:200]!r}"
        return True

    def close(self) -> None:
        self.sock.close()


def test_ack_then_current_snapshot_then_one_event_per_revision(runtime: Runtime) -> None:
    """R2.7: the first line is the ack; then the current snapshot; then one event per change."""
    sub = Subscriber(runtime)
    try:
        assert sub.ack["ok"] is True and sub.ack["id"] == "sub"
        current = sub.ack["result"]["revision"]
        first = sub.line(10)
        assert first["type"] == "event" and first["event"] == "runtime.snapshot"
        assert first["revision"] == current == first["snapshot"]["revision"]
        runtime.ok("tab.rename", {"tab_index": 0, "name": "one"})
        runtime.ok("tab.rename", {"tab_index": 0, "name": "two"})
        second, third = sub.line(10), sub.line(10)
        assert (second["revision"], third["revision"]) == (current + 1, current + 2)
        assert third["snapshot"]["windows"][0]["tabs"][0]["custom_name"] == "two"
    finally:
        sub.close()


def test_no_events_while_nothing_changes(runtime: Runtime) -> None:
    """R2.6/R2.7: read-only calls and a repeated rename produce no event (waits 1.5 s twice)."""
    runtime.run(1, "true")
    sub = Subscriber(runtime, {"since_revision": runtime.snapshot()["revision"]})
    try:
        runtime.ok("runtime.snapshot")
        runtime.ok("pane.read", {"window_id": 1, "pane_id": 1})
        assert sub.nothing_for(1.5)
        runtime.ok("tab.rename", {"tab_index": 0, "name": "same"})
        event = sub.line(10)
        runtime.ok("tab.rename", {"tab_index": 0, "name": "same"})
        assert sub.nothing_for(1.5)
        assert event["snapshot"]["windows"][0]["tabs"][0]["custom_name"] == "same"
    finally:
        sub.close()


def test_since_from_another_runtime_life_gets_the_snapshot_at_once(runtime: Runtime) -> None:
    """R2.7: a since_revision that belongs to another runtime_id is no baseline."""
    current = runtime.snapshot()["revision"]
    sub = Subscriber(runtime, {"since_revision": current, "runtime_id": "0000000000000000"})
    try:
        assert sub.line(10)["revision"] == current
    finally:
        sub.close()


def test_two_subscribers_get_the_same_events(runtime: Runtime) -> None:
    """R2.7: fan-out: each subscriber sees every revision once."""
    current = runtime.snapshot()["revision"]
    subs = [Subscriber(runtime, {"since_revision": current}) for _ in range(2)]
    try:
        runtime.ok("pane.split", {"window_id": 1, "pane_id": 1, "direction": "right"})
        seen = [s.line(10)["revision"] for s in subs]
        assert seen == [current + 1, current + 1]
    finally:
        for sub in subs:
            sub.close()


def test_bad_params_get_invalid_params(runtime: Runtime) -> None:
    """R2.3: unknown fields and negative revisions are refused."""
    assert runtime.error("events.subscribe", {"since": 3})["code"] == "invalid_params"
    bad = runtime.error("events.subscribe", {"since_revision": -1})
    assert bad["code"] == "invalid_params"


def test_cli_subscribe_prints_ack_and_events(runtime: Runtime) -> None:
    """R8.3: `pebrel ctl subscribe --count 2` prints the ack and two events, then exits 0."""
    proc = subprocess.Popen(
        [PEBREL, "ctl", "subscribe", "--count", "2"],
        env=runtime.env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ack = json.loads(proc.stdout.readline())
        assert ack["ok"] is True
        json.loads(proc.stdout.readline())  # the current snapshot
        runtime.ok("tab.rename", {"tab_index": 0, "name": "cli"})
        event = json.loads(proc.stdout.readline())
        assert event["snapshot"]["windows"][0]["tabs"][0]["custom_name"] == "cli"
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.fixture
def small_backlog_runtime(tmp_path: Path) -> Any:
    env = {**base_env(tmp_path), "PEBREL_SLOW_CONSUMER_BYTES": "65536"}
    rt = Runtime(Path(env["PEBREL_DATA_DIR"]), env)
    assert rt.cli("runtime", "start").code == 0
    try:
        yield rt
    finally:
        stop_and_check(rt)


def test_slow_subscriber_is_dropped_without_stalling_others(small_backlog_runtime: Runtime) -> None:
    """R2.7: a subscriber that never reads gets slow_consumer; others and the router go on."""
    rt = small_backlog_runtime
    slow = Subscriber(rt)
    fast = Subscriber(rt)
    try:
        fast.line(10)
        for pane in range(8):
            rt.ok("pane.split", {"window_id": 1, "pane_id": 1 + pane, "direction": "down"})
        # Each event carries a 9-pane snapshot (~3 KB): 3000 of them (~10 MB) exceed what the
        # kernel buffers on loopback for a reader that never reads, plus the 64 KiB backlog.
        with Client(rt.data_dir) as client:
            for count in range(3000):
                assert client.call("tab.rename", {"tab_index": 0, "name": f"n{count}"})["ok"]
                assert fast.line(10)["type"] == "event"
        assert slow_was_dropped(slow)
        assert rt.ok("runtime.describe")["app"] == "pebrel"
    finally:
        slow.close()
        fast.close()


def slow_was_dropped(sub: Subscriber) -> bool:
    """Drain what the slow subscriber was sent; True once it ends with slow_consumer + EOF."""
    last = b""
    while True:
        raw = sub.raw_line(5)
        if raw is None:
            return False
        if raw == b"":
            return b"slow_consumer" in last
        last = raw
