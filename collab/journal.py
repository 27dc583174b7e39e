"""The journal's retention and its public event shape (I2.2, I2.4).

Retention keeps the newest `RETAIN_EVENTS_PER_GROUP` events of each group and at most
`RETAIN_BYTES` of payload in all. Trimming raises the group's stored **floor** (the highest
removed sequence), so a rebuild from the fact tables (collab/store.py) never brings a trimmed
event back, and a reader asking for events at or below the floor learns they are gone. Facts
themselves are never trimmed: they are the history (`task get` shows it all).

The store trims after a commit, in its own transaction, and only past a slack of
`SLACK` events, so a busy group pays for one trim per `SLACK` writes, not one per write.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from pebrel.collab.store import Tx

RETAIN_EVENTS_PER_GROUP: Final = 10_000
RETAIN_BYTES: Final = 64 * 1024 * 1024
SLACK: Final = 500


def set_floor(tx: Tx, group_id: str, floor: int) -> None:
    tx.execute(
        "INSERT INTO journal_floor (group_id, floor) VALUES (?, ?)"
        " ON CONFLICT(group_id) DO UPDATE SET floor = max(floor, excluded.floor)",
        (group_id, floor),
    )
    tx.execute("DELETE FROM journal WHERE group_id = ? AND sequence <= ?", (group_id, floor))


def trim_group(tx: Tx, group_id: str, last_sequence: int) -> int:
    """Keep the group's newest events; returns its new floor."""
    floor = max(last_sequence - RETAIN_EVENTS_PER_GROUP, 0)
    if floor:
        set_floor(tx, group_id, floor)
    return floor


def trim_bytes(tx: Tx, excess: int) -> tuple[dict[str, int], int]:
    """Remove the oldest events (by time, across groups) until `excess` bytes are gone.

    Returns the new floors and the bytes removed.
    """
    floors: dict[str, int] = {}
    removed = 0
    for group_id, sequence, size in tx.execute(
        "SELECT group_id, sequence, length(CAST(payload AS BLOB)) FROM journal"
        " ORDER BY created_at, sequence"
    ).fetchall():
        if removed >= excess:
            break
        floors[group_id] = max(floors.get(group_id, 0), int(sequence))
        removed += int(size)
    for group_id, floor in floors.items():
        set_floor(tx, group_id, floor)
    return floors, removed


def event_record(row: sqlite3.Row | Mapping[str, Any]) -> dict[str, Any]:
    """A journal row as the public event envelope (I2.2), without the cursor."""
    refs = json.loads(row["refs"])
    return {
        "type": "event",
        "event_id": row["event_id"],
        "group_id": row["group_id"],
        "sequence": row["sequence"],
        "kind": row["kind"],
        "created_at": row["created_at"],
        "payload": json.loads(row["payload"]),
        **refs,
    }
