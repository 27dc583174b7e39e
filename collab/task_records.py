"""Reading tasks: the summary, the full record (`collab.task.get`) and `collab.task.list` (I3).

The full record is the projection plus everything it was made of: attempts, the event history,
immutable artifacts, decisions, and the outbox (the task's messages with their latest delivery
stage, reason and retries). A session reads only its own group's tasks.
"""

from __future__ import annotations

import json
from typing import Any, Final

from pebrel.collab import refs, rights
from pebrel.collab.handler import Ctx, Handler
from pebrel.collab.journal import event_record
from pebrel.collab.messages_api import WaitingReasons, message_outbox, waiting_of
from pebrel.collab.store import Store, Tx
from pebrel.errors import CollabCode, CollabError

STATUSES: Final = ("open", "accepted", "closed")


def loads(value: str | None) -> Any:
    return None if value is None else json.loads(value)


def summary(db: Store | Tx, task: refs.Row) -> dict[str, Any]:
    """The task's summary, its assignee read from its current attempt."""
    attempt = refs.current_attempt(db, task)
    return summary_of(task, attempt["assignee_session"] if attempt is not None else None)


def summary_of(task: refs.Row, assignee: str | None) -> dict[str, Any]:
    """The task's summary, its current attempt's assignee already known."""
    return {
        "task_id": task["id"],
        "group_id": task["group_id"],
        "title": task["title"],
        "status": task["status"],
        "revision": task["revision"],
        "current_attempt_id": task["current_attempt_id"],
        "assignee": assignee,
        "plan_state": task["plan_state"],
        "source": task["source"],
        "created_at": task["created_at"],
        "updated_at": task["updated_at"],
    }


def artifact_record(row: refs.Row, accepted_id: str | None) -> dict[str, Any]:
    body = json.loads(row["payload"])["artifact"]
    return {
        **body,
        "event_id": row["event_id"],
        "revision": row["revision"],
        "accepted": row["id"] == accepted_id,
    }


def decision_record(row: refs.Row) -> dict[str, Any]:
    return {
        "decision_id": row["id"],
        "attempt_id": row["attempt_id"],
        "state": "open" if row["answer_event_id"] is None else "answered",
        "question": row["question"],
        "question_event_id": row["question_event_id"],
        "answer": row["answer"],
        "answer_event_id": row["answer_event_id"],
        "answered_by": loads(row["answered_by"]),
        "answered_at": row["answered_at"],
    }


def full(db: Store | Tx, task: refs.Row, waiting: WaitingReasons | None = None) -> dict[str, Any]:
    task_id = str(task["id"])
    attempts = refs.rows(db, "SELECT * FROM attempts WHERE task_id = ? ORDER BY number", (task_id,))
    events = refs.rows(
        db, "SELECT * FROM task_events WHERE task_id = ? ORDER BY sequence", (task_id,)
    )
    artifacts = refs.rows(
        db, "SELECT * FROM artifacts WHERE task_id = ? ORDER BY sequence", (task_id,)
    )
    decisions = refs.rows(
        db, "SELECT * FROM decisions WHERE task_id = ? ORDER BY rowid", (task_id,)
    )
    current = [a["assignee_session"] for a in attempts if a["id"] == task["current_attempt_id"]]
    return {
        **summary_of(task, current[0] if current else None),
        "content": task["content"],
        "origin": loads(task["origin"]),
        "external_actor": loads(task["external_actor"]),
        "external_message_id": task["external_message_id"],
        "metadata": loads(task["metadata"]),
        "accepted_artifact_id": task["accepted_artifact_id"],
        "attempts": [
            {
                "attempt_id": a["id"],
                "number": a["number"],
                "assignee": a["assignee_session"],
                "current": a["id"] == task["current_attempt_id"],
                "last_report": a["last_report"],
                "created_at": a["created_at"],
            }
            for a in attempts
        ],
        "events": [event_record(e) for e in events],
        "artifacts": [artifact_record(a, task["accepted_artifact_id"]) for a in artifacts],
        "decisions": [decision_record(d) for d in decisions],
        "outbox": message_outbox(db, task_id, waiting),
    }


async def get(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    task = refs.task(ctx.store, refs.text(params, "task"))
    rights.require_member(ctx.store, ctx.actor, str(task["group_id"]))
    return {"task": full(ctx.store, task, waiting_of(ctx.deliveries))}


async def list_tasks(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    group_ref = refs.opt_text(params, "group")
    status = refs.opt_text(params, "status")
    if status is not None and status not in STATUSES:
        raise CollabError(
            CollabCode.INVALID_ARGUMENT,
            f"status is one of {', '.join(STATUSES)}",
            {"param": "status"},
        )
    where: list[str] = ["1 = 1"]
    args: list[str | None] = []
    if group_ref is not None:
        group_id = str(refs.group(ctx.store, group_ref)["id"])
        rights.require_member(ctx.store, ctx.actor, group_id)
        where.append("t.group_id = ?")
        args.append(group_id)
    elif ctx.actor.kind != "user":  # a session or a principal: its own group only
        where.append("t.group_id IS ?")
        args.append(rights.actor_group(ctx.store, ctx.actor))
    if status is not None:
        where.append("t.status = ?")
        args.append(status)
    found = refs.rows(  # each task with its current attempt's assignee, in one query
        ctx.store,
        "SELECT t.*, a.assignee_session AS assignee FROM tasks t"
        " LEFT JOIN attempts a ON a.id = t.current_attempt_id"
        f" WHERE {' AND '.join(where)} ORDER BY t.created_at, t.rowid",
        tuple(args),
    )
    return {"tasks": [summary_of(row, row["assignee"]) for row in found]}


HANDLERS: Final[dict[str, Handler]] = {
    "collab.task.get": get,
    "collab.task.list": list_tasks,
}
