"""Injection: the journal keeps the newest 50 events per group (trimmed past 5 more), not
10,000 (I2.4, EVENT_RETENTION_GAP; #17).

Only the limits change (collab/journal.py's values, read by the store after each commit).
"""

from __future__ import annotations

from pebrel.injection import COLLAB


def install(process: str) -> None:
    if process == COLLAB:
        from pebrel.collab import journal

        journal.RETAIN_EVENTS_PER_GROUP = 50  # type: ignore[misc]
        journal.SLACK = 5  # type: ignore[misc]
