"""The screen subscription: events.subscribe with ``screens: true`` (#21 item 1).

A subscriber hears which panes published a new screen, coalesced to at most one event every
100 ms, and a plain subscriber hears nothing of it.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.conftest import Runtime, at_prompt
from tests.e2e.test_events import Subscriber
from tests.e2e.test_schema import problems

pytestmark = pytest.mark.timeout(60)


def screen_events(sub: Subscriber, seconds: float) -> list[dict[str, Any]]:
    """Every pane.screens event within `seconds` (snapshot events skipped)."""
    found = []
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        raw = sub.raw_line(left)
        if raw is None:
            break
        assert raw, "the subscription closed"
        line = json.loads(raw)
        if line.get("event") == "pane.screens":
            found.append(line)
    return found


def test_a_screen_subscriber_hears_which_pane_changed(runtime: Runtime) -> None:
    at_prompt(runtime)
    runtime.ok("pane.split", {"pane_id": 1, "direction": "right"})
    at_prompt(runtime, 2)
    sub = Subscriber(runtime, {"screens": True})
    try:
        assert sub.ack["ok"] is True and sub.ack["result"]["screens"] is True
        runtime.ok("pane.prompt", {"pane_id": 2, "text": "echo screen-event-marker"})
        events = screen_events(sub, 2.0)
        assert events, "no pane.screens event after output"
        for event in events:
            assert problems(event, "#/$defs/screens_event") == []
        named = {(p["window_id"], p["pane_id"]) for e in events for p in e["panes"]}
        assert (1, 2) in named  # (pane 1 may publish too: the split resized it)
        captured = max(
            p["screen_captured_at"] for e in events for p in e["panes"] if p["pane_id"] == 2
        )
        read = runtime.ok("pane.read", {"pane_id": 2, "lines": 5})
        assert "screen-event-marker" in read["text"]
        assert read["screen_captured_at"] >= captured
    finally:
        sub.close()


def test_screen_events_are_coalesced_while_a_pane_floods(runtime: Runtime) -> None:
    at_prompt(runtime)
    sub = Subscriber(runtime, {"screens": True})
    try:
        runtime.ok("pane.prompt", {"pane_id": 1, "text": "yes flood"})
        started = time.monotonic()
        events = screen_events(sub, 1.5)
        spent = time.monotonic() - started
        assert len(events) >= 3  # it keeps telling while output flows
        # at most one event per 100 ms (one more for the edges of the window)
        assert len(events) <= spent / 0.1 + 2
        for event in events:
            keys = [(p["window_id"], p["pane_id"]) for p in event["panes"]]
            assert len(keys) == len(set(keys)) == 1
    finally:
        sub.close()
        runtime.ok("pane.send_key", {"pane_id": 1, "key": "c", "modifiers": {"control": True}})


def test_a_plain_subscriber_gets_no_screen_events(runtime: Runtime) -> None:
    at_prompt(runtime)
    sub = Subscriber(runtime)
    try:
        assert sub.ack["result"]["screens"] is False
        runtime.ok("pane.prompt", {"pane_id": 1, "text": "echo quiet-for-plain"})
        assert screen_events(sub, 1.0) == []
    finally:
        sub.close()
