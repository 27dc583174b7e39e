"""Who may do what: the one place for the spec's "任务与权限" table (I3.2, #16 item 2).

Two callers exist in this issue: the local user (the token holder outside any pane) and a
process inside a pane. The router stamps each request with its caller; here the caller and the
request's optional `session` param become the **actor** a write is done as:

| caller | `session` param | actor |
|---|---|---|
| user | none | the user |
| user | S (exists) | session S (the user may act as any session) |
| pane bound to S | none or S | session S |
| pane bound to S | another session | INTEGRATION_PERMISSION_DENIED |
| pane with no session, unknown | none | reads only (writes: INTEGRATION_PERMISSION_DENIED) |
| pane with no session, unknown | any | INTEGRATION_PERMISSION_DENIED |

A pane caller acts only as the session bound to its own pane, never as the user: a process in a
pane with no registered session may read, and nothing else.

(For `group.add`, `group.remove` and `session.get` the `session` param names the session acted
on, never the actor: `refs.SESSION_IS_TARGET`.)

Then the verb: `USER_ONLY` verbs need the user calling as the user (never a pane caller, never
acting as a session); `SESSION_ONLY` verbs need a session actor (and, in the handler, the
attempt's assignee). Group rules are checked by the handlers with `require_member`: a session
acts only in its own group and reads only its own group's tasks and events.

A **principal** (a request from the integration socket, caller `{"kind": "principal",
"principal_id": ID}`, #17) acts as itself, never as a session or the user. It is re-read at
each request (`principals.current`: a revoke refuses the next request on an open connection),
then the spec's table for external identities (`PRINCIPAL_RIGHTS`) decides: each method it may
call needs one granted permission (capabilities none), `task.create` with an assignee also
`task.assign`, and everything else is INTEGRATION_PERMISSION_DENIED. It acts and reads only
in its own group (`require_member`, `actor_group`), and each of its writes needs an explicit
`idempotency_key` (I3.1): a retry from another process must be able to name the same write.

This guards against agents overstepping their role, not against a hostile process of the same
OS user (docs/collab.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pebrel.collab import principals, refs
from pebrel.collab.handler import Actor
from pebrel.collab.online import Seen, reach
from pebrel.collab.store import Store, Tx
from pebrel.errors import CollabCode, CollabError

USER: Final = Actor("user")

#: Verbs only the local user may do (accept, approve-plan, group and session management).
USER_ONLY: Final = frozenset(
    {
        "collab.group.create",
        "collab.group.add",
        "collab.group.remove",
        "collab.session.register",
        "collab.session.create",
        "collab.session.restore",
        "collab.task.accept",
        "collab.task.approve_plan",
        "collab.integration.groups",
        "collab.integration.list",
        "collab.integration.create",
        "collab.integration.update",
        "collab.integration.revoke",
    }
)
#: Verbs only a session may do (the handler then checks it is the attempt's assignee).
SESSION_ONLY: Final = frozenset(
    {
        "collab.task.respond",
        "collab.task.report",
        "collab.task.question",
        "collab.task.submit_plan",
        "collab.reply",
    }
)
#: Verbs that change nothing.
READS: Final = frozenset(
    {
        "collab.capabilities",
        "collab.group.list",
        "collab.group.show",
        "collab.session.get",
        "collab.session.list",
        "collab.task.get",
        "collab.task.list",
        "collab.message.get",
        "collab.events.list",
        "collab.integration.groups",
        "collab.integration.list",
    }
)
#: What a principal may call and the permission each needs (spec "任务与权限", FEATURES I3.2,
#: I1.2; None: no permission needed). Anything else is refused. The `collab.events.subscribe`
#: / `.ack` and `collab.session.create` / `.restore` rows are for the methods of the event
#: stream and of principal sessions (#18).
PRINCIPAL_RIGHTS: Final[Mapping[str, str | None]] = {
    "collab.capabilities": None,
    "collab.task.list": "task.read",
    "collab.task.get": "task.read",
    "collab.message.get": "task.read",
    "collab.task.create": "task.create",
    "collab.task.assign": "task.assign",
    "collab.task.comment": "task.comment",
    "collab.task.revise": "task.revise",
    "collab.task.answer": "task.answer",
    "collab.events.list": "events.read",
    "collab.events.subscribe": "events.read",
    "collab.events.ack": "events.read",
    "collab.session.create": "session.create",
    "collab.session.get": "session.read",
    "collab.session.restore": "session.restore",
}
#: A principal's writes: each needs an explicit idempotency_key (I3.1).
PRINCIPAL_WRITES: Final = frozenset(
    {
        "collab.task.create",
        "collab.task.assign",
        "collab.task.comment",
        "collab.task.revise",
        "collab.task.answer",
        "collab.session.create",
        "collab.session.restore",
    }
)


def denied(message: str, **details: Any) -> CollabError:
    return CollabError(CollabCode.INTEGRATION_PERMISSION_DENIED, message, details)


def is_pane(caller: Mapping[str, Any]) -> bool:
    """Anything but the user or a principal is treated as a pane caller (an unknown peer
    included)."""
    return caller.get("kind") not in ("user", "principal")


def is_principal(caller: Mapping[str, Any]) -> bool:
    return caller.get("kind") == "principal"


def principal_of(store: Store, caller: Mapping[str, Any]) -> principals.Principal:
    """The calling principal as it is now: INTEGRATION_UNAUTHORIZED when unknown,
    INTEGRATION_REVOKED once revoked (I1.4)."""
    principal_id = caller.get("principal_id")
    if not isinstance(principal_id, str):
        raise principals.unauthorized()
    return principals.current(store, principal_id)


def resolve_principal(
    store: Store, caller: Mapping[str, Any], method: str, params: Mapping[str, Any]
) -> Actor:
    """A principal's request: the table, its permissions and its idempotency key."""
    found = principal_of(store, caller)
    if method not in PRINCIPAL_RIGHTS:
        raise denied(f"{method} is not open to integration identities", method=method)
    needed = [PRINCIPAL_RIGHTS[method]]
    if method == "collab.task.create" and params.get("assignee") is not None:
        needed.append("task.assign")  # creating with an assignee assigns it
    missing = [name for name in needed if name is not None and name not in found.permissions]
    if missing:
        raise denied(
            f"integration identity {found.id!r} lacks {', '.join(missing)} for {method}",
            method=method,
            principal=found.id,
            missing=missing,
        )
    if method not in refs.SESSION_IS_TARGET and params.get("session") is not None:
        raise denied(
            "an integration identity acts as itself, never as a session",
            method=method,
            session=params.get("session"),
        )
    group_ref = params.get("group")
    if isinstance(group_ref, str) and not own_group(store, found, group_ref):
        # Refused whether or not such a group exists, and without its id: no oracle for the
        # names of other groups.
        raise denied(
            "this integration identity acts only in its own group",
            principal=found.id,
            group=group_ref,
        )
    if method in PRINCIPAL_WRITES and params.get("idempotency_key") is None:
        raise CollabError(
            CollabCode.INVALID_ARGUMENT,
            "an integration identity's write needs an idempotency_key (a stable key lets a"
            " retry from any process name the same write)",
            {"param": "idempotency_key", "method": method},
        )
    return Actor("principal", principal_id=found.id, group_id=found.group_id)


def own_group(store: Store, principal: principals.Principal, ref: str) -> bool:
    """Whether a `group` param (an id or a name) names the principal's own group."""
    if ref == principal.group_id:
        return True
    row = refs.one(store, "SELECT name FROM groups WHERE id = ?", (principal.group_id,))
    return row is not None and ref == row["name"]


def pane_session(
    store: Store, snapshot: Mapping[str, Any] | None, caller: Mapping[str, Any]
) -> str | None:
    """The session bound to the caller's pane and online there now (the newest of several).

    None for an unknown caller, before the first snapshot, or when no session is online in
    that pane: a session is never matched by pane numbers alone (a restarted runtime reuses
    them).
    """
    if caller.get("kind") != "pane" or snapshot is None:
        return None
    found = refs.rows(
        store,
        "SELECT * FROM sessions WHERE json_extract(terminal_binding, '$.window_id') = ?"
        " AND json_extract(terminal_binding, '$.pane_id') = ? ORDER BY created_at DESC, rowid DESC",
        (caller.get("window_id"), caller.get("pane_id")),
    )
    seen = Seen.of(snapshot)
    for row in found:
        if reach(row, seen)[0]:
            return str(row["id"])
    return None


def resolve_actor(
    store: Store,
    snapshot: Mapping[str, Any] | None,
    caller: Mapping[str, Any],
    params: Mapping[str, Any],
) -> Actor:
    """Who the request acts as (see the table in the module docstring)."""
    claimed = params.get("session")
    if claimed is not None and not isinstance(claimed, str):
        raise CollabError(CollabCode.INVALID_ARGUMENT, "session must be a session id")
    if not is_pane(caller):
        if claimed is None:
            return USER
        return Actor("session", str(refs.session(store, claimed)["id"]))
    bound = pane_session(store, snapshot, caller)
    if claimed is not None and claimed != bound:
        raise denied(
            "a process in a pane acts only as the session bound to its own pane",
            session=claimed,
            bound_session=bound,
        )
    return Actor("session", bound) if bound is not None else USER


def check_verb(caller: Mapping[str, Any], actor: Actor, method: str) -> None:
    """The verb-level rules: user-only and session-only verbs."""
    if is_pane(caller) and actor.kind != "session" and method not in READS:
        raise denied(
            "a process in a pane acts only as the session bound to that pane, and none is",
            method=method,
        )
    if method in USER_ONLY and (is_pane(caller) or actor.kind != "user"):
        raise denied(f"{method} is the local user's alone", method=method)
    if method in SESSION_ONLY and actor.kind != "session":
        raise denied(
            f"{method} is done by a session: pass session (pebrel collab --session ID)",
            method=method,
        )


def resolve(
    store: Store,
    snapshot: Mapping[str, Any] | None,
    caller: Mapping[str, Any],
    method: str,
    params: Mapping[str, Any],
) -> Actor:
    """The actor of one request, after the verb-level checks."""
    if is_principal(caller):
        return resolve_principal(store, caller, method, params)
    if method in refs.SESSION_IS_TARGET:
        params = {k: v for k, v in params.items() if k != "session"}
    actor = resolve_actor(store, snapshot, caller, params)
    check_verb(caller, actor, method)
    return actor


def caller_wire(caller: Mapping[str, Any], actor: Actor) -> dict[str, Any]:
    """The caller as collab.capabilities reports it: the user, a session (with its pane when
    the caller is in one), a pane with no session, or an unknown caller."""
    where = {k: caller[k] for k in ("window_id", "pane_id") if k in caller}
    if actor.kind == "principal":
        return actor.wire()
    if actor.kind == "session":
        return {**actor.wire(), **where}
    if not is_pane(caller):
        return {"kind": "user"}
    return {"kind": "pane", **where} if caller.get("kind") == "pane" else {"kind": "unknown"}


def origin(caller: Mapping[str, Any]) -> dict[str, Any] | None:
    """Where a write came from when that is not the user's own process (kept in events): the
    pane, or the integration identity (I3.3)."""
    if is_principal(caller):
        return {"integrationId": caller.get("principal_id")}
    if not is_pane(caller):
        return None
    return {k: caller[k] for k in ("kind", "window_id", "pane_id") if k in caller}


# -- group rules (the handlers call these) --------------------------------------------------------
def session_group(db: Store | Tx, actor: Actor) -> str | None:
    if actor.session_id is None:
        return None
    row = refs.session(db, actor.session_id)
    return None if row["group_id"] is None else str(row["group_id"])


def actor_group(db: Store | Tx, actor: Actor) -> str | None:
    """The one group a session or a principal acts in (None: a session in no group)."""
    if actor.kind == "principal":
        return actor.group_id  # read with the principal at its request; it never changes (I1.5)
    return session_group(db, actor)


def require_member(db: Store | Tx, actor: Actor, group_id: str) -> None:
    """A session or a principal acts (and reads tasks, sessions and events) only in its own
    group; the user anywhere."""
    if actor.kind == "user":
        return
    if actor_group(db, actor) != group_id:
        if actor.kind == "principal":
            raise denied(
                "this integration identity acts only in its own group",
                principal=actor.principal_id,
            )
        raise denied(
            "this session is not a member of the task's group",
            session=actor.session_id,
            group_id=group_id,
        )


def require_assignee(actor: Actor, attempt: refs.Row) -> None:
    if actor.session_id != attempt["assignee_session"]:
        raise denied(
            "only the attempt's assignee may do this",
            session=actor.session_id,
            attempt_id=attempt["id"],
        )
