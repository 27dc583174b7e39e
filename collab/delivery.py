"""Messages and their delivery stages, as facts (issue #16 item 4; I3.4).

A message is queued in its caller's transaction: the message row (event `message.queued`) and
its first stage row `queued` (event `task.delivery` for a task's message, else
`message.delivery`). Stage rows are append-only, one per stage, so every receipt can be
rebuilt; the delivery engine (collab/deliverer.py) appends the later ones. A stage row's `try`
is the receipt's `retries`: 0 for the first try, one more for each requeue after a failure.

The read side is here too: the stages of a message, its receipt and its public record.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pebrel.collab.store import Store, Tx, dumps, new_id

QUEUED: Final = "queued"
WRITING: Final = "writing"
DELIVERED: Final = "delivered"
FAILED: Final = "failed"
STAGES: Final = (QUEUED, WRITING, DELIVERED, FAILED)
#: The reason a message to a session no longer in the message's group fails for good (#16
#: item 4: "a removed assignee leaves an explicit failed record").
REMOVED_FROM_GROUP: Final = "removed_from_group"


@dataclass(frozen=True, slots=True)
class Queued:
    message_id: str
    delivery_id: str
    event_id: str


def stage_kind(task_id: str | None) -> str:
    return "task.delivery" if task_id else "message.delivery"


def queue_message(
    tx: Tx,
    *,
    group_id: str,
    to_session: str,
    from_actor: dict[str, Any],
    content: str,
    task_id: str | None = None,
    attempt_id: str | None = None,
    reply_to_event_id: str | None = None,
    thread_id: str | None = None,
    reply_to: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> Queued:
    """Write a message and its `queued` stage; the caller commits, then kicks the engine."""
    message_id = new_id("msg")
    delivery_id = new_id("dlv")
    thread = thread_id or message_id
    refs = {
        "message_id": message_id,
        "task_id": task_id,
        "attempt_id": attempt_id,
        "reply_to_event_id": reply_to_event_id,
        "actor": from_actor,
    }
    payload = {
        "message_id": message_id,
        "thread_id": thread,
        "reply_to": reply_to,
        "from_session_id": from_actor.get("session_id"),
        "to_session_id": to_session,
        "content": content,
        "metadata": metadata,
    }
    ev = tx.event(group_id, "message.queued", payload, refs)
    tx.fact(
        "messages",
        ev,
        {
            "id": message_id,
            "to_session": to_session,
            "from_actor": dumps(from_actor),
            "thread_id": thread,
            "reply_to": reply_to,
            "task_id": task_id,
            "attempt_id": attempt_id,
            "reply_to_event_id": reply_to_event_id,
            "content": content,
            "metadata": dumps(metadata) if metadata is not None else None,
        },
    )
    append_stage(
        tx,
        group_id=group_id,
        delivery_id=delivery_id,
        message_id=message_id,
        task_id=task_id,
        attempt_id=attempt_id,
        stage=QUEUED,
        reason=None,
        tries=0,
    )
    return Queued(message_id, delivery_id, ev.event_id)


def append_stage(
    tx: Tx,
    *,
    group_id: str,
    delivery_id: str,
    message_id: str,
    task_id: str | None,
    attempt_id: str | None,
    stage: str,
    reason: str | None,
    tries: int,
    code: str | None = None,
    written: bool | None = None,
    submitted: bool | None = None,
) -> str:
    """Append one stage row (and its event); returns the event id.

    A `failed` stage may carry the runtime's error ``code``; a `delivered` one what the
    terminal answered: ``written`` (bytes reached the pane) and ``submitted`` (Enter was
    written). The receipt in the event carries them only when set.
    """
    receipt: dict[str, Any] = {
        "delivery_id": delivery_id,
        "message_id": message_id,
        "attempt_id": attempt_id,
        "stage": stage,
        "reason": reason,
        "retries": tries,
        "at": tx.now,
    }
    extra = {"code": code, "written": written, "submitted": submitted}
    receipt.update({k: v for k, v in extra.items() if v is not None})
    payload = {"delivery": receipt} if task_id else {"receipt": receipt}
    refs = {"message_id": message_id, "task_id": task_id, "attempt_id": attempt_id}
    ev = tx.event(group_id, stage_kind(task_id), payload, refs)
    tx.fact(
        "delivery_stages",
        ev,
        {
            "delivery_id": delivery_id,
            "message_id": message_id,
            "stage": stage,
            "reason": reason,
            "try": tries,
            "at": tx.now,
            "code": code,
            "written": written,
            "submitted": submitted,
        },
    )
    return ev.event_id


# -- reading -----------------------------------------------------------------------------------
#: The latest stage row of each message (stage rows are append-only: the highest rowid).
LATEST: Final = "d.rowid = (SELECT max(rowid) FROM delivery_stages WHERE message_id = d.message_id)"


def message_row(store: Store, message_id: str) -> dict[str, Any] | None:
    rows = store.read("SELECT * FROM messages WHERE id = ?", (message_id,))
    return dict(rows[0]) if rows else None


def stage_rows(store: Store, message_id: str) -> list[dict[str, Any]]:
    """The message's stage rows, oldest first."""
    rows = store.read(
        "SELECT * FROM delivery_stages WHERE message_id = ? ORDER BY rowid", (message_id,)
    )
    return [dict(row) for row in rows]


def stage_entry(row: Mapping[str, Any]) -> dict[str, Any]:
    """One stage of a receipt: `{stage, reason, retries, at}`, plus the runtime's error
    `code` of a failure and the `written`/`submitted` facts of a delivery."""
    entry: dict[str, Any] = {
        "stage": row["stage"],
        "reason": row["reason"],
        "retries": row["try"],
        "at": row["at"],
    }
    if row["code"] is not None:
        entry["code"] = row["code"]
    for fact in ("written", "submitted"):
        if row[fact] is not None:
            entry[fact] = bool(row[fact])
    return entry


def receipt(stages: list[dict[str, Any]], waiting_reason: str | None = None) -> dict[str, Any]:
    """A message's delivery receipt from its stage rows (never a "read" stage).

    ``waiting_reason`` is why a queued message is not written yet (the delivery engine keeps
    it in memory: an offline session, an agent not ready or asking for approval); it is also
    the receipt's `reason` while the message waits.
    """
    last = stages[-1]
    out: dict[str, Any] = {
        "delivery_id": last["delivery_id"],
        "stage": last["stage"],
        "stages": [stage_entry(row) for row in stages],
        "retries": last["try"],
        "reason": last["reason"],
    }
    if last["stage"] == QUEUED and waiting_reason is not None:
        out["reason"] = waiting_reason
        out["waiting_reason"] = waiting_reason
    return out


def message_record(
    row: Mapping[str, Any], stages: list[dict[str, Any]], waiting_reason: str | None = None
) -> dict[str, Any]:
    """The public message record (collab.message.get) with its receipt."""
    return {
        "message_id": row["id"],
        "group_id": row["group_id"],
        "thread_id": row["thread_id"],
        "reply_to": row["reply_to"],
        "to_session_id": row["to_session"],
        "from": json.loads(row["from_actor"]),
        "task_id": row["task_id"],
        "attempt_id": row["attempt_id"],
        "reply_to_event_id": row["reply_to_event_id"],
        "event_id": row["event_id"],
        "content": row["content"],
        "metadata": json.loads(row["metadata"]) if row["metadata"] is not None else None,
        "created_at": row["created_at"],
        "receipt": receipt(stages, waiting_reason),
    }


def latest_stages(db: Store | Tx, where: str, args: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Each message matching ``where`` (on `m`, the messages table) joined with its latest
    stage row `d`, in queue order (through the store, or an open transaction)."""
    sql = (
        "SELECT m.id AS message_id, m.group_id, m.to_session, m.from_actor, m.task_id,"
        " m.attempt_id, m.reply_to_event_id, m.content, m.created_at, d.delivery_id, d.stage,"
        " d.reason, d.try, d.at, d.code FROM messages m JOIN delivery_stages d"
        f" ON d.message_id = m.id AND {LATEST} WHERE {where} ORDER BY m.rowid"
    )
    return [dict(row) for row in db.read(sql, args)]


def fail_queued(tx: Tx, session_id: str, group_id: str, reason: str) -> list[str]:
    """Append a `failed` stage with ``reason`` to every message of the group to this session
    still waiting in `queued`; returns their message ids."""
    failed = []
    for row in latest_stages(
        tx, "m.to_session = ? AND m.group_id = ? AND d.stage = ?", (session_id, group_id, QUEUED)
    ):
        append_stage(
            tx,
            group_id=group_id,
            delivery_id=row["delivery_id"],
            message_id=row["message_id"],
            task_id=row["task_id"],
            attempt_id=row["attempt_id"],
            stage=FAILED,
            reason=reason,
            tries=int(row["try"]),
        )
        failed.append(str(row["message_id"]))
    return failed
