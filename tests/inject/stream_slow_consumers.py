"""Injection: an event stream ends as slow past 64 KiB unread for 0.5 s, not 1 MiB for 10 s
(I2, EVENT_CONSUMER_SLOW; #17).

Only the limits change (collab/stream.py reads them when they apply). The cut connection's
unread lines, its error line last, wait 120 s for the client rather than 5 s: the test reads
its stuck receiver only after the other one got every event, which under load can be later
than 5 s after the cut, and an aborted connection would have dropped the error line.
"""

from __future__ import annotations

from pebrel.injection import COLLAB


def install(process: str) -> None:
    if process == COLLAB:
        from pebrel.collab import stream

        stream.SLOW_BYTES = 64 * 1024
        stream.SLOW_GRACE_S = 0.5

        from pebrel.router import adapter_limits

        adapter_limits.CLOSE_FLUSH_DEADLINE_S = 120.0
