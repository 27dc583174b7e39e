"""Reading a request's params and resolving its references (groups, sessions, tasks) (#16).

The router validates `collab.*` params against the schema before they arrive; these checks
repeat the few that the domain relies on, so a handler never acts on a malformed value.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any, Final, TypeAlias

from pebrel.collab.store import Store, Tx
from pebrel.errors import CollabCode, CollabError

#: A stored row: `sqlite3.Row` as read, or a plain mapping just written.
#: Methods whose `session` param names the session acted on, not the acting one.
SESSION_IS_TARGET: Final = frozenset(
    {"collab.group.add", "collab.group.remove", "collab.session.get", "collab.session.restore"}
)
Row: TypeAlias = "sqlite3.Row | Mapping[str, Any]"


def text(params: Mapping[str, Any], name: str, *, empty: bool = False) -> str:
    """A required string param (non-empty unless ``empty``)."""
    value = params.get(name)
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise CollabError(
            CollabCode.INVALID_ARGUMENT, f"{name} must be a non-empty string", {"param": name}
        )
    return value


def opt_text(params: Mapping[str, Any], name: str) -> str | None:
    if params.get(name) is None:
        return None
    return text(params, name, empty=True)


def integer(params: Mapping[str, Any], name: str, default: int | None = None) -> int:
    value = params.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise CollabError(
            CollabCode.INVALID_ARGUMENT, f"{name} must be an integer", {"param": name}
        )
    return value


def one(db: Store | Tx, sql: str, args: Mapping[str, Any] | tuple[Any, ...]) -> Row | None:
    """The first row of a query as a mapping, through the store or an open transaction."""
    found = db.read(sql, args)
    return found[0] if found else None


def rows(db: Store | Tx, sql: str, args: tuple[Any, ...] = ()) -> list[Row]:
    return list(db.read(sql, args))


def group(db: Store | Tx, ref: str) -> Row:
    """A group by id or name; GROUP_NOT_FOUND otherwise."""
    found = one(db, "SELECT * FROM groups WHERE id = ? OR name = ?", (ref, ref))
    if found is None:
        raise CollabError(CollabCode.GROUP_NOT_FOUND, f"no group {ref!r}", {"group": ref})
    return found


def session(db: Store | Tx, ref: str) -> Row:
    found = one(db, "SELECT * FROM sessions WHERE id = ?", (ref,))
    if found is None:
        raise CollabError(
            CollabCode.INTEGRATION_SESSION_NOT_FOUND, f"no session {ref!r}", {"session": ref}
        )
    return found


def task(db: Store | Tx, ref: str) -> Row:
    found = one(db, "SELECT * FROM tasks WHERE id = ?", (ref,))
    if found is None:
        raise CollabError(CollabCode.TASK_NOT_FOUND, f"no task {ref!r}", {"task": ref})
    return found


def attempt(db: Store | Tx, task_id: str, ref: str) -> Row:
    """An attempt of this task; ATTEMPT_NOT_FOUND for an unknown one or another task's."""
    found = one(db, "SELECT * FROM attempts WHERE id = ? AND task_id = ?", (ref, task_id))
    if found is None:
        raise CollabError(
            CollabCode.ATTEMPT_NOT_FOUND,
            f"task {task_id} has no attempt {ref!r}",
            {"task_id": task_id, "attempt": ref},
        )
    return found


def current_attempt(db: Store | Tx, task_row: Row) -> Row | None:
    current = task_row["current_attempt_id"]
    if current is None:
        return None
    return one(db, "SELECT * FROM attempts WHERE id = ?", (current,))
