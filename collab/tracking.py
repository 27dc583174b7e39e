"""Sessions follow their agents through the runtime's snapshots (issue #16 item 4; I4).

On each snapshot, each session whose runtime is the running one and whose agent (by
`agent_id`) is in an open pane takes from that agent's record:
- `generation`: the agent's current generation (a restarted CLI or a new provider session);
- `native_session_id`: the record's `session_id` once the provider reported one (a later
  generation that has not reported one yet keeps the last one known);
- `terminal_binding.tab_index` when the pane's tab moved;
- state `binding_pending` -> `ready` when a native id is known, with a `session.ready` event
  (fact table `session_events`, payload `{session: record}`) when the session is in a group.

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

from pebrel.collab.online import Seen, binding, reach, session_record
from pebrel.collab.store import Store, Tx, dumps

logger = logging.getLogger(__name__)

BINDING_PENDING: Final = "binding_pending"
READY: Final = "ready"


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
        rows = [dict(row) for row in self.store.read("SELECT * FROM sessions")]
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
    pane, agent = seen.agents[row["agent_id"]]
    change: dict[str, Any] = {}
    if agent["generation"] != row["generation"]:
        change["generation"] = agent["generation"]
    native = agent.get("session_id")
    if native and native != row["native_session_id"]:
        change["native_session_id"] = native
    bound = binding(row)
    if pane.get("tab_index") is not None and bound.get("tab_index") != pane["tab_index"]:
        change["terminal_binding"] = dumps({**bound, "tab_index": pane["tab_index"]})
    if row["state"] == BINDING_PENDING and (native or row["native_session_id"]):
        change["state"] = READY
    return change


def apply(tx: Tx, row: dict[str, Any], change: dict[str, Any], snapshot: Mapping[str, Any]) -> None:
    """Write one session's changes; a state change appends its `session.<state>` event."""
    change = {**change, "updated_at": tx.now}
    sets = ", ".join(f"{name} = :{name}" for name in change)
    tx.execute(f"UPDATE sessions SET {sets} WHERE id = :id", {**change, "id": row["id"]})
    state = change.get("state")
    if state is None or row["group_id"] is None:
        return  # a session outside any group has no journal to tell
    record = session_record({**row, **change}, snapshot)
    ev = tx.event(row["group_id"], f"session.{state}", {"session": record})
    tx.fact("session_events", ev, {"session_id": row["id"]})
