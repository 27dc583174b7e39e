"""Messages with their latest delivery stage: a task's outbox, and failing what can no longer
be delivered (#16 item 4: "a removed assignee leaves an explicit failed record").
"""

from __future__ import annotations

import json
from typing import Any, Final

from pebrel.collab import refs
from pebrel.collab.delivery import FAILED, QUEUED, append_stage
from pebrel.collab.store import Store, Tx

REMOVED_FROM_GROUP: Final = "removed_from_group"

#: Each message joined with its newest stage row (stages of one message share its group, so
#: the newest is the highest sequence).
_LATEST: Final = """
SELECT m.id AS message_id, m.group_id, m.to_session, m.from_actor, m.task_id, m.attempt_id,
       m.reply_to_event_id, m.content, m.created_at, s.delivery_id, s.stage, s.reason,
       s.try AS retries, s.at
FROM messages m JOIN delivery_stages s ON s.message_id = m.id
WHERE s.sequence = (SELECT max(sequence) FROM delivery_stages WHERE message_id = m.id)
"""


def latest(db: Store | Tx, where: str, args: tuple[Any, ...]) -> list[refs.Row]:
    return refs.rows(db, f"{_LATEST} AND {where} ORDER BY m.sequence", args)


def entry(row: refs.Row) -> dict[str, Any]:
    """One outbox line: the message, where it went, and its latest stage."""
    return {
        "message_id": row["message_id"],
        "to_session_id": row["to_session"],
        "from": json.loads(row["from_actor"]),
        "attempt_id": row["attempt_id"],
        "reply_to_event_id": row["reply_to_event_id"],
        "delivery_id": row["delivery_id"],
        "stage": row["stage"],
        "reason": row["reason"],
        "retries": row["retries"],
        "at": row["at"],
        "created_at": row["created_at"],
    }


def task_outbox(db: Store | Tx, task_id: str) -> list[dict[str, Any]]:
    return [entry(row) for row in latest(db, "m.task_id = ?", (task_id,))]


def fail_queued(tx: Tx, session_id: str, group_id: str, reason: str) -> list[str]:
    """Append a `failed` stage with ``reason`` to every message of the group to this session
    still waiting in `queued`; returns their message ids."""
    failed = []
    for row in latest(
        tx, "m.to_session = ? AND m.group_id = ? AND s.stage = ?", (session_id, group_id, QUEUED)
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
            tries=int(row["retries"]),
        )
        failed.append(str(row["message_id"]))
    return failed
