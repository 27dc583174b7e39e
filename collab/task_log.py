"""A task's append-only history and its projection (I3, #16 item 3).

Each task fact is one `task_events` row carrying its journal event (the seven event columns);
its payload is the spec's `{"event": {...}}` and the row's `body` holds the same. The `tasks`
row is the projection (status, revision, current attempt, plan state), updated in the same
transaction. Messages to the assignee are queued here too, in the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pebrel.collab import refs, rights
from pebrel.collab.delivery import (
    FAILED,
    REMOVED_FROM_GROUP,
    Queued,
    append_stage,
    queue_message,
)
from pebrel.collab.store import Event, dumps, new_id
from pebrel.collab.writes import Write
from pebrel.errors import CollabCode, CollabError

#: All provenance of one write (source, origin, external actor and message id, metadata) at
#: most this many bytes, encoded (I3.3).
PROVENANCE_MAX_BYTES: Final = 16 * 1024
#: The request params that say where a write comes from outside Pebrel (I3.3).
EXTERNAL_PARAMS: Final = ("external_actor", "external_message_id", "metadata")
EXTERNAL_MESSAGE_ID_MAX: Final = 1024
OPEN: Final = "open"
ACCEPTED: Final = "accepted"
CLOSED: Final = "closed"
#: Statuses a task can be worked on in (comment, revise, question, answer, assign).
LIVE: Final = frozenset({OPEN, ACCEPTED})


def source(w: Write) -> str:
    """Who Pebrel knows made the write: never what the caller says of itself."""
    kind = w.ctx.actor.kind
    return {"session": "session", "principal": "integration"}.get(kind, "user")


def invalid(param: str, message: str, **details: Any) -> CollabError:
    return CollabError(CollabCode.INVALID_ARGUMENT, message, {"param": param, **details})


def provenance(w: Write, params: Mapping[str, Any], label: bool = False) -> dict[str, Any]:
    """A write's provenance (I3.3): `source` (user, session or integration), `origin` (the
    pane, or `{"integrationId": ID}`), and what the caller says of the outside world:
    `external_actor` and `metadata` (JSON objects), `external_message_id`; with ``label``,
    `source` param (the caller's own word for where it comes from, kept as `origin.source`).
    INVALID_ARGUMENT for a wrong type or over 16 KiB in all."""
    for name in ("external_actor", "metadata"):
        if params.get(name) is not None and not isinstance(params.get(name), dict):
            raise invalid(name, f"{name} must be a JSON object")
    message_id = params.get("external_message_id")
    if message_id is not None and (
        not isinstance(message_id, str) or not 0 < len(message_id) <= EXTERNAL_MESSAGE_ID_MAX
    ):
        raise invalid(
            "external_message_id",
            f"external_message_id must be a string of 1-{EXTERNAL_MESSAGE_ID_MAX} characters",
        )
    origin = rights.origin(w.ctx.caller)
    said = params.get("source") if label else None
    if said is not None:
        if not isinstance(said, str) or not 0 < len(said) <= 64:
            raise invalid("source", "source must be a string of 1-64 characters")
        origin = {**(origin or {}), "source": said}
    found = {
        "source": source(w),
        "origin": origin,
        **{name: params.get(name) for name in EXTERNAL_PARAMS},
    }
    try:
        size = len(dumps(found).encode())
    except ValueError as exc:
        raise invalid("metadata", "external_actor and metadata must be plain JSON") from exc
    if size > PROVENANCE_MAX_BYTES:
        raise invalid(
            "metadata",
            f"provenance is {size} bytes; at most {PROVENANCE_MAX_BYTES}",
            bytes=size,
            limit=PROVENANCE_MAX_BYTES,
        )
    return found


def external(found: Mapping[str, Any]) -> dict[str, Any]:
    """What a write's events carry of its provenance besides `source`: the origin, and the
    external fields that were given."""
    kept = {name: found[name] for name in EXTERNAL_PARAMS if found.get(name) is not None}
    return {"origin": found["origin"], **kept}


def append(
    w: Write,
    task: refs.Row,
    kind: str,
    *,
    attempt_id: str | None,
    content: str | None = None,
    reply_to_event_id: str | None = None,
    event_id: str | None = None,
    **extra: Any,
) -> Event:
    """Append `task.<kind>` to the task's history and its group's journal."""
    event_id = event_id or new_id("evt")
    actor = w.ctx.actor.wire()
    body = {
        "event_id": event_id,
        "task_id": task["id"],
        "kind": f"task.{kind}",
        "actor": actor,
        "source": source(w),
        "origin": rights.origin(w.ctx.caller),
        "attempt_id": attempt_id,
        "content": content,
        "reply_to_event_id": reply_to_event_id,
        "created_at": w.tx.now,
        **extra,
    }
    payload = {"event": body}
    event_refs = {
        "task_id": task["id"],
        "attempt_id": attempt_id,
        "artifact_id": extra.get("artifact_id"),
        "message_id": extra.get("message_id"),
        "reply_to_event_id": reply_to_event_id,
        "source": source(w),
        "actor": actor,
        "external_actor": extra.get("external_actor"),
    }
    ev = w.tx.event(str(task["group_id"]), f"task.{kind}", payload, event_refs, event_id)
    w.tx.fact(
        "task_events",
        ev,
        {
            "task_id": task["id"],
            "attempt_id": attempt_id,
            "actor": dumps(actor),
            "body": ev.payload_json,
            "reply_to_event_id": reply_to_event_id,
        },
    )
    return ev


def update(w: Write, task_id: str, **fields: Any) -> refs.Row:
    """Change the task's projection; returns the new row."""
    fields["updated_at"] = w.tx.now
    sets = ", ".join(f"{name} = :{name}" for name in fields)
    found = refs.one(
        w.tx,
        f"UPDATE tasks SET {sets} WHERE id = :task_id RETURNING *",
        {**fields, "task_id": task_id},
    )
    return found if found is not None else refs.task(w.tx, task_id)  # none: TASK_NOT_FOUND


def check_revision(task: refs.Row, revision: int) -> None:
    if revision != task["revision"]:
        raise CollabError(
            CollabCode.TASK_CHANGED,
            f"task {task['id']} is at revision {task['revision']}, not {revision}",
            {"task_id": task["id"], "revision": task["revision"]},
        )


def require_status(task: refs.Row, allowed: frozenset[str], action: str) -> None:
    if task["status"] not in allowed:
        raise CollabError(
            CollabCode.TASK_STATE_INVALID,
            f"cannot {action} a task that is {task['status']}",
            {"task_id": task["id"], "status": task["status"]},
        )


def member_task(w: Write, ref: str) -> refs.Row:
    """The task, once the acting session is known to be in its group."""
    task = refs.task(w.tx, ref)
    rights.require_member(w.tx, w.ctx.actor, str(task["group_id"]))
    return task


def live_at(w: Write, ref: str, revision: int, action: str) -> refs.Row:
    """The task for a write that makes a new revision: live, and still at ``revision``."""
    task = member_task(w, ref)
    check_revision(task, revision)
    require_status(task, LIVE, action)
    return task


def next_revision(w: Write, task: refs.Row) -> refs.Row:
    """A new revision: the task is open again and no earlier result stays accepted."""
    revision = int(task["revision"]) + 1
    return update(w, str(task["id"]), revision=revision, status=OPEN, accepted_artifact_id=None)


def require_attempt(w: Write, task: refs.Row, action: str) -> refs.Row:
    """The task's current attempt; TASK_STATE_INVALID when it has no assignee yet."""
    found = refs.current_attempt(w.tx, task)
    if found is None:
        raise CollabError(
            CollabCode.TASK_STATE_INVALID,
            f"cannot {action}: task {task['id']} has no assignee",
            {"task_id": task["id"]},
        )
    return found


def open_attempt(w: Write, task: refs.Row, assignee: str) -> refs.Row:
    """A new attempt of the task for ``assignee`` (numbered from 1); its row."""
    row = refs.one(
        w.tx, "SELECT coalesce(max(number), 0) AS n FROM attempts WHERE task_id = ?", (task["id"],)
    )
    attempt = {
        "id": new_id("att"),
        "task_id": task["id"],
        "number": int(row["n"] if row else 0) + 1,
        "assignee_session": assignee,
        "created_at": w.tx.now,
        "last_report": None,
    }
    w.tx.insert("attempts", attempt)
    return attempt


def member_session(w: Write, ref: str, group_id: str) -> str:
    """A session that may be an assignee in this group (SESSION_NOT_IN_GROUP otherwise)."""
    row = refs.session(w.tx, ref)
    if row["group_id"] != group_id:
        raise CollabError(
            CollabCode.SESSION_NOT_IN_GROUP,
            f"session {row['id']} is not in the task's group",
            {"session_id": row["id"], "group_id": group_id},
        )
    return str(row["id"])


def deliver(
    w: Write,
    task: refs.Row,
    attempt: refs.Row,
    content: str,
    reply_to_event_id: str | None = None,
) -> Queued:
    """Queue ``content`` to the attempt's assignee. If the assignee has left the task's group,
    the message is failed at once with reason "removed_from_group" (an explicit record)."""
    group_id = str(task["group_id"])
    assignee = str(attempt["assignee_session"])
    queued = queue_message(
        w.tx,
        group_id=group_id,
        to_session=assignee,
        from_actor=w.ctx.actor.wire(),
        content=content,
        task_id=str(task["id"]),
        attempt_id=str(attempt["id"]),
        reply_to_event_id=reply_to_event_id,
    )
    if refs.session(w.tx, assignee)["group_id"] != group_id:
        append_stage(
            w.tx,
            group_id=group_id,
            delivery_id=queued.delivery_id,
            message_id=queued.message_id,
            task_id=str(task["id"]),
            attempt_id=str(attempt["id"]),
            stage=FAILED,
            reason=REMOVED_FROM_GROUP,
            tries=0,
        )
    else:
        w.queued.append(queued)
    return queued
