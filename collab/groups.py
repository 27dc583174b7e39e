"""Groups: sets of sessions that share tasks (#16 item 2). Writes are the local user's alone.

A session is in at most one group. Adding a session announces it to the group's journal with
its current `session.<state>` record; removing it does the same (its record then has no group)
and fails, with reason "removed_from_group", every message of that group still queued to it.
"""

from __future__ import annotations

from typing import Any, Final

from pebrel.collab import refs, sessions, writes
from pebrel.collab.delivery import REMOVED_FROM_GROUP, fail_queued
from pebrel.collab.handler import Ctx, Handler
from pebrel.collab.store import Store, Tx, new_id
from pebrel.errors import CollabCode, CollabError


def members(db: Store | Tx, group_id: str) -> list[str]:
    found = refs.rows(
        db, "SELECT id FROM sessions WHERE group_id = ? ORDER BY created_at, rowid", (group_id,)
    )
    return [str(row["id"]) for row in found]


def record(db: Store | Tx, row: refs.Row) -> dict[str, Any]:
    return {
        "group_id": row["id"],
        "name": row["name"],
        "created_at": row["created_at"],
        "sessions": members(db, str(row["id"])),
    }


async def create(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    name = refs.text(params, "name")
    if name != name.strip() or name.startswith("grp_") or len(name) > 100:
        raise CollabError(
            CollabCode.INVALID_ARGUMENT,
            "a group name has no surrounding spaces, does not start with grp_ and has at most"
            " 100 characters",
            {"param": "name"},
        )

    def body(w: writes.Write) -> dict[str, Any]:
        if refs.one(w.tx, "SELECT id FROM groups WHERE name = ?", (name,)) is not None:
            raise CollabError(
                CollabCode.GROUP_NAME_CONFLICT, f"a group named {name!r} exists", {"name": name}
            )
        row = {"id": new_id("grp"), "name": name, "created_at": w.tx.now}
        w.tx.insert("groups", row)
        return {"group": record(w.tx, row)}

    return await writes.perform(ctx, "collab.group.create", params, body)


async def list_groups(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    found = refs.rows(ctx.store, "SELECT * FROM groups ORDER BY created_at, rowid")
    return {"groups": [record(ctx.store, row) for row in found]}


async def show(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    row = refs.group(ctx.store, refs.text(params, "group"))
    snapshot = await sessions.current_snapshot(ctx)
    found = refs.rows(
        ctx.store,
        "SELECT * FROM sessions WHERE group_id = ? ORDER BY created_at, rowid",
        (row["id"],),
    )
    return {
        "group": record(ctx.store, row),
        "sessions": [sessions.record(s, snapshot) for s in found],
    }


async def add(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    group_ref = refs.text(params, "group")
    session_ref = refs.text(params, "session")
    snapshot = await sessions.current_snapshot(ctx)

    def body(w: writes.Write) -> dict[str, Any]:
        group = refs.group(w.tx, group_ref)
        session = refs.session(w.tx, session_ref)
        if session["group_id"] == group["id"]:
            return {"group": record(w.tx, group)}
        if session["group_id"] is not None:
            raise CollabError(
                CollabCode.SESSION_ALREADY_REGISTERED,
                f"session {session['id']} is already in group {session['group_id']}",
                {"session_id": session["id"], "group_id": session["group_id"]},
            )
        w.tx.execute(
            "UPDATE sessions SET group_id = ?, updated_at = ? WHERE id = ?",
            (group["id"], w.tx.now, session["id"]),
        )
        sessions.append_event(w.tx, refs.session(w.tx, str(session["id"])), snapshot)
        return {"group": record(w.tx, group)}

    return await writes.perform(ctx, "collab.group.add", params, body)


async def remove(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    group_ref = refs.text(params, "group")
    session_ref = refs.text(params, "session")
    snapshot = await sessions.current_snapshot(ctx)

    def body(w: writes.Write) -> dict[str, Any]:
        group = refs.group(w.tx, group_ref)
        session = refs.session(w.tx, session_ref)
        group_id = str(group["id"])
        if session["group_id"] != group_id:
            raise CollabError(
                CollabCode.SESSION_NOT_IN_GROUP,
                f"session {session['id']} is not in group {group['name']}",
                {"session_id": session["id"], "group_id": group_id},
            )
        fail_queued(w.tx, str(session["id"]), group_id, REMOVED_FROM_GROUP)
        w.tx.execute(
            "UPDATE sessions SET group_id = NULL, updated_at = ? WHERE id = ?",
            (w.tx.now, session["id"]),
        )
        sessions.append_event(
            w.tx, refs.session(w.tx, str(session["id"])), snapshot, group_id=group_id
        )
        return {"group": record(w.tx, group)}

    return await writes.perform(ctx, "collab.group.remove", params, body)


HANDLERS: Final[dict[str, Handler]] = {
    "collab.group.create": create,
    "collab.group.list": list_groups,
    "collab.group.show": show,
    "collab.group.add": add,
    "collab.group.remove": remove,
}
