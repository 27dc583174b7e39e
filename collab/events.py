"""`collab.events.list`: read a group's journal after a sequence (I2, #16 item 5).

The pushed, ACKed stream for principals is the next issue; this is the plain read. `floor`
is the highest trimmed sequence (events at or below it are gone for good) and
`last_sequence` the newest sequence the group has.
"""

from __future__ import annotations

from typing import Any, Final

from pebrel.collab import refs, rights
from pebrel.collab.handler import Ctx, Handler
from pebrel.collab.journal import event_record
from pebrel.errors import CollabCode, CollabError

DEFAULT_LIMIT: Final = 100
MAX_LIMIT: Final = 1000


async def list_events(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    group = refs.group(ctx.store, refs.text(params, "group"))
    group_id = str(group["id"])
    rights.require_member(ctx.store, ctx.actor, group_id)
    after = refs.integer(params, "after", 0)
    limit = refs.integer(params, "limit", DEFAULT_LIMIT)
    if after < 0 or not 1 <= limit <= MAX_LIMIT:
        raise CollabError(
            CollabCode.INVALID_ARGUMENT,
            f"after is at least 0 and limit between 1 and {MAX_LIMIT}",
            {"after": after, "limit": limit},
        )
    found = refs.rows(
        ctx.store,
        "SELECT * FROM journal WHERE group_id = ? AND sequence > ? ORDER BY sequence LIMIT ?",
        (group_id, after, limit),
    )
    return {
        "events": [event_record(row) for row in found],
        "floor": ctx.store.floor(group_id),
        "last_sequence": group["last_sequence"],
    }


HANDLERS: Final[dict[str, Handler]] = {"collab.events.list": list_events}
