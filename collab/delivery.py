"""Messages and their delivery stages, as facts (issue #16 item 4; I3.4).

A message is queued in its caller's transaction: the message row (event `message.queued`) and
its first stage row `queued` (event `task.delivery` for a task's message, else
`message.delivery`). Stage rows are append-only, one per stage, so every receipt can be
rebuilt; the delivery engine (collab/deliverer.py) appends the later ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from pebrel.collab.store import Tx, dumps, new_id

QUEUED: Final = "queued"
WRITING: Final = "writing"
DELIVERED: Final = "delivered"
FAILED: Final = "failed"
STAGES: Final = (QUEUED, WRITING, DELIVERED, FAILED)


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
) -> str:
    """Append one stage row (and its event); returns the event id."""
    receipt = {
        "delivery_id": delivery_id,
        "message_id": message_id,
        "attempt_id": attempt_id,
        "stage": stage,
        "reason": reason,
        "retries": tries,
        "at": tx.now,
    }
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
        },
    )
    return ev.event_id
