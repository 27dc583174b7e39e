"""Principals: restricted integration identities bound to one group (FEATURES I1, #17).

A principal is created by the local user from a policy file (`pebrel integration create`); its
token lives only in the credential file the admin CLI writes. The service stores a SHA-256 of
the token (the token is 256 random bits, so a plain hash cannot be reversed or guessed) and
compares hashes in constant time. This module reads and checks principals; the admin methods
that create, update and revoke them build on it.
"""

from __future__ import annotations

import hmac
import json
from dataclasses import dataclass
from typing import Any

from pebrel.collab import refs
from pebrel.collab.policy import MAX_SESSIONS_DEFAULT
from pebrel.collab.store import Store, Tx
from pebrel.errors import CollabCode, CollabError
from pebrel.integration_wire import token_hash


@dataclass(frozen=True, slots=True)
class Principal:
    """One principal as stored (never its token)."""

    id: str
    group_id: str
    permissions: frozenset[str]
    launch_profiles: tuple[dict[str, Any], ...]
    #: Live sessions it may hold (policy `maxSessions`; 16 for one stored before it existed).
    max_sessions: int
    revoked_at: int | None
    created_at: int
    updated_at: int

    @classmethod
    def from_row(cls, row: refs.Row) -> Principal:
        return cls(
            id=str(row["id"]),
            group_id=str(row["group_id"]),
            permissions=frozenset(json.loads(row["permissions"])),
            launch_profiles=tuple(json.loads(row["launch_profiles"])),
            max_sessions=int(row["max_sessions"] or MAX_SESSIONS_DEFAULT),
            revoked_at=None if row["revoked_at"] is None else int(row["revoked_at"]),
            created_at=int(row["created_at"]),
            updated_at=int(row["updated_at"]),
        )


def find(db: Store | Tx, principal_id: str) -> Principal | None:
    row = refs.one(db, "SELECT * FROM principals WHERE id = ?", (principal_id,))
    return None if row is None else Principal.from_row(row)


def changed(store: Store) -> None:
    """A principal is being created, updated or revoked: forget the kept ones (`current`)."""
    for key in [k for k in store.memo if k[0] == "principal"]:
        del store.memo[key]


def unauthorized() -> CollabError:
    """One answer for an unknown principal and a wrong token (no oracle for ids)."""
    return CollabError(
        CollabCode.INTEGRATION_UNAUTHORIZED, "unknown integration identity or wrong token"
    )


def revoked(principal_id: str) -> CollabError:
    return CollabError(
        CollabCode.INTEGRATION_REVOKED,
        f"integration identity {principal_id!r} was revoked; create a new one to re-authorise",
        {"principal": principal_id},
    )


def authenticate(store: Store, principal_id: object, token: object) -> Principal:
    """The principal a hello line proves, or INTEGRATION_UNAUTHORIZED / INTEGRATION_REVOKED."""
    if not isinstance(principal_id, str) or not isinstance(token, str) or not token:
        raise unauthorized()
    row = refs.one(store, "SELECT * FROM principals WHERE id = ?", (principal_id,))
    if row is None:
        hmac.compare_digest(token_hash(token), "0" * 64)  # the same work as a found one
        raise unauthorized()
    if not hmac.compare_digest(token_hash(token), str(row["token_hash"])):
        raise unauthorized()
    found = Principal.from_row(row)
    if found.revoked_at is not None:
        raise revoked(found.id)
    return found


def current(store: Store, principal_id: str) -> Principal:
    """The principal as it is now, for each request on an open connection: a revoke between
    two requests refuses the second (I1.4).

    Kept in `Store.memo` (per request it is the one lookup every principal makes); the
    writes that change principals (collab/integration_admin.py) call `changed` in their
    transaction, and a batch that fails to commit empties the memo. One read from the open
    batch is used outside a request only once that batch committed (`Store.recall`)."""
    key = ("principal", principal_id)
    found: Principal | None = store.recall(key)
    if found is None:
        found = find(store, principal_id)
        if found is not None:
            store.memo[key] = found
    if found is None:
        raise unauthorized()
    if found.revoked_at is not None:
        raise revoked(found.id)
    return found
