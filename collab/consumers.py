"""Event consumers: a principal's named, durable read positions in its group's journal (I2.3).

A consumer is the row `consumers(principal_id, name, group_id, acked_sequence)`. It is created
by its first `events.subscribe`, at the group's retention floor (so a new consumer is sent the
oldest retained event first); its `acked_sequence` only moves forward, through `events.ack`,
committed before the ACK is answered. A consumer whose ACK is below the floor missed events
that were trimmed: `EVENT_RETENTION_GAP`, never a silent skip (I2.4). This module holds the
database side; collab/stream.py holds the streams and their send windows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from pebrel.collab import cursor, refs
from pebrel.collab.handler import Actor
from pebrel.collab.store import Store
from pebrel.errors import CollabCode, CollabError

#: A consumer name: 1-64 of letters, digits, '.', '_', '-', starting with a letter or digit.
NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True, slots=True)
class Consumer:
    principal_id: str
    name: str
    group_id: str
    acked_sequence: int
    created: bool

    @property
    def key(self) -> tuple[str, str]:
        return (self.principal_id, self.name)


def name_of(params: dict[str, Any]) -> str:
    value = params.get("consumer")
    if not isinstance(value, str) or not NAME.fullmatch(value):
        raise CollabError(
            CollabCode.INVALID_ARGUMENT,
            "consumer is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
            {"param": "consumer"},
        )
    return value


def only(params: dict[str, Any], allowed: frozenset[str]) -> None:
    """Refuse params the method does not take (the socket has no schema check before us)."""
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise CollabError(
            CollabCode.INVALID_ARGUMENT,
            f"unknown params: {', '.join(unknown)}",
            {"params": unknown},
        )


@dataclass(frozen=True, slots=True)
class Owner:
    """The principal whose consumers a request reads and moves: its id and its group."""

    id: str
    group_id: str


def principal_of(actor: Actor) -> Owner:
    """The principal acting, as `rights.resolve` read it for this request (a revoked or
    unknown one was refused there) with its permission (events.read) checked
    (collab/rights.py, PRINCIPAL_RIGHTS)."""
    if actor.kind != "principal" or actor.principal_id is None or actor.group_id is None:
        raise CollabError(
            CollabCode.INTEGRATION_PERMISSION_DENIED,
            "event consumers belong to integration identities (pebrel collab --principal ID)",
            {"actor": actor.kind},
        )
    return Owner(actor.principal_id, actor.group_id)


def find(store: Store, principal_id: str, name: str) -> refs.Row | None:
    return refs.one(
        store,
        "SELECT * FROM consumers WHERE principal_id = ? AND name = ?",
        (principal_id, name),
    )


def gap(name: str, acked: int, floor: int, sent: int | None = None) -> CollabError:
    """EVENT_RETENTION_GAP for a consumer whose durable ACK is ``acked`` (and, for a stream
    that was overtaken, what it had ``sent``)."""
    details: dict[str, Any] = {
        "consumer": name,
        "acked_sequence": acked,
        "oldest_retained_sequence": floor + 1,
    }
    if sent is not None:
        details["sent_sequence"] = sent
    return CollabError(
        CollabCode.EVENT_RETENTION_GAP,
        f"consumer {name!r} is behind the retention window: events after its ACK (sequence"
        f" {acked}) up to sequence {floor} were trimmed; read tasks back, reconcile, then use"
        " a new consumer",
        details,
    )


def open_consumer(store: Store, principal: Owner, name: str) -> Consumer:
    """The consumer to stream from, created at the group's floor on first use.

    An existing one behind the retention floor: EVENT_RETENTION_GAP (nothing is written).
    """
    floor = store.floor(principal.group_id)
    row = find(store, principal.id, name)
    if row is not None:
        acked = int(row["acked_sequence"])
        if acked < floor:
            raise gap(name, acked, floor)
        return Consumer(principal.id, name, str(row["group_id"]), acked, created=False)
    with store.write() as tx:
        tx.insert(
            "consumers",
            {
                "principal_id": principal.id,
                "name": name,
                "group_id": principal.group_id,
                "acked_sequence": floor,
                "created_at": tx.now,
                "updated_at": tx.now,
            },
        )
    return Consumer(principal.id, name, principal.group_id, floor, created=True)


def check_cursor(principal: Owner, text: object) -> int:
    """The sequence a cursor names, which must be of the principal's group."""
    group_id, sequence = cursor.decode(text)
    if group_id != principal.group_id:
        raise CollabError(
            CollabCode.INVALID_EVENT_CURSOR,
            "this cursor is of another group than the integration identity's",
            {"cursor": text, "reason": "other_group"},
        )
    return sequence


def behind(name: str, text: object, sequence: int, acked: int, group_id: str) -> CollabError:
    return CollabError(
        CollabCode.INVALID_EVENT_CURSOR,
        f"consumer {name!r} already acknowledged sequence {acked}; an ACK never goes back",
        {
            "cursor": text,
            "reason": "behind",
            "sequence": sequence,
            "acked_sequence": acked,
            "acked_cursor": cursor.encode(group_id, acked) if acked else None,
        },
    )


def store_ack(store: Store, principal_id: str, name: str, sequence: int) -> None:
    """Move the durable ACK forward (committed, synchronous=FULL, before the answer)."""
    with store.write() as tx:
        tx.execute(
            "UPDATE consumers SET acked_sequence = ?, updated_at = ?"
            " WHERE principal_id = ? AND name = ? AND acked_sequence < ?",
            (sequence, tx.now, principal_id, name, sequence),
        )
