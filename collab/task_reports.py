"""The assignee's task verbs: question, respond, report, submit-plan (I3, #16 item 3).

Only a session does these, and only as the attempt's assignee: `report`, `question` and
`submit_plan` for the current attempt; `respond` for the attempt of the comment it answers
(it adds a linked event and changes no report, artifact or acceptance). A `complete` report
makes a new immutable artifact (event `task.result`).
"""

from __future__ import annotations

from typing import Any, Final

from pebrel.collab import refs, rights
from pebrel.collab.handler import Ctx, Handler
from pebrel.collab.store import dumps, new_id
from pebrel.collab.task_log import (
    LIVE,
    OPEN,
    append,
    member_task,
    require_attempt,
    require_status,
    update,
)
from pebrel.collab.task_texts import REPORT_STATUSES
from pebrel.collab.writes import Write, perform
from pebrel.errors import CollabCode, CollabError


def assignee_attempt(w: Write, task: refs.Row, action: str) -> refs.Row:
    """The current attempt, once the actor is known to be its assignee."""
    attempt = require_attempt(w, task, action)
    rights.require_assignee(w.ctx.actor, attempt)
    return attempt


def do_respond(
    w: Write, task: refs.Row, attempt_ref: str, to_event: str, content: str
) -> dict[str, Any]:
    attempt = refs.attempt(w.tx, str(task["id"]), attempt_ref)
    rights.require_assignee(w.ctx.actor, attempt)
    comment = refs.one(
        w.tx,
        "SELECT event_id FROM task_events WHERE event_id = ? AND task_id = ? AND attempt_id = ?"
        " AND kind = 'task.comment'",
        (to_event, task["id"], attempt["id"]),
    )
    if comment is None:
        raise CollabError(
            CollabCode.EVENT_NOT_FOUND,
            f"attempt {attempt['id']} has no comment event {to_event!r}",
            {"task_id": task["id"], "attempt_id": attempt["id"], "to_event": to_event},
        )
    ev = append(
        w,
        task,
        "respond",
        attempt_id=str(attempt["id"]),
        content=content,
        reply_to_event_id=to_event,
    )
    return {"task_id": task["id"], "event_id": ev.event_id}


def do_report(
    w: Write,
    task: refs.Row,
    status: str,
    attempt_ref: str | None,
    content: str | None,
    summary: str | None,
    evidence: Any,
) -> dict[str, Any]:
    if status not in REPORT_STATUSES:
        raise CollabError(
            CollabCode.INVALID_ARGUMENT,
            f"status is one of {', '.join(REPORT_STATUSES)}",
            {"param": "status"},
        )
    if attempt_ref is not None:
        named = refs.attempt(w.tx, str(task["id"]), attempt_ref)
        if named["id"] != task["current_attempt_id"]:
            raise CollabError(
                CollabCode.ATTEMPT_NOT_CURRENT,
                f"attempt {attempt_ref} is not the task's current attempt",
                {"attempt_id": attempt_ref, "current_attempt_id": task["current_attempt_id"]},
            )
    attempt = assignee_attempt(w, task, "report")
    require_status(task, frozenset({OPEN}), "report on")
    try:
        evidence_json = dumps(evidence)
    except (TypeError, ValueError) as exc:
        raise CollabError(
            CollabCode.INVALID_ARGUMENT, "evidence must be plain JSON", {"param": "evidence"}
        ) from exc
    artifact_id = new_id("art") if status == "complete" else None
    if status == "complete" and not (content or summary):
        raise CollabError(
            CollabCode.INVALID_ARGUMENT,
            "a complete report carries its result: content or summary",
            {"param": "content"},
        )
    ev = append(
        w,
        task,
        "report",
        attempt_id=str(attempt["id"]),
        content=content,
        report_status=status,
        summary=summary,
        evidence=evidence,
        artifact_id=artifact_id,
    )
    w.tx.execute("UPDATE attempts SET last_report = ? WHERE id = ?", (status, attempt["id"]))
    update(w, str(task["id"]))
    result: dict[str, Any] = {"task_id": task["id"], "event_id": ev.event_id}
    if artifact_id is not None:
        artifact = {
            "artifact_id": artifact_id,
            "task_id": task["id"],
            "attempt_id": attempt["id"],
            "report_event_id": ev.event_id,
            "actor": w.ctx.actor.wire(),
            "content": content or "",
            "summary": summary,
            "evidence": evidence,
            "created_at": w.tx.now,
        }
        result_ev = w.tx.event(
            str(task["group_id"]),
            "task.result",
            {"artifact": artifact},
            {
                "task_id": task["id"],
                "attempt_id": attempt["id"],
                "artifact_id": artifact_id,
                "source": "session",
                "actor": w.ctx.actor.wire(),
            },
        )
        w.tx.fact(
            "artifacts",
            result_ev,
            {
                "id": artifact_id,
                "task_id": task["id"],
                "attempt_id": attempt["id"],
                "revision": task["revision"],
                "content": content or "",
                "summary": summary,
                "evidence": None if evidence is None else evidence_json,
            },
        )
        result["artifact_id"] = artifact_id
    return result


async def question(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    ref = refs.text(params, "task")
    content = refs.text(params, "content")

    def body(w: Write) -> dict[str, Any]:
        task = member_task(w, ref)
        attempt = assignee_attempt(w, task, "ask")
        require_status(task, LIVE, "ask about")
        decision_id = new_id("dec")
        ev = append(
            w,
            task,
            "question",
            attempt_id=str(attempt["id"]),
            content=content,
            decision_id=decision_id,
        )
        w.tx.insert(
            "decisions",
            {
                "id": decision_id,
                "task_id": task["id"],
                "attempt_id": attempt["id"],
                "question_event_id": ev.event_id,
                "question": content,
            },
        )
        update(w, str(task["id"]))
        return {"task_id": task["id"], "event_id": ev.event_id, "decision_id": decision_id}

    return await perform(ctx, "collab.task.question", params, body)


async def respond(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    ref = refs.text(params, "task")
    attempt_ref = refs.text(params, "attempt")
    to_event = refs.text(params, "to_event")
    content = refs.text(params, "content")

    def body(w: Write) -> dict[str, Any]:
        return do_respond(w, member_task(w, ref), attempt_ref, to_event, content)

    return await perform(ctx, "collab.task.respond", params, body)


async def report(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    ref = refs.text(params, "task")
    status = refs.text(params, "status")
    attempt_ref = refs.opt_text(params, "attempt")
    content = refs.opt_text(params, "content")
    summary = refs.opt_text(params, "summary")

    def body(w: Write) -> dict[str, Any]:
        task = member_task(w, ref)
        return do_report(w, task, status, attempt_ref, content, summary, params.get("evidence"))

    return await perform(ctx, "collab.task.report", params, body)


async def submit_plan(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    ref = refs.text(params, "task")
    content = refs.text(params, "content")

    def body(w: Write) -> dict[str, Any]:
        task = member_task(w, ref)
        attempt = assignee_attempt(w, task, "submit a plan")
        require_status(task, frozenset({OPEN}), "submit a plan for")
        task = update(w, str(task["id"]), plan_state="submitted")
        ev = append(w, task, "submit-plan", attempt_id=str(attempt["id"]), content=content)
        return {"task_id": task["id"], "event_id": ev.event_id}

    return await perform(ctx, "collab.task.submit_plan", params, body)


HANDLERS: Final[dict[str, Handler]] = {
    "collab.task.question": question,
    "collab.task.respond": respond,
    "collab.task.report": report,
    "collab.task.submit_plan": submit_plan,
}
