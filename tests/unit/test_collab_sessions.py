"""Sessions and groups: registration, online from the snapshot, removal (#16 item 2)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from pebrel.collab.online import session_online
from tests.unit.collab_world import RUNTIME_ID, World, make_world


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    yield from make_world(tmp_path)


def test_register_records_the_binding(world: World) -> None:
    grp = world.group()
    world.terminal.add_agent("alice", 4, session_id=None)
    ses = world.call("collab.session.register", agent="alice", group="team")["session"]
    assert ses["state"] == "binding_pending" and ses["online"] is True
    assert ses["offline_reason"] is None and ses["group_id"] == grp
    assert ses["terminal_binding"] == {
        "runtime_id": RUNTIME_ID,
        "window_id": 1,
        "tab_index": 0,
        "pane_id": 4,
        "shell_pid": 1004,
        "agent_pid": None,
    }
    assert ses["agent_name"] == "alice" and ses["agent_kind"] == "claude"
    events = world.call("collab.events.list", group=grp)["events"]
    assert [e["kind"] for e in events] == ["session.binding_pending"]
    assert events[0]["payload"]["session"]["session_id"] == ses["session_id"]
    ready = world.session("bob", 5, None, native="uuid-1")
    got = world.call("collab.session.get", session=ready)["session"]
    assert got["state"] == "ready" and got["native_session_id"] == "uuid-1"
    assert got["group_id"] is None


def test_register_is_idempotent_without_calling_the_runtime_again(world: World) -> None:
    world.terminal.add_agent("alice", 1)
    first = world.call("collab.session.register", agent="alice", idempotency_key="r")
    calls = len(world.terminal.calls)
    world.terminal.agents["alice"]["status"] = "exited"
    again = world.call("collab.session.register", agent="alice", idempotency_key="r")
    assert again == first and len(world.terminal.calls) == calls


def test_session_goes_offline_and_list(world: World) -> None:
    grp = world.group()
    alice = world.session("alice", 1, grp)
    world.session("bob", 2, None)
    world.terminal.agents["alice"]["status"] = "exited"
    got = world.call("collab.session.get", session=alice)["session"]
    assert (got["online"], got["offline_reason"]) == (False, "agent_exited")
    assert [s["session_id"] for s in world.call("collab.session.list", group=grp)["sessions"]] == [
        alice
    ]
    assert len(world.call("collab.session.list")["sessions"]) == 2
    shown = world.call("collab.group.show", group="team")
    assert shown["group"]["sessions"] == [alice] and shown["sessions"][0]["session_id"] == alice


ROW = {"agent_id": "ag_1", "terminal_binding": {"runtime_id": "rt", "window_id": 1, "pane_id": 2}}


def snap(runtime_id: str = "rt", pane: dict[str, Any] | None = None) -> dict[str, Any]:
    panes = [] if pane is None else [{"window_id": 1, "pane_id": 2, "exited": False, **pane}]
    return {"runtime_id": runtime_id, "windows": [{"window_id": 1, "tabs": [{"panes": panes}]}]}


class Online(NamedTuple):
    id: str
    snapshot: dict[str, Any] | None
    expected: tuple[bool, str | None]


ONLINE = [
    Online("live", snap(pane={"agent": {"agent_id": "ag_1"}}), (True, None)),
    Online("no snapshot yet", None, (False, "snapshot_pending")),
    Online("restarted", snap("rt2", {"agent": {"agent_id": "ag_1"}}), (False, "runtime_restarted")),
    Online("pane gone", snap(), (False, "pane_gone")),
    Online("pane exited", snap(pane={"exited": True}), (False, "pane_gone")),
    Online("no agent in pane", snap(pane={}), (False, "agent_exited")),
    Online("another agent", snap(pane={"agent": {"agent_id": "ag_2"}}), (False, "agent_exited")),
]  # fmt: skip


@pytest.mark.parametrize("row", ONLINE, ids=[r.id for r in ONLINE])
def test_session_online(row: Online) -> None:
    """online/offline_reason from the snapshot alone; never rebound to another pane (#16)."""
    assert session_online(ROW, row.snapshot) == row.expected


def test_group_add_and_remove(world: World) -> None:
    """Removing an assignee fails its queued messages with "removed_from_group"; a later
    comment to it is failed at once (an explicit record, #16 item 4)."""
    grp = world.group()
    alice = world.session("alice", 1, None)
    added = world.call("collab.group.add", group="team", session=alice)
    assert added["group"]["sessions"] == [alice]
    assert world.call("collab.group.add", group="team", session=alice) == added
    tid = world.call("collab.task.create", group=grp, title="t", content="c", assignee=alice)[
        "task"
    ]["task_id"]
    world.call("collab.task.comment", task=tid, content="?")
    removed = world.call("collab.group.remove", group=grp, session=alice)
    assert removed["group"]["sessions"] == []
    outbox = world.call("collab.task.get", task=tid)["task"]["outbox"]
    assert [(m["stage"], m["reason"]) for m in outbox] == [("failed", "removed_from_group")] * 2
    kicks = world.deliveries.kicks
    late = world.call("collab.task.comment", task=tid, content="still there?")
    assert world.deliveries.kicks == kicks
    outbox = world.call("collab.task.get", task=tid)["task"]["outbox"]
    assert outbox[-1]["delivery_id"] == late["delivery_id"]
    assert (outbox[-1]["stage"], outbox[-1]["reason"]) == ("failed", "removed_from_group")
    kinds = [e["kind"] for e in world.call("collab.events.list", group=grp)["events"]]
    assert kinds[0] == "session.ready" and kinds.count("session.ready") == 2
    assert kinds.count("task.delivery") == 6  # 3 queued + 3 failed


def test_capabilities(world: World) -> None:
    caps = world.call("collab.capabilities")
    assert caps["integration_protocol"] == 1 and caps["local_only"] is True
    assert caps["caller"] == {"kind": "user"}
    assert caps["features"]["tasks"] is True and caps["features"]["principals"] is True
    assert caps["features"]["startup_input_conditions"] is True  # collab/startup.py, #18


def test_register_reads_a_fresh_snapshot_when_the_seen_one_lacks_the_pane(world: World) -> None:
    world.service.on_snapshot({"runtime_id": RUNTIME_ID, "revision": 1, "windows": []})
    world.terminal.add_agent("alice", 3)
    ses = world.call("collab.session.register", agent="alice")["session"]
    assert ses["terminal_binding"]["pane_id"] == 3
    assert ("runtime.snapshot", {}) in world.terminal.calls
