"""`collab.integration.*`: the local user manages principals (I1.1, I1.4, I1.5; #17).

`groups` and `list` read; `create`, `update` and `revoke` write, each with a row in
`principal_changes` (the identity's history, never rewritten). The verbs are the user's alone
(collab/rights.py `USER_ONLY`): never a pane caller, a session or a principal.

- `create {policy, token_sha256}`: the admin CLI made the token and wrote it to the credential
  file; the service only ever sees its SHA-256. An id that exists, revoked or not, is
  INTEGRATION_EXISTS: re-authorising needs a new identity, a credential is never replaced.
- `update {policy}`: the policy's permissions and launch profiles replace the stored ones; the
  id, group, token hash and history stay. Another `groupId` is INVALID_POLICY; a revoked
  identity is INTEGRATION_REVOKED (it is never revived).
- `revoke {id}`: sets `revoked_at`; every later request of the principal is refused, and the
  service ends its open streams (`Service.revoked`). A second revoke answers the same record.

No answer carries the token hash or a full launch profile (executables, argv, resume
templates): profiles are shown as `policy.public_profile` shows them.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from pebrel.collab import policy, principals, refs, writes
from pebrel.collab.handler import Ctx, Handler
from pebrel.collab.principals import Principal, find
from pebrel.collab.store import Store, Tx, dumps
from pebrel.errors import CollabCode, CollabError

SHA256_HEX: Final = re.compile(r"[0-9a-f]{64}")


def record(found: Principal) -> dict[str, Any]:
    """A principal as the admin sees it (never its token hash or launch commands)."""
    return {
        "principal_id": found.id,
        "group_id": found.group_id,
        "permissions": sorted(found.permissions, key=policy.PERMISSIONS.index),
        "launch_profiles": [policy.public_profile(p) for p in found.launch_profiles],
        "max_sessions": found.max_sessions,
        "revoked_at": found.revoked_at,
        "created_at": found.created_at,
        "updated_at": found.updated_at,
    }


def existing(db: Store | Tx, principal_id: str) -> Principal:
    found = find(db, principal_id)
    if found is None:
        raise CollabError(
            CollabCode.INTEGRATION_NOT_FOUND,
            f"no integration identity {principal_id!r}",
            {"principal": principal_id},
        )
    return found


def change(tx: Tx, principal_id: str, what: str, checked: dict[str, Any] | None) -> None:
    tx.insert(
        "principal_changes",
        {
            "principal_id": principal_id,
            "at": tx.now,
            "change": what,
            "policy": None if checked is None else dumps(checked),
        },
    )


def checked_policy(db: Store | Tx, params: dict[str, Any]) -> dict[str, Any]:
    """The request's policy, checked whole, its group known to exist."""
    checked = policy.check(params.get("policy"))
    group = refs.one(db, "SELECT id FROM groups WHERE id = ?", (checked["groupId"],))
    if group is None:
        raise policy.field_error(
            "groupId", f"no local group {checked['groupId']!r} (pebrel integration groups)"
        )
    return checked


async def groups(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    found = refs.rows(ctx.store, "SELECT id, name FROM groups ORDER BY created_at, rowid")
    return {"groups": [{"group_id": row["id"], "name": row["name"]} for row in found]}


async def list_principals(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    found = refs.rows(ctx.store, "SELECT * FROM principals ORDER BY created_at, rowid")
    return {"principals": [record(Principal.from_row(row)) for row in found]}


async def create(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    token_sha256 = params.get("token_sha256")
    if not isinstance(token_sha256, str) or not SHA256_HEX.fullmatch(token_sha256):
        raise CollabError(
            CollabCode.INVALID_ARGUMENT,
            "token_sha256 must be the token's SHA-256 as 64 lower-case hex digits",
            {"param": "token_sha256"},
        )

    def body(w: writes.Write) -> dict[str, Any]:
        principals.changed(w.ctx.store)
        checked = checked_policy(w.tx, params)
        principal_id = str(checked["id"])
        earlier = find(w.tx, principal_id)
        if earlier is not None:
            raise CollabError(
                CollabCode.INTEGRATION_EXISTS,
                f"integration identity {principal_id!r} exists"
                + (" (revoked: create one with a new id)" if earlier.revoked_at else ""),
                {"principal": principal_id, "revoked": earlier.revoked_at is not None},
            )
        w.tx.insert(
            "principals",
            {
                "id": principal_id,
                "group_id": checked["groupId"],
                "permissions": dumps(checked["permissions"]),
                "launch_profiles": dumps(checked["launchProfiles"]),
                "max_sessions": checked["maxSessions"],
                "token_hash": token_sha256,
                "revoked_at": None,
                "created_at": w.tx.now,
                "updated_at": w.tx.now,
            },
        )
        change(w.tx, principal_id, "create", checked)
        return {"principal": record(existing(w.tx, principal_id))}

    return await writes.perform(ctx, "collab.integration.create", params, body)


async def update(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    def body(w: writes.Write) -> dict[str, Any]:
        principals.changed(w.ctx.store)
        checked = policy.check(params.get("policy"))
        principal_id = str(checked["id"])
        found = existing(w.tx, principal_id)
        if found.revoked_at is not None:
            raise CollabError(
                CollabCode.INTEGRATION_REVOKED,
                f"integration identity {principal_id!r} was revoked; it cannot be updated",
                {"principal": principal_id},
            )
        if checked["groupId"] != found.group_id:
            raise policy.field_error(
                "groupId",
                f"an identity's group never changes (it is {found.group_id}); create a new"
                " identity for another group",
            )
        w.tx.execute(
            "UPDATE principals SET permissions = ?, launch_profiles = ?, max_sessions = ?,"
            " updated_at = ? WHERE id = ?",
            (
                dumps(checked["permissions"]),
                dumps(checked["launchProfiles"]),
                checked["maxSessions"],
                w.tx.now,
                found.id,
            ),
        )
        change(w.tx, principal_id, "update", checked)
        return {"principal": record(existing(w.tx, principal_id))}

    return await writes.perform(ctx, "collab.integration.update", params, body)


async def revoke(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    principal_id = refs.text(params, "id")

    def body(w: writes.Write) -> dict[str, Any]:
        principals.changed(w.ctx.store)
        found = existing(w.tx, principal_id)
        if found.revoked_at is None:
            w.tx.execute(
                "UPDATE principals SET revoked_at = ?, updated_at = ? WHERE id = ?",
                (w.tx.now, w.tx.now, found.id),
            )
            change(w.tx, principal_id, "revoke", None)
        return {"principal": record(existing(w.tx, principal_id))}

    return await writes.perform(ctx, "collab.integration.revoke", params, body)


def history(db: Store | Tx, principal_id: str) -> list[dict[str, Any]]:
    """The identity's changes, oldest first (what tests and support read)."""
    found = refs.rows(
        db,
        "SELECT at, change, policy FROM principal_changes WHERE principal_id = ? ORDER BY rowid",
        (principal_id,),
    )
    return [
        {
            "at": row["at"],
            "change": row["change"],
            "policy": None if row["policy"] is None else json.loads(row["policy"]),
        }
        for row in found
    ]


HANDLERS: Final[dict[str, Handler]] = {
    "collab.integration.groups": groups,
    "collab.integration.list": list_principals,
    "collab.integration.create": create,
    "collab.integration.update": update,
    "collab.integration.revoke": revoke,
}
