"""Restoring a session from its launch snapshot, and reading one (I4.3, #18).

`collab.session.restore SESSION` resumes *exactly* the session's native conversation: the
launch snapshot's resume template with the native id, the original argv (`{launchArgs}`),
cwd and executable (a wrapper gets its argv unchanged). Looked at in a fresh runtime
snapshot first:

- the native id already runs in the session's own pane: the record, unchanged;
- it runs in another pane: NATIVE_SESSION_ALREADY_RUNNING;
- the session's pane is still open and its own: the command is typed there if it is an idle
  shell (`cd -- CWD && ...`), else NATIVE_SESSION_ID_MISMATCH (another native id runs there)
  or SESSION_TARGET_NOT_SHELL (another agent or a busy shell);
- otherwise a new single-pane window in the cwd.

Refused before that: a registered session (EXACT_RESUME_UNSUPPORTED: Pebrel has no resume
command for it), one whose native id never came (NATIVE_SESSION_ID_MISSING), whose cwd is
gone (SESSION_CWD_MISSING) or no longer its real path (SESSION_CWD_DENIED: a directory on the
way became a symbolic link), or with an operation in flight (SESSION_OPERATION_IN_PROGRESS).
Then the intent (`restoring`, a new `operation_id`) is durable before the command is typed,
as for a create. A restore interrupted by a service stop or a lost runtime link leaves
`launch_state unknown`: further restores are refused until `session get` looked at the
runtime (the exact id running: `ready` there; nothing: `failed` with AGENT_NOT_RUNNING).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, Final

from pebrel.collab import launch, refs, rights, session_launch, startup, writes
from pebrel.collab.handler import Ctx, Handler
from pebrel.collab.online import Seen, binding, session_record
from pebrel.collab.principals import Principal
from pebrel.collab.session_launch import (
    replay_of,
    require_room,
    run_launch,
    snapshot_row,
    update,
)
from pebrel.collab.sessions import current_snapshot, find_pane
from pebrel.collab.store import Tx, dumps, new_id, now_ms
from pebrel.collab.terminal import TerminalUnavailable
from pebrel.collab.tracking import LAUNCHED, LAUNCHING, UNKNOWN
from pebrel.errors import CollabCode, CollabError, PebrelError


# -- restore --------------------------------------------------------------------------------------
def in_progress(row: refs.Row) -> bool:
    return row["state"] in ("starting", "restoring") or row["launch_state"] == UNKNOWN


def busy_error(row: refs.Row) -> CollabError:
    return CollabError(
        CollabCode.SESSION_OPERATION_IN_PROGRESS,
        f"session {row['id']} is {row['state']}"
        + (
            " and its last launch's outcome is unknown: session get checks it"
            if row["launch_state"] == UNKNOWN
            else ""
        ),
        {"session_id": row["id"], "operation_id": row["operation_id"]},
    )


def restore_target(
    row: refs.Row, snapshot: Mapping[str, Any]
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """Where a restore may run: (the pane running the exact native id, the session's own
    pane if it is still open); raises for another agent in the session's pane."""
    seen = Seen.of(snapshot)
    native = row["native_session_id"]
    bound = binding(row)
    running = next(
        (pane for pane, agent in seen.agents.values() if agent.get("session_id") == native), None
    )
    own = None
    if bound.get("runtime_id") == snapshot.get("runtime_id"):
        own = find_pane(snapshot, bound.get("window_id"), bound.get("pane_id"))
    return running, None if own is None or own.get("exited") else own


#: What a restore the runtime refused puts back as it was (nothing was typed).
REVERTED: Final = ("state", "error_code", "launch_state", "deadline", "startup_input")
#: A pane's task states in which its shell is not at its prompt.
BUSY: Final = frozenset({"running", "attention", "waiting_input"})


def launch_condition(
    tx: Tx, session_id: str, holder: Principal | None, snap: refs.Row
) -> dict[str, Any] | None:
    """The startup condition this restore's launch waits for: the snapshot's own; for a
    snapshot without one, the one its profile (same id, same identity) holds now, which is
    then added to the snapshot (a policy update reaches a session at its next real restore
    launch, I4.4). Nothing else of the snapshot ever changes."""
    if snap["startup_input"]:
        kept: dict[str, Any] = json.loads(snap["startup_input"])
        return kept
    profiles = holder.launch_profiles if holder is not None else ()
    added = next((p.get("startupInput") for p in profiles if p["id"] == snap["profile_id"]), None)
    if added is not None:
        tx.execute(
            "UPDATE launch_snapshots SET startup_input = ? WHERE session_id = ?",
            (dumps(added), session_id),
        )
    return added


async def restore(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    method = "collab.session.restore"
    session_ref = refs.text(params, "session")
    earlier = writes.replayed(ctx, method, params)
    if earlier is not None:
        return replay_of(ctx, earlier)
    row = refs.session(ctx.store, session_ref)
    session_id = str(row["id"])
    if ctx.actor.kind == "principal":
        rights.require_member(ctx.store, ctx.actor, str(row["group_id"]))
    snap = snapshot_row(ctx.store, session_id)
    if snap is None:
        raise CollabError(
            CollabCode.EXACT_RESUME_UNSUPPORTED,
            f"session {session_id} was registered, not launched from a profile: Pebrel has no"
            " resume command for it",
            {"session_id": session_id},
        )
    if in_progress(row):
        raise busy_error(row)
    native = row["native_session_id"]
    if not native:
        raise CollabError(
            CollabCode.NATIVE_SESSION_ID_MISSING,
            f"session {session_id} never reported its native session id: it cannot be resumed"
            " exactly",
            {"session_id": session_id},
        )
    if not os.path.isdir(str(snap["cwd"])):
        raise CollabError(
            CollabCode.SESSION_CWD_MISSING,
            f"the cwd of session {session_id} is gone",
            {"session_id": session_id, "cwd": snap["cwd"]},
        )
    if os.path.realpath(str(snap["cwd"])) != snap["cwd"]:
        # It was a real path inside the profile's roots at create; a directory on the way
        # has since become a symbolic link, which could lead anywhere.
        raise CollabError(
            CollabCode.SESSION_CWD_DENIED,
            f"the cwd of session {session_id} now resolves elsewhere (a symbolic link)",
            {"session_id": session_id, "cwd": snap["cwd"]},
        )
    try:
        snapshot = await ctx.terminal.call("runtime.snapshot", {})
    except (TerminalUnavailable, PebrelError) as exc:
        raise CollabError(
            CollabCode.SESSION_BACKEND_UNAVAILABLE, "the runtime did not answer; try again"
        ) from exc
    running, own = restore_target(row, snapshot)
    if running is not None:
        where = (running.get("window_id"), running.get("pane_id"))
        if own is not None and where == (own.get("window_id"), own.get("pane_id")):
            return {"session": session_record(row, snapshot)}  # exactly this one runs
        raise CollabError(
            CollabCode.NATIVE_SESSION_ALREADY_RUNNING,
            f"native session {native} already runs in another pane",
            {
                "session_id": session_id,
                "window_id": running.get("window_id"),
                "pane_id": running.get("pane_id"),
            },
        )
    call: dict[str, Any] = {
        "name": session_id,
        "kind": str(row["agent_kind"]),
        "argv": launch.resume_command(snap, str(native)),
        "cwd": str(snap["cwd"]),
    }
    if own is not None:
        agent = own.get("agent")
        if agent is not None and agent.get("session_id") and agent["session_id"] != native:
            raise CollabError(
                CollabCode.NATIVE_SESSION_ID_MISMATCH,
                f"the pane of session {session_id} runs another native session",
                {"session_id": session_id},
            )
        if agent is not None or own.get("task_state") in BUSY:
            raise CollabError(
                CollabCode.SESSION_TARGET_NOT_SHELL,
                f"the pane of session {session_id} is not an idle shell",
                {"session_id": session_id},
            )
        bound = binding(row)
        call.update(
            window_id=bound["window_id"], pane_id=bound["pane_id"], shell_pid=bound["shell_pid"]
        )
    principal_id = row["principal_id"]
    made: dict[str, str] = {}
    prior: dict[str, Any] = {}

    def body(w: writes.Write) -> dict[str, Any]:
        now = refs.session(w.tx, session_id)
        if in_progress(now):
            raise busy_error(now)
        holder = None
        if principal_id is not None:
            found = refs.one(w.tx, "SELECT * FROM principals WHERE id = ?", (principal_id,))
            holder = None if found is None else Principal.from_row(found)
        if holder is not None:
            require_room(w.tx, holder, snapshot, but=session_id)
        condition = launch_condition(w.tx, session_id, holder, snap)
        prior.update({k: now[k] for k in REVERTED})
        operation_id = new_id("op")
        update(
            w.tx,
            session_id,
            {
                "state": "restoring",
                "error_code": None,
                "operation": "restore",
                "operation_id": operation_id,
                "launch_state": LAUNCHING,
                "deadline": w.tx.now + session_launch.BINDING_TIMEOUT_MS,
                "startup_input": None
                if condition is None
                else startup.pending(condition, w.tx.now),
            },
            ctx,
        )
        made["operation_id"] = operation_id
        return {"session": session_record(refs.session(w.tx, session_id), None)}

    result = await writes.perform(ctx, method, params, body)
    if not made:
        return replay_of(ctx, result)
    return await run_launch(ctx, session_id, made["operation_id"], call, prior)


# -- get, and what a restart left ------------------------------------------------------------------
async def get(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    row = refs.session(ctx.store, refs.text(params, "session"))
    if ctx.actor.kind == "principal":  # session.read: its own group's sessions only
        rights.require_member(ctx.store, ctx.actor, str(row["group_id"]))
    if row["launch_state"] == UNKNOWN:
        await settle_unknown(ctx, row)
        row = refs.session(ctx.store, str(row["id"]))
    return {"session": session_record(row, await current_snapshot(ctx))}


async def settle_unknown(ctx: Ctx, row: refs.Row) -> None:
    """A restore whose outcome is unknown: look at the runtime now (the exact native id
    running: `ready` there; the session's agent still coming up before the deadline: still
    unknown; else `failed` with AGENT_NOT_RUNNING)."""
    try:
        snapshot = await ctx.terminal.call("runtime.snapshot", {})
    except (TerminalUnavailable, PebrelError):
        return  # still unknown; a later get looks again
    native = row["native_session_id"]
    found = next(
        (
            (pane, agent)
            for pane, agent in Seen.of(snapshot).agents.values()
            if native and agent.get("session_id") == native
        ),
        None,
    )
    if found is None and await coming_up(ctx, row):
        return
    with ctx.store.write() as tx:
        now = refs.session(tx, str(row["id"]))
        if now["launch_state"] != UNKNOWN:
            return
        if found is None:
            change: dict[str, Any] = {
                "state": "failed",
                "error_code": str(CollabCode.AGENT_NOT_RUNNING),
                "launch_state": LAUNCHED,
            }
        else:
            pane, agent = found
            change = {
                "state": "ready",
                "error_code": None,
                "launch_state": LAUNCHED,
                "agent_id": agent["agent_id"],
                "generation": agent["generation"],
                "terminal_binding": dumps(
                    {
                        "runtime_id": snapshot.get("runtime_id"),
                        "window_id": pane["window_id"],
                        "tab_index": pane.get("tab_index"),
                        "pane_id": pane["pane_id"],
                        "shell_pid": pane.get("pid"),
                        "agent_pid": agent.get("pid"),
                    }
                ),
            }
        update(tx, str(row["id"]), change, ctx)


async def coming_up(ctx: Ctx, row: refs.Row) -> bool:
    """Whether the session's agent was typed and is not seen yet, before its deadline."""
    if int(row["deadline"] or 0) <= now_ms():
        return False
    try:
        agent = await ctx.terminal.call("agent.get", {"agent": str(row["id"])})
    except (TerminalUnavailable, PebrelError):
        return False
    return agent.get("status") == "starting"


HANDLERS: Final[dict[str, Handler]] = {
    "collab.session.restore": restore,
    "collab.session.get": get,
}
