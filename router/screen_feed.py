"""The screen subscription (#21): ``events.subscribe`` with ``screens: true``.

A subscriber that asks for screens gets, besides its ``runtime.snapshot`` events, a
``pane.screens`` event naming the panes whose published screen changed (R4.4's publications,
``workers/publisher.py``) with when each was captured. The events are coalesced: at most one
every ``SCREEN_EVENT_INTERVAL_S``, each naming every pane that published since the last one
(once, with its newest capture time). A client then asks ``pane.screen`` (or ``pane.read``) for
the panes it shows. Nothing is collected while no connection subscribes to screens: a
publication then costs one empty-set check.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pebrel import messages as m
from pebrel.router.runtime import Runtime
from pebrel.router.state import Pane

#: At most one ``pane.screens`` event this often (seconds).
SCREEN_EVENT_INTERVAL_S = 0.1


class ScreenFeed:
    def __init__(self, rt: Runtime, to_frontend: Callable[[m.Message], None]) -> None:
        self.rt = rt
        self.to_frontend = to_frontend
        self.subscribers: set[int] = set()
        self.changed: dict[tuple[int, int], float] = {}
        self.timer: asyncio.TimerHandle | None = None
        self.last_sent = 0.0
        rt.screen_listeners.append(self.published)

    def subscribe(self, connection_id: int) -> None:
        self.subscribers.add(connection_id)

    def closed(self, connection_id: int) -> None:
        self.subscribers.discard(connection_id)
        if not self.subscribers:
            self.changed.clear()

    def published(self, pane: Pane) -> None:
        if not self.subscribers or pane.screen is None:
            return
        self.changed[pane.key] = round(pane.screen.captured_at, 6)  # as reads say it
        if self.timer is None:
            loop = asyncio.get_running_loop()
            due = max(0.0, self.last_sent + SCREEN_EVENT_INTERVAL_S - loop.time())
            self.timer = loop.call_later(due, self.flush)

    def flush(self) -> None:
        self.timer = None
        self.last_sent = asyncio.get_running_loop().time()
        if not self.changed or not self.subscribers:
            self.changed.clear()
            return
        panes = [[key[0], key[1], captured] for key, captured in self.changed.items()]
        self.changed.clear()
        self.to_frontend(m.ScreensChanged(runtime_id=self.rt.state.runtime_id, panes=panes))
