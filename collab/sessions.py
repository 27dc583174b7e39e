"""Sessions: a named Pebrel agent registered for collaboration (#16 item 2, I4).

`collab.session.register {agent, group?}` binds a session (`ses_...`) to one agent of this
runtime and its pane (`terminal_binding`); `session.list` reads them (`session.get`:
collab/session_restore.py). A session is never rebound to another pane:
`online`/`offline_reason` are computed from the latest runtime snapshot by
`collab/online.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pebrel.collab import refs, writes
from pebrel.collab.handler import Ctx, Handler
from pebrel.collab.online import ENDED, panes, session_record
from pebrel.collab.store import Tx, dumps, new_id
from pebrel.collab.terminal import TerminalUnavailable
from pebrel.errors import CollabCode, CollabError, ErrorCode, PebrelError


def find_pane(snapshot: Mapping[str, Any], window_id: Any, pane_id: Any) -> dict[str, Any] | None:
    for pane in panes(snapshot):
        if pane.get("window_id") == window_id and pane.get("pane_id") == pane_id:
            return dict(pane)
    return None


#: The public session record (collab/online.py computes `online` from the snapshot).
record = session_record


def append_event(
    tx: Tx,
    row: refs.Row,
    snapshot: Mapping[str, Any] | None,
    group_id: str | None = None,
) -> str:
    """Append `session.<state>` with the public record to the journal of the session's group
    (or of ``group_id``: the group it just left)."""
    session = record(row, snapshot)
    ev = tx.event(
        group_id or str(row["group_id"]),
        f"session.{row['state']}",
        {"session": session},
        {"actor": {"kind": "user"}},
    )
    tx.fact("session_events", ev, {"session_id": row["id"]})
    return ev.event_id


async def current_snapshot(ctx: Ctx) -> dict[str, Any] | None:
    """The latest snapshot the service saw, else a fresh `runtime.snapshot` (None if the
    runtime cannot answer)."""
    seen = ctx.terminal.snapshot()
    if seen is not None:
        return seen
    try:
        return await ctx.terminal.call("runtime.snapshot", {})
    except (PebrelError, TerminalUnavailable):
        return None


async def lookup_agent(ctx: Ctx, ref: str) -> dict[str, Any]:
    """The runtime's agent record; COLLAB_AGENT_UNAVAILABLE for an unknown or gone agent."""
    try:
        agent = await ctx.terminal.call("agent.get", {"agent": ref})
    except TerminalUnavailable as exc:
        raise CollabError(
            CollabCode.INTEGRATION_RUNTIME_UNAVAILABLE, "the runtime did not answer"
        ) from exc
    except PebrelError as exc:
        if exc.code in (ErrorCode.TARGET_NOT_FOUND, ErrorCode.INVALID_PARAMS):
            raise CollabError(
                CollabCode.COLLAB_AGENT_UNAVAILABLE, f"no agent {ref!r}", {"agent": ref}
            ) from exc
        raise CollabError(
            CollabCode.COLLAB_AGENT_UNAVAILABLE,
            f"agent {ref!r} could not be read: {exc.code}",
            {"agent": ref},
        ) from exc
    if agent.get("status") in ENDED:  # it can no longer take a session
        raise CollabError(
            CollabCode.COLLAB_AGENT_UNAVAILABLE,
            f"agent {ref!r} has {agent.get('status')}",
            {"agent": ref, "status": agent.get("status")},
        )
    return agent


async def agent_pane(
    ctx: Ctx, agent: Mapping[str, Any]
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The snapshot and the agent's pane in it; a fresh `runtime.snapshot` when the one seen
    last does not have the pane yet."""

    def pane_in(snapshot: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if snapshot is None:
            return None
        return find_pane(snapshot, agent.get("window_id"), agent.get("pane_id"))

    snapshot = await current_snapshot(ctx)
    if pane_in(snapshot) is None:
        try:
            snapshot = await ctx.terminal.call("runtime.snapshot", {})
        except (PebrelError, TerminalUnavailable):
            return None, None
    return snapshot, pane_in(snapshot)


async def register(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    ref = refs.text(params, "agent")
    group_ref = refs.opt_text(params, "group")
    earlier = writes.replayed(ctx, "collab.session.register", params)
    if earlier is not None:
        return earlier
    agent = await lookup_agent(ctx, ref)
    snapshot, pane = await agent_pane(ctx, agent)
    if snapshot is None or pane is None:
        raise CollabError(
            CollabCode.COLLAB_AGENT_UNAVAILABLE,
            f"the pane of agent {ref!r} is not in the runtime's snapshot",
            {"agent": ref},
        )
    terminal_binding = {
        "runtime_id": snapshot.get("runtime_id"),
        "window_id": agent["window_id"],
        "tab_index": pane.get("tab_index"),
        "pane_id": agent["pane_id"],
        "shell_pid": pane.get("pid"),
        "agent_pid": None,
    }

    def body(w: writes.Write) -> dict[str, Any]:
        group_id = str(refs.group(w.tx, group_ref)["id"]) if group_ref is not None else None
        held = refs.one(  # a session in any state but failed holds its agent
            w.tx,
            "SELECT id FROM sessions WHERE agent_id = ? AND state IN "
            "('starting', 'binding_pending', 'ready', 'restoring')",
            (agent["agent_id"],),
        )
        if held is not None:
            raise CollabError(
                CollabCode.SESSION_ALREADY_REGISTERED,
                f"agent {ref!r} is already registered as session {held['id']}",
                {"agent": ref, "session_id": held["id"]},
            )
        row = {
            "id": new_id("ses"),
            "group_id": group_id,
            "agent_id": agent["agent_id"],
            "agent_name": agent.get("name"),
            "generation": int(agent.get("generation") or 1),
            "agent_kind": str(agent.get("kind")),
            "native_session_id": agent.get("session_id"),
            "state": "ready" if agent.get("session_id") else "binding_pending",
            "error_code": None,
            "terminal_binding": dumps(terminal_binding),
            "created_at": w.tx.now,
            "updated_at": w.tx.now,
        }
        w.tx.insert("sessions", row)
        if group_id is not None:
            append_event(w.tx, row, snapshot)
        return {"session": record(row, snapshot)}

    return await writes.perform(ctx, "collab.session.register", params, body)


async def list_sessions(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    group_ref = refs.opt_text(params, "group")
    if group_ref is None:
        found = refs.rows(ctx.store, "SELECT * FROM sessions ORDER BY created_at, rowid")
    else:
        group_id = refs.group(ctx.store, group_ref)["id"]
        found = refs.rows(
            ctx.store,
            "SELECT * FROM sessions WHERE group_id = ? ORDER BY created_at, rowid",
            (group_id,),
        )
    snapshot = await current_snapshot(ctx)
    return {"sessions": [record(row, snapshot) for row in found]}


HANDLERS: Final[dict[str, Handler]] = {
    "collab.session.register": register,
    "collab.session.list": list_sessions,
}
