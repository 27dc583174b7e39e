"""Task writes by the user or a member session: create, assign, comment, revise, answer,
close, reopen, and the user's approve-plan and accept (I3, #16 item 3).

The assignee's own verbs (question, respond, report, submit-plan) are in task_reports.py.
Every write is one transaction (writes.perform): the history row, its journal event, the
projection and any message to the assignee commit together, or nothing does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

from pebrel.collab import refs, rights, task_texts
from pebrel.collab.handler import Ctx, Handler
from pebrel.collab.store import dumps, new_id
from pebrel.collab.task_log import (
    ACCEPTED,
    CLOSED,
    LIVE,
    OPEN,
    append,
    deliver,
    external,
    live_at,
    member_session,
    member_task,
    next_revision,
    open_attempt,
    provenance,
    require_attempt,
    require_status,
    update,
)
from pebrel.collab.task_records import decision_record, summary, summary_of
from pebrel.collab.writes import Write, perform
from pebrel.errors import CollabCode, CollabError


def stored(value: Any) -> str | None:
    return None if value is None else dumps(value)


def assign_to(
    w: Write, task: refs.Row, assignee: str, said: dict[str, Any] | None = None
) -> tuple[refs.Row, dict[str, Any]]:
    """Open an attempt for ``assignee``, record task.assigned and queue the assignment
    (``said``: the request's external provenance, kept in the event). Returns the task as it
    is now and what the answer says of the assignment."""
    attempt = open_attempt(w, task, assignee)
    attempt_id = str(attempt["id"])
    task = update(w, str(task["id"]), current_attempt_id=attempt_id, plan_state=None)
    ev = append(
        w,
        task,
        "assigned",
        attempt_id=attempt_id,
        assignee=assignee,
        revision=task["revision"],
        **(said or {}),
    )
    revisions = [
        json.loads(row["body"])["event"]
        for row in refs.rows(
            w.tx,
            "SELECT body FROM task_events WHERE task_id = ? AND kind = 'task.revise'"
            " ORDER BY sequence",
            (task["id"],),
        )
    ]
    text = task_texts.assignment(
        assignee,
        str(task["id"]),
        attempt_id,
        str(task["title"]),
        str(task["content"]),
        [(int(r["revision"]), str(r["content"])) for r in revisions],
    )
    queued = deliver(w, task, attempt, text, reply_to_event_id=ev.event_id)
    return task, {
        "event_id": ev.event_id,
        "attempt_id": attempt_id,
        "message_id": queued.message_id,
        "delivery_id": queued.delivery_id,
    }


async def create(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    group_ref = refs.text(params, "group")
    title = refs.text(params, "title")
    content = refs.text(params, "content")
    assignee_ref = refs.opt_text(params, "assignee")

    def body(w: Write) -> dict[str, Any]:
        group_id = str(refs.group(w.tx, group_ref)["id"])
        rights.require_member(w.tx, w.ctx.actor, group_id)
        assignee = member_session(w, assignee_ref, group_id) if assignee_ref else None
        found = provenance(w, params, label=True)
        row: dict[str, Any] = {
            "id": new_id("tsk"),
            "group_id": group_id,
            "title": title,
            "content": content,
            "status": OPEN,
            "revision": 1,
            "current_attempt_id": None,
            "plan_state": None,
            "accepted_artifact_id": None,
            "source": found["source"],
            "origin": stored(found["origin"]),
            "external_actor": stored(found["external_actor"]),
            "external_message_id": found["external_message_id"],
            "metadata": stored(found["metadata"]),
            "created_at": w.tx.now,
            "updated_at": w.tx.now,
        }
        w.tx.insert("tasks", row)
        task: refs.Row = row  # as stored: no read back
        ev = append(
            w,
            task,
            "created",
            attempt_id=None,
            content=content,
            title=title,
            revision=1,
            **{"metadata": None, **external(found)},
        )
        result: dict[str, Any] = {"event_id": ev.event_id}
        if assignee is not None:
            task, assigned = assign_to(w, task, assignee, external(found))
            result.update({k: v for k, v in assigned.items() if k != "event_id"})
        return {"task": summary_of(task, assignee), **result}

    return await perform(ctx, "collab.task.create", params, body)


async def assign(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    ref = refs.text(params, "task")
    assignee_ref = refs.text(params, "assignee")
    revision = refs.integer(params, "revision")

    def body(w: Write) -> dict[str, Any]:
        said = external(provenance(w, params))
        task = live_at(w, ref, revision, "assign")
        assignee = member_session(w, assignee_ref, str(task["group_id"]))
        task, assigned = assign_to(w, next_revision(w, task), assignee, said)
        return {"task": summary_of(task, assignee), **assigned}

    return await perform(ctx, "collab.task.assign", params, body)


async def comment(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    ref = refs.text(params, "task")
    content = refs.text(params, "content")

    def body(w: Write) -> dict[str, Any]:
        said = external(provenance(w, params))
        task = member_task(w, ref)
        require_status(task, LIVE, "comment on")
        attempt = require_attempt(w, task, "comment")
        event_id = new_id("evt")
        assignee = str(attempt["assignee_session"])
        text = task_texts.consultation(
            assignee, str(task["id"]), str(attempt["id"]), event_id, content
        )
        queued = deliver(w, task, attempt, text, reply_to_event_id=event_id)
        append(
            w,
            task,
            "comment",
            attempt_id=str(attempt["id"]),
            content=content,
            event_id=event_id,
            target=assignee,
            message_id=queued.message_id,
            delivery_id=queued.delivery_id,
            **said,
        )
        return {
            "task_id": task["id"],
            "event_id": event_id,
            "attempt_id": attempt["id"],
            "message_id": queued.message_id,
            "delivery_id": queued.delivery_id,
        }

    return await perform(ctx, "collab.task.comment", params, body)


async def revise(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    ref = refs.text(params, "task")
    content = refs.text(params, "content")
    revision = refs.integer(params, "revision")

    def body(w: Write) -> dict[str, Any]:
        said = external(provenance(w, params))
        task = next_revision(w, live_at(w, ref, revision, "revise"))
        attempt = refs.current_attempt(w.tx, task)
        ev = append(
            w,
            task,
            "revise",
            attempt_id=attempt["id"] if attempt else None,
            content=content,
            revision=revision + 1,
            **said,
        )
        result: dict[str, Any] = {"event_id": ev.event_id}
        if attempt is not None:
            text = task_texts.revision(
                str(attempt["assignee_session"]),
                str(task["id"]),
                str(attempt["id"]),
                revision + 1,
                content,
            )
            queued = deliver(w, task, attempt, text, reply_to_event_id=ev.event_id)
            result.update(message_id=queued.message_id, delivery_id=queued.delivery_id)
        assignee = str(attempt["assignee_session"]) if attempt is not None else None
        return {"task": summary_of(task, assignee), **result}

    return await perform(ctx, "collab.task.revise", params, body)


async def answer(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    ref = refs.text(params, "task")
    decision_ref = refs.text(params, "decision")
    content = refs.text(params, "content")

    def body(w: Write) -> dict[str, Any]:
        said = external(provenance(w, params))
        task = member_task(w, ref)
        decision = refs.one(
            w.tx, "SELECT * FROM decisions WHERE id = ? AND task_id = ?", (decision_ref, task["id"])
        )
        if decision is None:
            raise CollabError(
                CollabCode.DECISION_NOT_FOUND,
                f"task {task['id']} has no decision {decision_ref!r}",
                {"task_id": task["id"], "decision": decision_ref},
            )
        if decision["answer_event_id"] is not None:
            raise CollabError(
                CollabCode.DECISION_ALREADY_ANSWERED,
                f"decision {decision_ref} was answered",
                {"decision_id": decision_ref, "answer_event_id": decision["answer_event_id"]},
            )
        require_status(task, LIVE, "answer on")
        if decision["attempt_id"] != task["current_attempt_id"]:
            raise CollabError(
                CollabCode.ATTEMPT_NOT_CURRENT,
                f"decision {decision_ref} belongs to an earlier attempt",
                {
                    "decision_id": decision_ref,
                    "attempt_id": decision["attempt_id"],
                    "current_attempt_id": task["current_attempt_id"],
                },
            )
        attempt = refs.attempt(w.tx, str(task["id"]), str(decision["attempt_id"]))
        ev = append(
            w,
            task,
            "answer",
            attempt_id=str(attempt["id"]),
            content=content,
            reply_to_event_id=str(decision["question_event_id"]),
            decision_id=decision_ref,
            **said,
        )
        w.tx.execute(
            "UPDATE decisions SET answer = ?, answer_event_id = ?, answered_by = ?,"
            " answered_at = ? WHERE id = ?",
            (content, ev.event_id, dumps(w.ctx.actor.wire()), w.tx.now, decision_ref),
        )
        text = task_texts.answer(
            str(attempt["assignee_session"]),
            str(task["id"]),
            str(attempt["id"]),
            decision_ref,
            content,
        )
        queued = deliver(w, task, attempt, text, reply_to_event_id=ev.event_id)
        fresh = refs.one(w.tx, "SELECT * FROM decisions WHERE id = ?", (decision_ref,))
        assert fresh is not None
        return {
            "task_id": task["id"],
            "event_id": ev.event_id,
            "decision": decision_record(fresh),
            "message_id": queued.message_id,
            "delivery_id": queued.delivery_id,
        }

    return await perform(ctx, "collab.task.answer", params, body)


async def change_status(
    ctx: Ctx,
    params: dict[str, Any],
    method: str,
    kind: str,
    allowed: frozenset[str],
    status_of: Callable[[refs.Row], str],
) -> dict[str, Any]:
    """close / reopen: a status change and its event."""
    ref = refs.text(params, "task")

    def body(w: Write) -> dict[str, Any]:
        task = member_task(w, ref)
        require_status(task, allowed, kind)
        task = update(w, str(task["id"]), status=status_of(task))
        ev = append(w, task, kind, attempt_id=task["current_attempt_id"], status=task["status"])
        return {"task": summary(w.tx, task), "event_id": ev.event_id}

    return await perform(ctx, method, params, body)


async def close(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    return await change_status(ctx, params, "collab.task.close", "close", LIVE, lambda task: CLOSED)


async def reopen(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    """Back to open, or to accepted when it was closed with an accepted result."""
    return await change_status(
        ctx,
        params,
        "collab.task.reopen",
        "reopen",
        frozenset({CLOSED}),
        lambda task: ACCEPTED if task["accepted_artifact_id"] else OPEN,
    )


async def approve_plan(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    ref = refs.text(params, "task")

    def body(w: Write) -> dict[str, Any]:
        task = member_task(w, ref)
        require_status(task, LIVE, "approve a plan of")
        if task["plan_state"] != "submitted":
            raise CollabError(
                CollabCode.TASK_STATE_INVALID,
                f"task {task['id']} has no submitted plan",
                {"task_id": task["id"], "plan_state": task["plan_state"]},
            )
        task = update(w, str(task["id"]), plan_state="approved")
        ev = append(w, task, "approve-plan", attempt_id=task["current_attempt_id"])
        return {"task_id": task["id"], "event_id": ev.event_id}

    return await perform(ctx, "collab.task.approve_plan", params, body)


async def accept(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    ref = refs.text(params, "task")

    def body(w: Write) -> dict[str, Any]:
        task = member_task(w, ref)
        require_status(task, frozenset({OPEN}), "accept")
        artifact = refs.one(
            w.tx,
            "SELECT id FROM artifacts WHERE task_id = ? AND attempt_id IS ? AND revision = ?"
            " ORDER BY sequence DESC LIMIT 1",
            (task["id"], task["current_attempt_id"], task["revision"]),
        )
        if artifact is None:
            raise CollabError(
                CollabCode.TASK_STATE_INVALID,
                f"task {task['id']} has no complete result of its current attempt and revision",
                {"task_id": task["id"], "status": task["status"]},
            )
        task = update(w, str(task["id"]), status=ACCEPTED, accepted_artifact_id=artifact["id"])
        ev = append(
            w,
            task,
            "accepted",
            attempt_id=task["current_attempt_id"],
            artifact_id=artifact["id"],
        )
        return {"task_id": task["id"], "event_id": ev.event_id, "artifact_id": artifact["id"]}

    return await perform(ctx, "collab.task.accept", params, body)


HANDLERS: Final[dict[str, Handler]] = {
    "collab.task.create": create,
    "collab.task.assign": assign,
    "collab.task.comment": comment,
    "collab.task.revise": revise,
    "collab.task.answer": answer,
    "collab.task.close": close,
    "collab.task.reopen": reopen,
    "collab.task.approve_plan": approve_plan,
    "collab.task.accept": accept,
}
