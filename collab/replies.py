"""`collab.reply`: answer a delivered message (I3.4, #16 item 4).

The message must have been sent to the acting session and belong to a task. Without `status`
the reply is stored as a `respond` linked to the consultation (the comment event the message
carried); with `status` it is a `report` on the task's current attempt.
"""

from __future__ import annotations

from typing import Any, Final

from pebrel.collab import refs, rights
from pebrel.collab.handler import Ctx, Handler
from pebrel.collab.task_log import member_task
from pebrel.collab.task_reports import do_report, do_respond
from pebrel.collab.writes import Write, perform
from pebrel.errors import CollabCode, CollabError


async def reply(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    message_ref = refs.text(params, "message")
    content = refs.text(params, "content")
    status = refs.opt_text(params, "status")

    def body(w: Write) -> dict[str, Any]:
        message = refs.one(w.tx, "SELECT * FROM messages WHERE id = ?", (message_ref,))
        if message is None:
            raise CollabError(
                CollabCode.MESSAGE_NOT_FOUND,
                f"no message {message_ref!r}",
                {"message": message_ref},
            )
        if message["to_session"] != w.ctx.actor.session_id:
            raise rights.denied(
                "a session replies only to messages sent to it",
                message_id=message_ref,
                session=w.ctx.actor.session_id,
            )
        if message["task_id"] is None:
            raise CollabError(
                CollabCode.INVALID_ARGUMENT,
                f"message {message_ref} belongs to no task",
                {"message_id": message_ref},
            )
        task = member_task(w, str(message["task_id"]))
        base = {"message_id": message_ref}
        if status is not None:
            done = do_report(
                w, task, status, str(message["attempt_id"]), content, None, params.get("evidence")
            )
            return {**done, **base, "kind": "report"}
        linked = refs.one(
            w.tx,
            "SELECT kind FROM task_events WHERE event_id = ?",
            (message["reply_to_event_id"],),
        )
        if linked is None or linked["kind"] != "task.comment":
            raise CollabError(
                CollabCode.INVALID_ARGUMENT,
                f"message {message_ref} is not a consultation: reply with a status to report",
                {"message_id": message_ref},
            )
        done = do_respond(
            w, task, str(message["attempt_id"]), str(message["reply_to_event_id"]), content
        )
        return {**done, **base, "kind": "respond"}

    return await perform(ctx, "collab.reply", params, body)


HANDLERS: Final[dict[str, Handler]] = {"collab.reply": reply}
