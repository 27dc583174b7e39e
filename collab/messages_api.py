"""collab.message.get and the task outbox: messages with their delivery receipts (issue #16
item 4).

A message is visible to the local user and to its sender and recipient sessions only; any
other session gets INTEGRATION_PERMISSION_DENIED (after MESSAGE_NOT_FOUND for an unknown id,
so a refusal never says less than "it exists"; ids are random and unguessable).

Why a queued message waits (`waiting_reason`) lives in the delivery engine's memory; the
engine passed as the context's `deliveries` exposes it (`WaitingReasons`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from pebrel.collab import rights
from pebrel.collab.delivery import (
    QUEUED,
    latest_stages,
    message_record,
    message_row,
    stage_rows,
)
from pebrel.collab.handler import Ctx, Handler
from pebrel.collab.store import Store, Tx
from pebrel.errors import CollabCode, CollabError


@runtime_checkable
class WaitingReasons(Protocol):
    def waiting_reason(self, message_id: str) -> str | None: ...


def waiting_of(deliveries: object) -> WaitingReasons | None:
    return deliveries if isinstance(deliveries, WaitingReasons) else None


def visible(ctx: Ctx, row: Mapping[str, Any]) -> bool:
    """The user sees every message; a session its own (sent or received) only; a principal
    those of its own group (task.read, #17)."""
    if ctx.caller.get("kind") == "user":
        return True  # the token holder, even acting as a session
    if ctx.actor.kind == "principal":
        return bool(row["group_id"] == rights.actor_group(ctx.store, ctx.actor))
    if ctx.actor.session_id is None:
        return False  # a pane with no session of its own
    sender = json.loads(row["from_actor"]).get("session_id")
    return ctx.actor.session_id in (row["to_session"], sender)


async def message_get(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    message_id = params.get("message")
    if not isinstance(message_id, str):
        raise CollabError(CollabCode.INVALID_ARGUMENT, "message must be a message id")
    row = message_row(ctx.store, message_id)
    if row is None:
        raise CollabError(
            CollabCode.MESSAGE_NOT_FOUND, f"no message {message_id}", {"message": message_id}
        )
    if not visible(ctx, row):
        raise CollabError(
            CollabCode.INTEGRATION_PERMISSION_DENIED,
            "a session sees only the messages it sent or received, an integration identity"
            " those of its group",
            {"message": message_id},
        )
    waiting = waiting_of(ctx.deliveries)
    reason = waiting.waiting_reason(message_id) if waiting is not None else None
    return {"message": message_record(row, stage_rows(ctx.store, message_id), reason)}


def message_outbox(
    db: Store | Tx, task_id: str, waiting: WaitingReasons | None = None
) -> list[dict[str, Any]]:
    """The task's messages in queue order, each with its latest delivery stage (task.get)."""
    out = []
    for row in latest_stages(db, "m.task_id = ?", (task_id,)):
        entry: dict[str, Any] = {
            "message_id": row["message_id"],
            "from": json.loads(row["from_actor"]),
            "delivery_id": row["delivery_id"],
            "attempt_id": row["attempt_id"],
            "to_session_id": row["to_session"],
            "reply_to_event_id": row["reply_to_event_id"],
            "created_at": row["created_at"],
            "stage": row["stage"],
            "reason": row["reason"],
            "retries": row["try"],
            "at": row["at"],
        }
        if row["code"] is not None:
            entry["code"] = row["code"]
        why = waiting.waiting_reason(row["message_id"]) if waiting is not None else None
        if row["stage"] == QUEUED and why is not None:
            entry["reason"] = entry["waiting_reason"] = why
        out.append(entry)
    return out


HANDLERS: dict[str, Handler] = {"collab.message.get": message_get}
