"""Whether a session's agent can be reached now, from the runtime's snapshot (issue #16 item 4).

`online` and `offline_reason` are computed when read, from the latest runtime snapshot; they
are never stored and never an event of their own (the spec's session events are its states).
A session is online when the runtime that owns its pane is the one running now
(`terminal_binding.runtime_id`), its agent (by `agent_id`) is in one of the snapshot's panes,
and that agent has not exited or been replaced.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

RUNTIME_RESTARTED: Final = "runtime_restarted"
PANE_GONE: Final = "pane_gone"
AGENT_EXITED: Final = "agent_exited"
#: No runtime snapshot was seen yet (the service just started): nothing is known.
SNAPSHOT_PENDING: Final = "snapshot_pending"
#: A session from a launch profile whose command was not typed yet (#18).
NOT_LAUNCHED: Final = "not_launched"
#: An agent record's `status` values that end a session's reach (the runtime's agent record).
ENDED: Final = frozenset({"exited", "replaced"})


#: A `sessions` row as read (sqlite3.Row), or a record's dict.
RowLike = sqlite3.Row | Mapping[str, Any]


def binding(row: RowLike) -> dict[str, Any]:
    """The row's `terminal_binding` as a dict (stored as JSON text, or a record's dict)."""
    value = row["terminal_binding"]
    if isinstance(value, str):
        parsed: dict[str, Any] = json.loads(value)
        return parsed
    return dict(value or {})


def panes(snapshot: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every pane record of a runtime snapshot."""
    for window in snapshot.get("windows", ()):
        for tab in window.get("tabs", ()):
            yield from tab.get("panes", ())


@dataclass(frozen=True, slots=True)
class Seen:
    """What one snapshot shows, indexed once: live agents by id, and the open panes."""

    runtime_id: str | None
    agents: dict[str, tuple[dict[str, Any], dict[str, Any]]]
    open_panes: frozenset[tuple[int, int]]

    @classmethod
    def of(cls, snapshot: Mapping[str, Any]) -> Seen:
        agents: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        open_panes: set[tuple[int, int]] = set()
        for pane in panes(snapshot):
            if pane.get("exited"):
                continue
            open_panes.add((pane["window_id"], pane["pane_id"]))
            agent = pane.get("agent")
            if agent is not None:
                agents[agent["agent_id"]] = (pane, agent)
        return cls(snapshot.get("runtime_id"), agents, frozenset(open_panes))


def find_agent(
    snapshot: Mapping[str, Any], agent_id: str
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The open pane holding agent ``agent_id`` and its `pane_agent` record."""
    return Seen.of(snapshot).agents.get(agent_id)


def reach(row: RowLike, seen: Seen | None) -> tuple[bool, str | None]:
    """`session_online` against a snapshot already indexed (tracking does it once per snapshot)."""
    if seen is None:
        return False, SNAPSHOT_PENDING
    bound = binding(row)
    if not row["agent_id"]:
        return False, NOT_LAUNCHED
    if bound.get("runtime_id") != seen.runtime_id:
        return False, RUNTIME_RESTARTED
    found = seen.agents.get(row["agent_id"])
    if found is None:
        pane_open = (bound.get("window_id"), bound.get("pane_id")) in seen.open_panes
        return False, AGENT_EXITED if pane_open else PANE_GONE
    if found[1].get("status") in ENDED:
        return False, AGENT_EXITED
    return True, None


def session_online(row: RowLike, snapshot: Mapping[str, Any] | None) -> tuple[bool, str | None]:
    """`(online, offline_reason)` of a session row (or record) in ``snapshot``.

    A runtime other than the binding's: `runtime_restarted`. The agent in no open pane of the
    snapshot: `agent_exited` while the binding's pane is still open (the CLI quit, or another
    agent took the pane), else `pane_gone`. A record saying exited or replaced (an `agent.get`
    record carries `status`; a snapshot's pane record holds only live agents): `agent_exited`.
    Before any snapshot: `snapshot_pending`.
    """
    return reach(row, Seen.of(snapshot) if snapshot is not None else None)


def column(row: RowLike, name: str) -> Any:
    """A column that a row (or a record's dict built before it existed) may lack: None."""
    keys = row.keys()
    return row[name] if name in keys else None


def startup_input(row: RowLike) -> dict[str, Any] | None:
    """The current launch's startup input state (collab/startup.py), None without one."""
    raw = column(row, "startup_input")
    if not raw:
        return None
    parsed: dict[str, Any] = json.loads(raw) if isinstance(raw, str) else dict(raw)
    return parsed


def session_record(row: RowLike, snapshot: Mapping[str, Any] | None) -> dict[str, Any]:
    """A `sessions` row as the public session record, `online` computed from ``snapshot``.

    The spec's names for a session from a launch profile (#18) are given beside Pebrel's:
    `agent_slug` is `agent_kind`, `agent_native_session_id` is `native_session_id`; a
    registered session has null `operation_id`, `principal_id`, `cwd` and `launch_profile`."""
    online, reason = session_online(row, snapshot)
    return {
        "session_id": row["id"],
        "operation_id": column(row, "operation_id"),
        "principal_id": column(row, "principal_id"),
        "agent_slug": row["agent_kind"],
        "agent_native_session_id": row["native_session_id"],
        "cwd": column(row, "cwd"),
        "launch_profile": column(row, "launch_profile_id"),
        "group_id": row["group_id"],
        "agent_id": row["agent_id"],
        "agent_name": row["agent_name"],
        "agent_kind": row["agent_kind"],
        "generation": row["generation"],
        "native_session_id": row["native_session_id"],
        "state": row["state"],
        "error_code": row["error_code"],
        "online": online,
        "offline_reason": reason,
        "terminal_binding": binding(row),
        "startup_input": startup_input(row),
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }
