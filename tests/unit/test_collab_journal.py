"""Idempotent writes, gapless journal sequences and the journal rebuilt from facts (I2, I3.1;
#16 item 5).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pebrel.collab.store import Store
from pebrel.errors import CollabCode
from tests.unit.collab_world import World, make_world, pane_caller


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    yield from make_world(tmp_path)


def busy_group(world: World, name: str, pane: int) -> tuple[str, str, str]:
    grp = world.group(name)
    ses = world.session(f"agent-{name}", pane, grp)
    tid = world.call("collab.task.create", group=grp, title="t", content="c", assignee=ses)["task"][
        "task_id"
    ]
    world.call("collab.task.comment", task=tid, content="?")
    world.call("collab.task.report", task=tid, status="complete", content="r", session=ses)
    world.call("collab.task.accept", task=tid)
    return grp, ses, tid


def test_replay_returns_the_stored_answer(world: World) -> None:
    """Same key + same params: the original answer, nothing written again (I3.1)."""
    grp = world.group()
    first = world.call("collab.task.create", group=grp, title="t", content="c", idempotency_key="k")
    before = world.state()
    again = world.call("collab.task.create", group=grp, title="t", content="c", idempotency_key="k")
    assert again == first and world.state() == before
    world.fails(
        CollabCode.IDEMPOTENCY_CONFLICT,
        "collab.task.create",
        group=grp,
        title="t2",
        content="c",
        idempotency_key="k",
    )
    # Without a key there is no replay: a second task.
    world.call("collab.task.create", group=grp, title="t", content="c")
    assert world.count("tasks") == 2


def test_replay_outlives_a_state_change(world: World) -> None:
    """A retried assign answers as it first did, though the revision moved since."""
    grp = world.group()
    alice = world.session("alice", 1, grp)
    tid = world.call("collab.task.create", group=grp, title="t", content="c")["task"]["task_id"]
    first = world.call(
        "collab.task.assign", task=tid, assignee=alice, revision=1, idempotency_key="a"
    )
    kicks = world.deliveries.kicks
    again = world.call(
        "collab.task.assign", task=tid, assignee=alice, revision=1, idempotency_key="a"
    )
    assert again == first and world.count("attempts") == 1
    assert world.deliveries.kicks == kicks


def test_keys_are_scoped_per_actor(world: World) -> None:
    """The user's key and a session's equal key are different requests (I3.1)."""
    grp = world.group()
    alice = world.session("alice", 1, grp)
    world.call("collab.task.create", group=grp, title="a", content="c", idempotency_key="k")
    world.call(
        "collab.task.create", group=grp, title="b", content="c", idempotency_key="k", session=alice
    )
    world.call(
        "collab.task.create", group=grp, title="b", content="c", idempotency_key="k",
        caller=pane_caller(1, 1),
    )  # fmt: skip
    assert world.count("tasks") == 2  # the pane acts as alice: the same request


def test_sequences_are_gapless_per_group(world: World) -> None:
    a, _, _ = busy_group(world, "a", 1)
    b, _, _ = busy_group(world, "b", 2)
    for grp in (a, b):
        seqs = [s for s, _, _ in world.journal(grp)]
        assert seqs == list(range(1, len(seqs) + 1))
        last = world.store.conn.execute(
            "SELECT last_sequence FROM groups WHERE id = ?", (grp,)
        ).fetchone()[0]
        assert last == len(seqs)
    kinds = [k for _, _, k in world.journal(a)]
    assert kinds[0] == "session.ready" and "task.result" in kinds and "task.accepted" in kinds


def test_journal_rebuilt_after_drop(world: World, tmp_path: Path) -> None:
    """DROP TABLE journal; reopening refills it from the facts with the same ids (I2.6)."""
    a, _, _ = busy_group(world, "a", 1)
    b, _, _ = busy_group(world, "b", 2)
    before = {g: world.journal(g) for g in (a, b)}
    full = world.store.conn.execute("SELECT * FROM journal ORDER BY group_id, sequence").fetchall()
    world.store.conn.execute("DROP TABLE journal")
    world.store.close()
    store = Store(tmp_path)
    try:
        assert store.rebuilt == len(full)
        rebuilt = store.conn.execute("SELECT * FROM journal ORDER BY group_id, sequence").fetchall()
        assert rebuilt == full
    finally:
        store.close()
    world.store = Store(tmp_path)
    assert {g: world.journal(g) for g in (a, b)} == before


def test_journal_rows_lost_are_refilled_and_a_whole_one_is_not_walked(
    world: World, tmp_path: Path
) -> None:
    """A journal missing some rows (not the whole table) is refilled at the next start; a
    complete one is checked by its counts, without the walk through every fact table."""
    a, _, _ = busy_group(world, "a", 1)
    full = world.store.conn.execute("SELECT * FROM journal ORDER BY group_id, sequence").fetchall()
    world.store.conn.execute("DELETE FROM journal WHERE group_id = ? AND sequence = 2", (a,))
    world.store.close()
    store = Store(tmp_path)
    try:
        assert store.rebuilt == 1
        assert (
            store.conn.execute("SELECT * FROM journal ORDER BY group_id, sequence").fetchall()
            == full
        )
    finally:
        store.close()
    walked: list[str] = []
    original = sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn: sqlite3.Connection = original(*args, **kwargs)
        conn.set_trace_callback(lambda sql: walked.append(sql) if "UNION ALL" in sql else None)
        return conn

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sqlite3, "connect", traced)
        store = Store(tmp_path)
    try:
        assert store.rebuilt == 0 and walked == []
    finally:
        store.close()
    world.store = Store(tmp_path)


def test_events_list(world: World) -> None:
    """collab.events.list pages the journal after a sequence, with floor and last_sequence."""
    a, _, tid = busy_group(world, "a", 1)
    everything = world.call("collab.events.list", group="a")
    events = everything["events"]
    assert everything["floor"] == 0 and everything["last_sequence"] == len(events)
    assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
    page = world.call("collab.events.list", group=a, after=2, limit=3)
    assert [e["sequence"] for e in page["events"]] == [3, 4, 5]
    created = next(e for e in events if e["kind"] == "task.created")
    assert created["task_id"] == tid and created["payload"]["event"]["task_id"] == tid
    assert created["type"] == "event" and created["actor"] == {"kind": "user"}
