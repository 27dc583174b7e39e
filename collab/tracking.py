"""Sessions follow their agents through the runtime's snapshots (issue #16 item 4; I4).

On each snapshot, each session whose runtime is the running one and whose agent (by
`agent_id`) is in an open pane takes from that agent's record:
- `generation`: the agent's current generation (a restarted CLI or a new provider session);
- `native_session_id`: the record's `session_id` once the provider reported one (a later
  generation that has not reported one yet keeps the last one known);
- `terminal_binding.tab_index` when the pane's tab moved;
- state `binding_pending` -> `ready` when a native id is known, with a `session.ready` event
  (fact table `session_events`, payload `{session: record}`) when the session is in a group.

Sessions launched from a profile (#18, collab/session_launch.py) are left alone while their
launch is being typed (`launch_state` `launching`, or `unknown` after an interrupted restore).
Once it was typed: `starting` -> `binding_pending` when the agent is seen in its pane, and
`ready` once it reports a native id. That id must look like one (else `failed`,
NATIVE_SESSION_ID_INVALID) and be the one Pebrel gave it (`{sessionId}` in the profile's
argv) or, for a restore, the id resumed (else `failed`, NATIVE_SESSION_ID_MISMATCH). The
agent's process group is kept as `terminal_binding.agent_pid`. A later different native id in
a ready profile session's pane (another conversation typed there) fails it the same way.
`expire` fails a launch not seen (or a restore not ready) by its deadline with
SESSION_BINDING_TIMEOUT, and `recover_launches` settles, at start, what a stopped service left
`launching`.

`online` / `offline_reason` are **computed, not stored and not events** (collab/online.py): they
follow from the snapshot at every read, and the spec's session events are its states
(`session.starting/binding_pending/ready/restoring/failed`), so an agent that comes and goes
does not fill the group's journal. The tracker only remembers them in memory, to tell the
delivery engine which sessions' reach changed.

It stays cheap at 10 snapshots a second with 50 panes: the snapshot is indexed once, the
sessions are read in one query, and it writes (one transaction) only when something changed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from pebrel.collab.launch import native_id_valid
from pebrel.collab.online import Seen, binding, reach, session_record
from pebrel.collab.store import Store, Tx, dumps, now_ms
from pebrel.errors import CollabCode

logger = logging.getLogger(__name__)

STARTING: Final = "starting"
BINDING_PENDING: Final = "binding_pending"
READY: Final = "ready"
RESTORING: Final = "restoring"
FAILED: Final = "failed"
#: `launch_state` of a session from a profile: its command is being typed, was typed, or the
#: outcome of an interrupted restore is unknown (None: a registered session).
LAUNCHING: Final = "launching"
LAUNCHED: Final = "launched"
UNKNOWN: Final = "unknown"
#: Each session with the native id Pebrel chose at its launch, if any.
ROWS: Final = (
    "SELECT s.*, l.created_native_id AS created_native_id FROM sessions AS s"
    " LEFT JOIN launch_snapshots AS l ON l.session_id = s.id"
)


class Tracker:
    def __init__(self, store: Store) -> None:
        self.store = store
        #: The last computed (online, offline_reason) per session, to notice changes.
        self.reach: dict[str, tuple[bool, str | None]] = {}

    def has_sessions(self) -> bool:
        return bool(self.store.read("SELECT 1 FROM sessions LIMIT 1"))

    def on_snapshot(self, snapshot: Mapping[str, Any]) -> set[str]:
        """Apply one snapshot; returns the sessions whose reach (online/offline) changed."""
        seen = Seen.of(snapshot)
        rows = [dict(row) for row in self.store.read(ROWS)]
        moved: set[str] = set()
        updates: list[tuple[dict[str, Any], dict[str, Any]]] = []
        for row in rows:
            now = reach(row, seen)
            if self.reach.get(row["id"]) != now:
                if row["id"] in self.reach:
                    logger.info("session %s: online=%s reason=%s", row["id"], *now)
                self.reach[row["id"]] = now
                moved.add(row["id"])
            change = changes(row, seen) if now[0] else {}
            if change:
                updates.append((row, change))
        if updates:
            with self.store.write() as tx:
                for row, change in updates:
                    apply(tx, row, change, snapshot)
        return moved


def changes(row: Mapping[str, Any], seen: Seen) -> dict[str, Any]:
    """The columns of ``row`` that the snapshot's agent record changes (empty: none)."""
    if row["launch_state"] in (LAUNCHING, UNKNOWN) or row["state"] == FAILED:
        return {}  # the launch owns it, or it ended
    pane, agent = seen.agents[row["agent_id"]]
    change: dict[str, Any] = {}
    if agent["generation"] != row["generation"]:
        change["generation"] = agent["generation"]
    native = agent.get("session_id")
    bound = binding(row)
    moved = {}
    if pane.get("tab_index") is not None and bound.get("tab_index") != pane["tab_index"]:
        moved["tab_index"] = pane["tab_index"]
    if row["launch_state"] is not None and agent.get("pid") != bound.get("agent_pid"):
        moved["agent_pid"] = agent.get("pid")
    if moved:
        change["terminal_binding"] = dumps({**bound, **moved})
    if row["launch_state"] is not None and row["state"] in (STARTING, BINDING_PENDING, RESTORING):
        return {**change, **launched_state(row, native)}
    if row["launch_state"] is not None and native and native != row["native_session_id"]:
        # Another conversation in a profile session's pane: the session names the one it
        # launched (its restore resumes that), never this one.
        return {"state": FAILED, "error_code": str(CollabCode.NATIVE_SESSION_ID_MISMATCH)}
    if native and native != row["native_session_id"]:
        change["native_session_id"] = native
    if row["state"] == BINDING_PENDING and (native or row["native_session_id"]):
        change["state"] = READY
    return change


def launched_state(row: Mapping[str, Any], native: str | None) -> dict[str, Any]:
    """A session from a profile whose agent is seen: its state, from the native id."""
    restoring = row["state"] == RESTORING
    if not native:
        return {} if restoring or row["state"] == BINDING_PENDING else {"state": BINDING_PENDING}
    expected = row["native_session_id"] if restoring else row["created_native_id"]
    if not native_id_valid(native):
        return {"state": FAILED, "error_code": str(CollabCode.NATIVE_SESSION_ID_INVALID)}
    if expected is not None and native != expected:
        return {"state": FAILED, "error_code": str(CollabCode.NATIVE_SESSION_ID_MISMATCH)}
    return {"state": READY, "native_session_id": native, "deadline": None}


def apply(
    tx: Tx,
    row: Mapping[str, Any],
    change: Mapping[str, Any],
    snapshot: Mapping[str, Any] | None,
    actor: Mapping[str, Any] | None = None,
) -> None:
    """Write one session's changes; a state change appends its `session.<state>` event (with
    the ``actor`` of the request that made it, if any)."""
    change = {**change, "updated_at": tx.now}
    sets = ", ".join(f"{name} = :{name}" for name in change)
    tx.execute(f"UPDATE sessions SET {sets} WHERE id = :id", {**change, "id": row["id"]})
    if "state" in change:
        announce(tx, {**row, **change}, snapshot, actor)


def announce(
    tx: Tx,
    row: Mapping[str, Any],
    snapshot: Mapping[str, Any] | None,
    actor: Mapping[str, Any] | None = None,
) -> None:
    """Append `session.<state>` with the public record to the session's group journal."""
    if row["group_id"] is None:
        return  # a session outside any group has no journal to tell
    refs = {"actor": dict(actor)} if actor is not None else None
    record = session_record(row, snapshot)
    ev = tx.event(row["group_id"], f"session.{row['state']}", {"session": record}, refs)
    tx.fact("session_events", ev, {"session_id": row["id"]})


def expire(store: Store, now: int | None = None) -> int:
    """Fail with SESSION_BINDING_TIMEOUT each launched session whose agent was not seen (a
    create) or is not `ready` (a restore) by its deadline. Returns how many."""
    rows = store.read(
        ROWS + " WHERE s.state IN (?, ?) AND s.launch_state = ? AND s.deadline < ?",
        (STARTING, RESTORING, LAUNCHED, now_ms() if now is None else now),
    )
    if rows:
        with store.write() as tx:
            for row in rows:
                failed = {"state": FAILED, "error_code": str(CollabCode.SESSION_BINDING_TIMEOUT)}
                apply(tx, dict(row), failed, None)
    return len(rows)


def recover_launches(store: Store) -> int:
    """At start: the launches a stopped service left `launching` (I4.3). A create's outcome
    is unknown and it is never typed again (`failed`, SESSION_CREATE_OUTCOME_UNKNOWN); a
    restore's becomes `launch_state unknown` (`session get` settles it). Returns how many."""
    rows = store.read(ROWS + " WHERE s.launch_state = ?", (LAUNCHING,))
    if rows:
        with store.write() as tx:
            for row in rows:
                if row["state"] == STARTING:
                    change = {
                        "state": FAILED,
                        "error_code": str(CollabCode.SESSION_CREATE_OUTCOME_UNKNOWN),
                        "launch_state": LAUNCHED,
                    }
                else:
                    change = {"launch_state": UNKNOWN}
                apply(tx, dict(row), change, None)
    return len(rows)
