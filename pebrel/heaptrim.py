"""Gives the free pages of a process's C heap back to the system after busy spells (#15).

What a pane worker or the router keeps is bounded (screens, scrollback, panes, a few caches),
but the C heap under it is not. Ingesting output, answering reads and running execs ask for
and free blocks of 16-64 KiB (joined output, decoded text, row lists, process-table scans,
a long read's JSON) between longer-lived smaller blocks. glibc keeps the free space this
leaves in the middle of its heap and only ever returns the top, so the space splits up, later
large blocks are carved from new pages at the top, and the process's memory creeps up
although its live data does not. In a worker printing bursts, under a soak, the traced Python
memory (tracemalloc) and the pymalloc arenas stayed flat while glibc's free bytes grew, and
USS with them (about 3 MiB an hour); the router's heap did the same under the soak's 32
clients.

``malloc_trim(0)`` hands every free page in the heap back (glibc madvises them away), so
a busy process trims once every ``TRIM_INTERVAL_S``: a few hundred microseconds for a
worker's heap, and nothing at all for a quiet pane or an idle runtime. Where the C library
has no ``malloc_trim`` (not glibc), nothing is trimmed.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
from collections.abc import Callable

logger = logging.getLogger(__name__)

#: How often a busy process trims its heap.
TRIM_INTERVAL_S = 10.0


def malloc_trim() -> Callable[[], None] | None:
    """glibc's ``malloc_trim(0)`` as a function, or None if this C library has none."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int

    def trim_all() -> None:
        trim(0)

    return trim_all


class HeapTrim:
    """Trims at most every ``interval_s``, and only if the process was ``busy`` since the last
    trim (a worker: output read, a command handled, a message sent; the router: a request or
    a worker's message)."""

    def __init__(self, trim: Callable[[], None] | None, interval_s: float | None = None) -> None:
        self.trim = trim
        self.interval_s = TRIM_INTERVAL_S if interval_s is None else interval_s
        self.busy = False
        self.trims = 0

    def tick(self) -> None:
        """One interval has passed: trim if there was work since the last trim."""
        if not self.busy or self.trim is None:
            return
        self.busy = False
        self.trim()
        self.trims += 1

    async def run(self) -> None:
        """Tick every interval until cancelled."""
        if self.trim is None:
            logger.debug("no malloc_trim in this C library: the heap is not trimmed")
            return
        while True:
            await asyncio.sleep(self.interval_s)
            self.tick()
