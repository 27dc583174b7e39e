"""Injection: an event stream ends as slow past 64 KiB unread for 0.5 s, not 1 MiB for 10 s
(I2, EVENT_CONSUMER_SLOW; #17).

Only the limits change (collab/stream.py reads them when they apply).
"""

from __future__ import annotations

from pebrel.injection import COLLAB


def install(process: str) -> None:
    if process == COLLAB:
        from pebrel.collab import stream

        stream.SLOW_BYTES = 64 * 1024
        stream.SLOW_GRACE_S = 0.5
