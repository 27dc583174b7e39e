"""An `events.subscribe` connection with `screens: true`, read without blocking (#21).

`pebrel attach` and `pebrel view` wait on its socket with `select` beside other things (the
user's keys, a deadline) and take whatever event lines have arrived.
"""

from __future__ import annotations

import json
from typing import Any

from pebrel.client import Client


class FeedEnded(Exception):
    """The runtime ended the subscription (say `slow_consumer`) or closed the connection."""


class EventFeed:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.buffer = b""
        client.send("events.subscribe", {"screens": True})
        client.sock.setblocking(False)

    def fileno(self) -> int:
        return self.client.sock.fileno()

    def read(self) -> list[dict[str, Any]]:
        """The event lines that arrived (none if nothing did); FeedEnded when it is over."""
        try:
            chunk = self.client.sock.recv(1 << 16)
        except BlockingIOError:
            return []
        except OSError as exc:
            raise FeedEnded(f"the runtime connection failed: {exc}") from exc
        if not chunk:
            raise FeedEnded("the runtime closed the connection")
        self.buffer += chunk
        events = []
        while b"\n" in self.buffer:
            raw, self.buffer = self.buffer.split(b"\n", 1)
            line = json.loads(raw)
            if line.get("ok") is False:
                raise FeedEnded(str(line.get("error", {}).get("message", "subscription ended")))
            if line.get("type") == "event":
                events.append(line)
        return events

    def close(self) -> None:
        self.client.close()


def snapshot_panes(snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    """Every pane record of a snapshot, window by window, tab by tab."""
    return [
        pane for window in snapshot["windows"] for tab in window["tabs"] for pane in tab["panes"]
    ]


def panes_named(event: dict[str, Any]) -> set[tuple[int, int]]:
    """The panes a `pane.screens` event names."""
    return {(int(p["window_id"]), int(p["pane_id"])) for p in event.get("panes", [])}
