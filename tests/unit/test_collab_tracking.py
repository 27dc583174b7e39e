"""Sessions follow their agents through runtime snapshots (I4; #16 item 4).

Generation and native session id come from the agent's record; `binding_pending` becomes
`ready` (with a `session.ready` event) once a native id is known; online/offline is computed,
never stored or journaled; and a snapshot that changes nothing writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pebrel.collab.deliverer import Deliverer
from pebrel.collab.online import session_online, session_record
from pebrel.collab.store import Store
from pebrel.collab.tracking import Tracker
from tests.unit.collab_fakes import (
    GROUP,
    FakeTerminal,
    add_group,
    add_session,
    agent,
    snapshot,
)

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store(tmp_path)
    add_group(opened)
    yield opened
    opened.close()


def row(store: Store, session_id: str) -> dict[str, Any]:
    return dict(store.read("SELECT * FROM sessions WHERE id = ?", (session_id,))[0])


def session_events(store: Store) -> list[tuple[str, dict[str, Any]]]:
    rows = store.read("SELECT kind, payload FROM session_events ORDER BY sequence")
    return [(r["kind"], json.loads(r["payload"])) for r in rows]


def test_a_native_id_makes_a_pending_session_ready(store: Store) -> None:
    """I4: binding_pending -> ready when the agent's native session id appears, once, with a
    `session.ready` event carrying the record; the generation follows the agent."""
    add_session(store, "ses_a", "agt_a", 1, state="binding_pending", native=None)
    tracker = Tracker(store)
    tracker.on_snapshot(snapshot(agent("agt_a", 1, session_id=None)))
    assert row(store, "ses_a")["state"] == "binding_pending"
    assert session_events(store) == []

    tracker.on_snapshot(snapshot(agent("agt_a", 1, generation=2, session_id="uuid-1")))
    after = row(store, "ses_a")
    assert (after["state"], after["native_session_id"], after["generation"]) == (
        "ready",
        "uuid-1",
        2,
    )
    ((kind, payload),) = session_events(store)
    assert kind == "session.ready"
    assert payload["session"]["state"] == "ready"
    assert payload["session"]["native_session_id"] == "uuid-1"
    assert payload["session"]["online"] is True
    journal = store.read("SELECT kind FROM journal WHERE group_id = ?", (GROUP,))
    assert [r["kind"] for r in journal] == ["session.ready"]

    tracker.on_snapshot(snapshot(agent("agt_a", 1, generation=2, session_id="uuid-1")))
    assert len(session_events(store)) == 1


def test_a_new_generation_without_an_id_keeps_the_last_native_id(store: Store) -> None:
    add_session(store, "ses_a", "agt_a", 1, native="uuid-1")
    Tracker(store).on_snapshot(snapshot(agent("agt_a", 1, generation=4, session_id=None)))
    assert (row(store, "ses_a")["generation"], row(store, "ses_a")["native_session_id"]) == (
        4,
        "uuid-1",
    )
    assert session_events(store) == []  # not a state change


def test_nothing_changed_writes_nothing(store: Store) -> None:
    """At 10 snapshots a second, an unchanged session costs no write."""
    for n in range(1, 51):
        add_session(store, f"ses_{n}", f"agt_{n}", n)
    snap = snapshot(*[agent(f"agt_{n}", n) for n in range(1, 51)])
    tracker = Tracker(store)
    tracker.on_snapshot(snap)
    before = store.conn.total_changes
    for revision in range(2, 12):
        tracker.on_snapshot({**snap, "revision": revision})
    assert store.conn.total_changes == before


def test_online_is_computed_and_changes_are_noticed(store: Store) -> None:
    """Online/offline is never stored or journaled: the tracker only notices the change."""
    add_session(store, "ses_a", "agt_a", 1)
    tracker = Tracker(store)
    assert tracker.on_snapshot(snapshot(agent("agt_a", 1))) == {"ses_a"}
    assert tracker.on_snapshot(snapshot(agent("agt_a", 1), revision=2)) == set()
    before = store.conn.total_changes
    assert tracker.on_snapshot(snapshot(panes=1, revision=3)) == {"ses_a"}
    assert tracker.reach["ses_a"] == (False, "agent_exited")
    assert store.conn.total_changes == before
    assert session_events(store) == []


def test_a_session_outside_a_group_is_tracked_without_events(store: Store) -> None:
    add_session(store, "ses_a", "agt_a", 1, state="binding_pending", native=None, group_id=None)
    Tracker(store).on_snapshot(snapshot(agent("agt_a", 1, session_id="uuid-9")))
    assert row(store, "ses_a")["state"] == "ready"
    assert session_events(store) == []


@pytest.mark.parametrize(
    ("snap", "expected"),
    [
        (None, (False, "snapshot_pending")),
        (snapshot(agent("agt_a", 1), runtime_id="rt_new"), (False, "runtime_restarted")),
        (snapshot(panes=0), (False, "pane_gone")),
        (snapshot(panes=1), (False, "agent_exited")),
        (snapshot(agent("agt_other", 1)), (False, "agent_exited")),
        (snapshot(agent("agt_a", 1)), (True, None)),
    ],
    ids=["no snapshot", "runtime restarted", "pane gone", "agent exited", "replaced", "online"],
)
def test_session_online(
    store: Store, snap: dict[str, Any] | None, expected: tuple[bool, str | None]
) -> None:
    add_session(store, "ses_a", "agt_a", 1)
    assert session_online(row(store, "ses_a"), snap) == expected
    record = session_record(row(store, "ses_a"), snap)
    assert (record["online"], record["offline_reason"]) == expected


def test_an_exited_agent_record_is_offline(store: Store) -> None:
    """An `agent.get` record says exited/replaced itself (a snapshot holds live agents only)."""
    add_session(store, "ses_a", "agt_a", 1)
    snap = snapshot({**agent("agt_a", 1), "status": "replaced"})
    assert session_online(row(store, "ses_a"), snap) == (False, "agent_exited")


def test_wants_snapshots_while_there_are_sessions(tmp_path: Path) -> None:
    store = Store(tmp_path)
    try:
        add_group(store)
        engine = Deliverer(store, FakeTerminal())
        assert engine.wants_snapshots() is False
        add_session(store, "ses_a", "agt_a", 1)
        assert engine.wants_snapshots() is True
    finally:
        store.close()
