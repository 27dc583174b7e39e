"""Helpers for tests that poll a pane over one persistent connection."""

from __future__ import annotations

import re
import time
from typing import Any

from pebrel.client import Client

_TICK = re.compile(r"^tick-(\d+)$", re.M)


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
    how many reads were made."""
    seen: list[int] = []
    asked = 0
    while not seen or seen[-1] < last:
        text = ok(client, "pane.read", params)["text"]
        asked += 1
        ticks = [int(t) for t in _TICK.findall(text)]
        if ticks:
            assert ticks == list(range(ticks[0], ticks[-1] + 1))  # one consistent screen
            assert not seen or ticks[-1] >= seen[-1], (seen[-1], ticks)
            seen.append(ticks[-1])
        if pause_s:
            time.sleep(pause_s)  # poll interval
    return seen, asked
