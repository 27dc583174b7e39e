"""A collab service over a real Store in tmp_path, with a fake Terminal and Deliveries (#16).

The fake terminal answers `agent.get` and `runtime.snapshot` from a small model of panes and
agents; the recording deliveries count kicks. `World.fails` provokes an error and checks that
nothing in the database changed (every table's rows, the journal included).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from pebrel.collab.service import Service
from pebrel.collab.store import Store
from pebrel.errors import CollabCode, CollabError, ErrorCode, PebrelError

USER: dict[str, Any] = {"kind": "user"}
RUNTIME_ID = "rt_test"


def pane_caller(window_id: int, pane_id: int) -> dict[str, Any]:
    return {"kind": "pane", "window_id": window_id, "pane_id": pane_id}


class FakeTerminal:
    """Agents by name, each alone in its own pane of window 1."""

    def __init__(self) -> None:
        self.agents: dict[str, dict[str, Any]] = {}
        self.runtime_id = RUNTIME_ID
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.seen = True

    def add_agent(self, name: str, pane_id: int, session_id: str | None = "native-1") -> None:
        self.agents[name] = {
            "agent_id": f"ag_{name}",
            "name": name,
            "kind": "claude",
            "window_id": 1,
            "pane_id": pane_id,
            "generation": 1,
            "status": "active",
            "session_id": session_id,
        }

    def build_snapshot(self) -> dict[str, Any]:
        panes = []
        for agent in self.agents.values():
            pane: dict[str, Any] = {
                "window_id": 1,
                "tab_index": 0,
                "pane_id": agent["pane_id"],
                "pid": 1000 + agent["pane_id"],
                "exited": False,
            }
            if agent["status"] == "active":
                pane["agent"] = {"agent_id": agent["agent_id"], "generation": 1}
            panes.append(pane)
        return {
            "runtime_id": self.runtime_id,
            "revision": 1,
            "focused_window_id": 1,
            "windows": [{"window_id": 1, "tabs": [{"tab_index": 0, "panes": panes}]}],
        }

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((method, params))
        if method == "runtime.snapshot":
            return self.build_snapshot()
        if method == "agent.get":
            found = self.agents.get(params["agent"])
            if found is None:
                raise PebrelError(ErrorCode.TARGET_NOT_FOUND, "no agent")
            return dict(found)
        raise PebrelError(ErrorCode.METHOD_NOT_FOUND, method)

    def snapshot(self) -> dict[str, Any] | None:
        return self.build_snapshot() if self.seen else None


class RecordingDeliveries:
    def __init__(self) -> None:
        self.kicks = 0

    def kick(self) -> None:
        self.kicks += 1


class World:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.store = Store(data_dir)
        self.terminal = FakeTerminal()
        self.deliveries = RecordingDeliveries()
        self.service = Service(self.store, self.terminal, self.deliveries)

    def call(self, method: str, caller: Mapping[str, Any] | None = None, **params: Any) -> Any:
        result = asyncio.run(self.service.handle(method, params, dict(caller or USER)))
        return result

    def state(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every table's rows (order-free): what 'nothing changed' compares."""
        names = [
            r[0]
            for r in self.store.conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        return {
            name: sorted(
                (tuple(row) for row in self.store.conn.execute(f"SELECT * FROM {name}")), key=repr
            )
            for name in names
        }

    def fails(
        self, code: CollabCode, method: str, caller: Mapping[str, Any] | None = None, **params: Any
    ) -> CollabError:
        before = self.state()
        kicks = self.deliveries.kicks
        with pytest.raises(CollabError) as info:
            self.call(method, caller, **params)
        assert info.value.code == code, info.value.to_wire()
        assert info.value.details["retryable"] is False
        assert self.state() == before, f"{method} changed the database while failing"
        assert self.deliveries.kicks == kicks
        return info.value

    # -- set-ups ------------------------------------------------------------------------------
    def group(self, name: str = "team") -> str:
        return str(self.call("collab.group.create", name=name)["group"]["group_id"])

    def session(self, name: str, pane_id: int, group: str | None, native: str | None = "n1") -> str:
        self.terminal.add_agent(name, pane_id, native)
        params: dict[str, Any] = {"agent": name}
        if group is not None:
            params["group"] = group
        return str(self.call("collab.session.register", **params)["session"]["session_id"])

    def count(self, table: str) -> int:
        return int(self.store.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])

    def journal(self, group_id: str) -> list[tuple[int, str, str]]:
        return [
            (int(r[0]), str(r[1]), str(r[2]))
            for r in self.store.conn.execute(
                "SELECT sequence, event_id, kind FROM journal WHERE group_id = ? ORDER BY sequence",
                (group_id,),
            )
        ]


def team_and_other(world: World) -> dict[str, str]:
    """Group `team` with alice (pane 1, assignee of task T, with a comment on it) and bob
    (pane 2); carol (pane 3) in group `other`. The ids by name (the rights tables' world)."""
    team = world.group("team")
    other = world.group("other")
    ids = {
        "team": team,
        "other": other,
        "alice": world.session("alice", 1, team),
        "bob": world.session("bob", 2, team),
        "carol": world.session("carol", 3, other),
    }
    created = world.call(
        "collab.task.create", group=team, title="T", content="c", assignee=ids["alice"]
    )
    ids["task"] = created["task"]["task_id"]
    ids["attempt"] = created["attempt_id"]
    ids["message"] = created["message_id"]
    ids["comment"] = world.call("collab.task.comment", task=ids["task"], content="?")["event_id"]
    return ids


def make_world(data_dir: Path) -> Iterator[World]:
    """For each test file's `world` fixture: a fresh world, its database closed after."""
    w = World(data_dir)
    yield w
    w.store.close()
