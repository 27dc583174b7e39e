"""Keeps the router's copy of a pane's last read current while the screen changes (R4.4).

The router keeps a worker's answer to ``pane.read`` and answers repeated reads from it until
the worker says the screen changed. For a pane whose output keeps coming (a build log, a test
run, a flood) the screen changes right after every read, and every read would wait for the
pane's worker, which under load waits for a core behind the other busy workers. So after a
kept read the worker *watches* it: while the screen changes, it sends the router that read's
new answer (``ScreenUpdated``), at once for the first change after a quiet spell and then at
most every ``PUBLISH_INTERVAL_S`` while the output goes on.

What a read can rely on:

- A pending update goes out before any other message of the worker (a shell mark, an exec's
  end, an exit, a reply), so a read that follows a completed wait sees all output up to the
  command's end, as before.
- While output keeps coming, the router's copy trails the worker's screen by at most the
  interval plus the time the worker waits for a core (the worker itself trails the PTY by
  whatever the kernel holds; a terminal read of a moving screen is always a moment's view).

The watch lasts ``WATCH_S`` after the read, renewed by the router's ``ScreenWatched`` while it
keeps answering from the copy; once it lapses, the first change sends ``ScreenChanged`` and
the next read comes to the worker again (which watches anew). Only one read (its line count)
is watched: an update replaces every answer the router kept for the pane.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from pebrel import messages as m
from pebrel.workers.screen import ReadResult

#: While the output goes on, the router's copy is renewed at most this often.
PUBLISH_INTERVAL_S = 0.005
#: Within the interval, the copy is renewed once no output came for this long (a burst ended).
QUIET_S = 0.0005
#: How long a watch lasts without a read (renewed by ScreenWatched).
WATCH_S = 1.0


class ReadWatch:
    def __init__(
        self,
        ids: dict[str, int],
        read: Callable[[int, int], ReadResult],
        transmit: Callable[[m.Message], None],
    ) -> None:
        self._ids = ids
        self._read = read
        self._transmit = transmit
        self.answered = False  # the router keeps an answer of ours, good until we say otherwise
        self.reports = 0  # change reports sent (ScreenChanged, ScreenUpdated)
        self.dirty = False  # the screen changed since the router's copy was made
        self._lines = 0
        self._max_bytes = 0
        self._until = float("-inf")
        self._published = float("-inf")
        self._last_output = float("-inf")
        self._timer: asyncio.TimerHandle | None = None

    def answered_read(self, lines: int, max_bytes: int) -> None:
        """A kept read was just answered (after any pending update): watch it."""
        self._cancel()
        self.answered = True
        self.dirty = False
        self._lines = lines
        self._max_bytes = max_bytes
        self._until = time.monotonic() + WATCH_S

    def renew(self) -> None:
        """The router still answers reads from the copy (ScreenWatched)."""
        if self.answered:
            self._until = time.monotonic() + WATCH_S

    def changing(self) -> None:
        """The screen is about to change (output, a resize)."""
        if not self.answered or self.dirty:
            return
        now = time.monotonic()
        if now >= self._until:
            self._changed()
            return
        self.dirty = True

    def changed(self) -> None:
        """A batch of output was applied: renew the copy now, or (if one went out less than
        the interval ago) once the output pauses or the interval is up."""
        if not self.dirty:
            return
        now = time.monotonic()
        if now >= self._published + PUBLISH_INTERVAL_S:
            self.publish()
            return
        self._last_output = now
        if self._timer is None:  # one timer per pending renewal, not one per chunk of a flood
            self._arm(now)

    def _arm(self, now: float) -> None:
        at = min(self._published + PUBLISH_INTERVAL_S, self._last_output + QUIET_S)
        self._timer = asyncio.get_running_loop().call_later(max(0.0, at - now), self._due)

    def _due(self) -> None:
        self._timer = None
        now = time.monotonic()
        if now < self._published + PUBLISH_INTERVAL_S and now < self._last_output + QUIET_S:
            self._arm(now)  # more output came: wait for it to pause, or for the interval
            return
        self.publish()

    def flush(self) -> None:
        """Renew the copy before another message goes out (it does not count against the
        interval: the output that follows is the end of a command more often than a flood)."""
        published = self._published
        self.publish()
        self._published = published

    def publish(self) -> None:
        """Send the router the watched read's answer for the screen as it is (or, once the
        watch has lapsed, ScreenChanged)."""
        self._cancel()
        if not self.dirty:
            return
        self.dirty = False
        now = time.monotonic()
        if now >= self._until:
            self._changed()
            return
        result = self._read(self._lines, self._max_bytes)
        self._published = now
        self.reports += 1
        self._transmit(
            m.ScreenUpdated(
                **self._ids,
                read_lines=self._lines,
                lines=result.lines,
                history_available=result.history_available,
                truncated=result.truncated,
                reports=self.reports,
            )
        )

    def _changed(self) -> None:
        """The watch lapsed: the router's kept answers are stale, and stay unrenewed."""
        self.answered = False
        self.reports += 1
        self._transmit(m.ScreenChanged(**self._ids, reports=self.reports))

    def close(self) -> None:
        self._cancel()

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
