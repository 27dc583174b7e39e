"""Helpers for tests that poll a pane over one persistent connection."""

from __future__ import annotations

import re
from typing import Any

from pebrel.client import Client
from tests.conftest import wait_for

_TICK = re.compile(r"^tick-(\d+)$", re.M)
#: How long follow_ticks reads before it fails (the pytest timeout is 120 s).
FOLLOW_TIMEOUT_S = 90


def ok(client: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    envelope = client.call(method, params)
    assert envelope["ok"], envelope
    result: dict[str, Any] = envelope["result"]
    return result


def follow_ticks(
    client: Client, params: dict[str, Any], last: int, pause_s: float = 0.0
) -> tuple[list[int], int]:
    """Read the pane until its screen shows ``tick-<last>``; every screen must hold one unbroken
    run of ticks and never go back. Returns the newest tick of each read that showed one, and
    how many reads were made (one every `pause_s`, for at most FOLLOW_TIMEOUT_S)."""
    seen: list[int] = []
    asked = 0

    def reached_last() -> bool:
        nonlocal asked
        text = ok(client, "pane.read", params)["text"]
        asked += 1
        ticks = [int(t) for t in _TICK.findall(text)]
        if ticks:
            assert ticks == list(range(ticks[0], ticks[-1] + 1))  # one consistent screen
            assert not seen or ticks[-1] >= seen[-1], (seen[-1], ticks)
            seen.append(ticks[-1])
        return bool(seen) and seen[-1] >= last

    wait_for(reached_last, FOLLOW_TIMEOUT_S, f"tick-{last}", interval_s=pause_s)
    return seen, asked
