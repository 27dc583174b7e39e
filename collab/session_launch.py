"""Sessions from launch profiles: `collab.session.create` and `.restore` (I4.2-I4.3, #18).

A principal with `session.create` names one of its launch profiles and a cwd; the local user
does the same with `group` (and `integration` when two identities of the group have a profile
of that id). The service checks the launch rules (collab/launch.py), then:

1. **Intent, durable first.** One write makes the session (`starting`, `launch_state`
   `launching`, a fresh `operation_id`, the binding deadline), its private launch snapshot
   (`launch_snapshots`: executable, argv, real cwd, resume template, the native id Pebrel
   chose; never in a record or an event) and the `session.starting` event.
2. **Launch.** The runtime's `agent.launch` opens a single-pane window in the cwd and types
   the command into its idle shell, as the agent named after the session.
3. **Outcome.** The binding (runtime, window, tab, pane, shell pid) and `launch_state
   launched` are written; from then on the tracker (collab/tracking.py) moves the session
   to `binding_pending` when the agent is seen and `ready` once its native id is reported.

A refused launch fails the session with the mapped code. If the service is killed between 1
and 3, the next start marks the session `failed` with `SESSION_CREATE_OUTCOME_UNKNOWN` and
never types it again (collab/tracking.py `recover_launches`). Restore runs the same steps
with the snapshot's resume template (collab/session_restore.py).

A repeated request with the same idempotency key returns the session as it is now; it never
launches twice.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from pebrel.collab import launch, refs, startup, writes
from pebrel.collab.handler import Ctx, Handler
from pebrel.collab.online import Seen, reach, session_record
from pebrel.collab.principals import Principal
from pebrel.collab.principals import current as current_principal
from pebrel.collab.sessions import current_snapshot
from pebrel.collab.store import Store, Tx, dumps, new_id
from pebrel.collab.terminal import TerminalUnavailable
from pebrel.collab.tracking import LAUNCHED, LAUNCHING, UNKNOWN, announce, apply
from pebrel.errors import CollabCode, CollabError, ErrorCode, PebrelError

logger = logging.getLogger(__name__)

#: How long a launched agent has to be seen in its pane (and a restored one to report its
#: native id) before the session fails with SESSION_BINDING_TIMEOUT (I4.3).
BINDING_TIMEOUT_MS: Final = 120_000
#: The binding of a session whose command was not typed yet.
NOT_BOUND: Final = dict.fromkeys(
    ("runtime_id", "window_id", "tab_index", "pane_id", "shell_pid", "agent_pid")
)
#: The states in which a session may hold a place under its principal's `maxSessions`.
LIVE: Final = ("starting", "binding_pending", "ready", "restoring")

#: agent.launch's refusal reasons and what they mean for a session (I4.2).
REFUSALS: Final = {
    "not_single_pane": CollabCode.SESSION_IDENTITY_MISMATCH,
    "shell_changed": CollabCode.SESSION_IDENTITY_MISMATCH,
    "not_at_prompt": CollabCode.SESSION_TARGET_NOT_SHELL,
    "shell_not_foreground": CollabCode.SESSION_TARGET_NOT_SHELL,
}


def snapshot_row(db: Store | Tx, session_id: str) -> refs.Row | None:
    return refs.one(db, "SELECT * FROM launch_snapshots WHERE session_id = ?", (session_id,))


def profile_of(ctx: Ctx, params: Mapping[str, Any]) -> tuple[Principal, dict[str, Any]]:
    """The principal whose launch profile the request names, and the profile."""
    profile_id = refs.text(params, "launch_profile")
    if ctx.actor.kind == "principal":
        assert ctx.actor.principal_id is not None
        if params.get("integration") is not None:
            raise CollabError(
                CollabCode.INVALID_ARGUMENT,
                "an integration identity uses its own launch profiles: integration is the local"
                " user's",
                {"param": "integration"},
            )
        candidates = [current_principal(ctx.store, ctx.actor.principal_id)]
    else:  # the local user (rights.USER_ONLY)
        group_ref = refs.opt_text(params, "group")
        if group_ref is None:
            raise CollabError(
                CollabCode.INVALID_ARGUMENT,
                "name the group whose integration identity holds the launch profile (group)",
                {"param": "group"},
            )
        group_id = refs.group(ctx.store, group_ref)["id"]
        wanted = refs.opt_text(params, "integration")
        candidates = [
            Principal.from_row(row)
            for row in refs.rows(
                ctx.store,
                "SELECT * FROM principals WHERE group_id = ? AND revoked_at IS NULL ORDER BY id",
                (group_id,),
            )
            if wanted is None or row["id"] == wanted
        ]
    found = [
        (p, prof) for p in candidates for prof in p.launch_profiles if prof["id"] == profile_id
    ]
    if not found:
        raise CollabError(
            CollabCode.LAUNCH_PROFILE_DENIED,
            f"no launch profile {profile_id!r} is granted here",
            {"launch_profile": profile_id},
        )
    if len(found) > 1:
        raise CollabError(
            CollabCode.INVALID_ARGUMENT,
            f"launch profile {profile_id!r} belongs to several integration identities of the"
            " group: name one with integration",
            {"param": "integration", "integrations": [p.id for p, _ in found]},
        )
    return found[0]


def check_launcher(profile: Mapping[str, Any]) -> None:
    exe = str(profile["executable"])
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
        # The path is the administrator's: not said to the caller (I1.7).
        raise CollabError(
            CollabCode.LAUNCHER_UNAVAILABLE,
            f"the executable of launch profile {profile['id']!r} is missing or not executable",
            {"launch_profile": profile["id"]},
        )


def record_of(ctx: Ctx, session_id: str, snapshot: Mapping[str, Any] | None) -> dict[str, Any]:
    return {"session": session_record(refs.session(ctx.store, session_id), snapshot)}


def replay_of(ctx: Ctx, earlier: Mapping[str, Any]) -> dict[str, Any]:
    """A repeated request: the session as it is now (never launched again)."""
    return record_of(ctx, str(earlier["session"]["session_id"]), ctx.terminal.snapshot())


def update(tx: Tx, session_id: str, change: Mapping[str, Any], ctx: Ctx | None = None) -> None:
    """Write ``change`` to the session; a state change appends its event (as the request's
    actor)."""
    row = refs.session(tx, session_id)
    apply(tx, dict(row), change, None, None if ctx is None else ctx.actor.wire())


def settle(ctx: Ctx, session_id: str, operation_id: str, change: Mapping[str, Any]) -> None:
    """Write ``change`` if the operation is still the session's."""
    with ctx.store.write() as tx:
        if refs.session(tx, session_id)["operation_id"] == operation_id:
            update(tx, session_id, change, ctx)


def fail(ctx: Ctx, session_id: str, operation_id: str, code: CollabCode) -> None:
    """The launch ended without an agent: the session fails with ``code``."""
    settle(
        ctx,
        session_id,
        operation_id,
        {"state": "failed", "error_code": str(code), "launch_state": LAUNCHED},
    )


def refusal_code(exc: PebrelError) -> CollabCode:
    """A refused `agent.launch` as the session's code."""
    reason = exc.details.get("reason")
    if isinstance(reason, str) and reason in REFUSALS:
        return REFUSALS[reason]
    if exc.code == ErrorCode.AGENT_NAME_CONFLICT:
        return CollabCode.SESSION_IDENTITY_MISMATCH
    return CollabCode.SESSION_LAUNCH_FAILED


async def run_launch(
    ctx: Ctx,
    session_id: str,
    operation_id: str,
    params: dict[str, Any],
    revert: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Call `agent.launch` and write its outcome; the session's record.

    A create (``revert`` None) whose launch the runtime refused fails the session with the
    refusal's code, and one whose outcome is unknown (the link closed, the runtime timed out)
    fails it with SESSION_CREATE_OUTCOME_UNKNOWN. A restore gives ``revert``, the session's
    columns before it: a refusal puts them back (nothing was typed), an unknown outcome leaves
    `launch_state unknown` (INTEGRATION_RUNTIME_UNAVAILABLE)."""
    try:
        launched = await ctx.terminal.call("agent.launch", params)
    except (TerminalUnavailable, PebrelError) as exc:
        refused = isinstance(exc, PebrelError) and exc.code != ErrorCode.RUNTIME_TIMEOUT
        if not refused:  # whether the line was typed is unknown: it is never typed again
            if revert is None:
                code = CollabCode.SESSION_CREATE_OUTCOME_UNKNOWN
                fail(ctx, session_id, operation_id, code)
            else:
                code = CollabCode.INTEGRATION_RUNTIME_UNAVAILABLE
                settle(ctx, session_id, operation_id, {"launch_state": UNKNOWN})
            raise CollabError(
                code,
                f"the runtime did not answer while session {session_id} was being launched;"
                " whether its command was typed is unknown",
                {"session_id": session_id},
            ) from exc
        assert isinstance(exc, PebrelError)
        code = refusal_code(exc)
        if revert is None:
            fail(ctx, session_id, operation_id, code)
        else:
            settle(ctx, session_id, operation_id, revert)
        raise CollabError(  # the runtime's message, never wrapper output or internals
            code,
            f"the runtime did not launch session {session_id}: {exc.message}",
            {"session_id": session_id, "runtime_code": str(exc.code)},
        ) from exc
    agent = launched["agent"]
    bound = {
        "runtime_id": launched.get("runtime_id"),
        "window_id": launched["window_id"],
        "tab_index": launched["tab_index"],
        "pane_id": launched["pane_id"],
        "shell_pid": launched["shell_pid"],
        "agent_pid": None,
    }
    settle(
        ctx,
        session_id,
        operation_id,
        {
            "agent_id": agent["agent_id"],
            "agent_name": agent.get("name"),
            "generation": int(agent.get("generation") or 1),
            "terminal_binding": dumps(bound),
            "launch_state": LAUNCHED,
        },
    )
    try:  # the record as the runtime is now (the snapshot seen last may predate the pane)
        fresh: dict[str, Any] | None = await ctx.terminal.call("runtime.snapshot", {})
    except (TerminalUnavailable, PebrelError):
        fresh = ctx.terminal.snapshot()
    return record_of(ctx, session_id, fresh)


def require_room(
    tx: Tx, principal: Principal, snapshot: Mapping[str, Any] | None, but: str | None = None
) -> None:
    """INTEGRATION_SESSION_LIMIT when the principal already holds `maxSessions` live sessions
    (other than ``but``): each one being launched or restored, and each `binding_pending` or
    `ready` one whose agent still runs in its pane (online in ``snapshot``; all of them when
    no snapshot was seen yet). A session whose agent exited or whose pane is gone holds no
    place until it is restored."""
    seen = None if snapshot is None else Seen.of(snapshot)
    rows = tx.read(
        f"SELECT * FROM sessions WHERE principal_id = ? AND state IN {LIVE!r} AND id != ?",
        (principal.id, but or ""),
    )
    live = sum(
        1
        for row in rows
        if row["state"] in ("starting", "restoring") or seen is None or reach(row, seen)[0]
    )
    if live >= principal.max_sessions:
        raise CollabError(
            CollabCode.INTEGRATION_SESSION_LIMIT,
            f"integration identity {principal.id!r} holds {live} live sessions, its limit"
            " (maxSessions)",
            {"integration": principal.id, "max_sessions": principal.max_sessions},
        )


# -- create ---------------------------------------------------------------------------------------
async def create(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    method = "collab.session.create"
    earlier = writes.replayed(ctx, method, params)
    if earlier is not None:
        return replay_of(ctx, earlier)
    principal, profile = profile_of(ctx, params)
    check_launcher(profile)
    real = launch.real_cwd(refs.text(params, "cwd"), profile["cwdRoots"])
    slug = str(profile["agentSlug"])
    missing = launch.hooks_missing(slug, real, Path.home())
    if missing is not None:
        raise CollabError(
            CollabCode.COLLAB_AGENT_UNAVAILABLE,
            f"{slug} cannot report its native session id: {missing}",
            {"agent_slug": slug},
        )
    condition = profile.get("startupInput")
    if await current_snapshot(ctx) is None:
        raise CollabError(
            CollabCode.SESSION_BACKEND_UNAVAILABLE, "the runtime did not answer; try again"
        )
    native = launch.new_native_id(profile["argv"])
    command = launch.launch_command(profile["executable"], profile["argv"], real, native)
    made: dict[str, str] = {}

    def body(w: writes.Write) -> dict[str, Any]:
        require_room(w.tx, principal, ctx.terminal.snapshot())
        session_id, operation_id = new_id("ses"), new_id("op")
        row = {
            "id": session_id,
            "group_id": principal.group_id,
            "agent_id": "",
            "agent_name": session_id,
            "generation": 0,
            "agent_kind": slug,
            "native_session_id": None,
            "state": "starting",
            "error_code": None,
            "terminal_binding": dumps(NOT_BOUND),
            "launch_profile_id": profile["id"],
            "principal_id": principal.id,
            "cwd": real,
            "operation_id": operation_id,
            "operation": "create",
            "launch_state": LAUNCHING,
            "deadline": w.tx.now + BINDING_TIMEOUT_MS,
            "startup_input": None if condition is None else startup.pending(condition, w.tx.now),
            "created_at": w.tx.now,
            "updated_at": w.tx.now,
        }
        w.tx.insert("sessions", row)
        w.tx.insert(
            "launch_snapshots",
            {
                "session_id": session_id,
                "executable": profile["executable"],
                "argv": dumps(profile["argv"]),
                "cwd": real,
                "resume_argv": dumps(profile["resumeArgv"]),
                "startup_input": None if condition is None else dumps(condition),
                "created_native_id": native,
                "agent_slug": slug,
                "profile_id": profile["id"],
            },
        )
        announce(w.tx, row, None, ctx.actor.wire())
        made.update(session_id=session_id, operation_id=operation_id)
        return {"session": session_record(row, None)}

    result = await writes.perform(ctx, method, params, body)
    if not made:  # the same key won a race with this request: it launches, not this one
        return replay_of(ctx, result)
    session_id = made["session_id"]
    call = {"name": session_id, "kind": slug, "argv": command, "cwd": real}
    return await run_launch(ctx, session_id, made["operation_id"], call)


HANDLERS: Final[dict[str, Handler]] = {
    "collab.session.create": create,
}
