"""Injection: event streams send a heartbeat every 0.3 s instead of 15 s (I2.5; #17).

Only the interval changes (collab/stream.py reads it when a stream starts waiting), so the
test sees the production heartbeat in a test-sized time.
"""

from __future__ import annotations

from pebrel.injection import COLLAB


def install(process: str) -> None:
    if process == COLLAB:
        from pebrel.collab import stream

        stream.HEARTBEAT_S = 0.3
