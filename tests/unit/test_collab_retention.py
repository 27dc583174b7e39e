"""Journal retention (I2.4): the newest events per group and a byte bound, with a stored floor
that a rebuild from the facts (I2.6) never goes below (#16 item 5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pebrel.collab import journal
from pebrel.collab.store import Store


def add_group(store: Store, group_id: str) -> None:
    with store.write() as tx:
        tx.insert("groups", {"id": group_id, "name": group_id, "created_at": tx.now})
        tx.insert(
            "sessions",
            {
                "id": f"ses_{group_id}",
                "group_id": group_id,
                "agent_id": "agt_1",
                "generation": 1,
                "agent_kind": "claude",
                "state": "ready",
                "terminal_binding": "{}",
                "created_at": tx.now,
                "updated_at": tx.now,
            },
        )


def append(store: Store, group_id: str, n: int, size: int = 10) -> None:
    for _ in range(n):
        with store.write() as tx:
            ev = tx.event(group_id, "session.ready", {"pad": "x" * size})
            tx.fact("session_events", ev, {"session_id": f"ses_{group_id}"})


def sequences(store: Store, group_id: str) -> list[int]:
    rows = store.read("SELECT sequence FROM journal WHERE group_id = ? ORDER BY 1", (group_id,))
    return [int(r["sequence"]) for r in rows]


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal, "RETAIN_EVENTS_PER_GROUP", 20)
    monkeypatch.setattr(journal, "SLACK", 5)


def test_keeps_newest_events_per_group_and_a_floor(tmp_path: Path, small: None) -> None:
    store = Store(tmp_path)
    add_group(store, "grp_a")
    add_group(store, "grp_b")
    append(store, "grp_a", 40)
    append(store, "grp_b", 3)
    kept = sequences(store, "grp_a")
    assert kept == list(range(kept[0], 41)), "a gapless run up to the newest"
    assert 20 <= len(kept) <= 25
    assert store.floor("grp_a") == kept[0] - 1
    assert sequences(store, "grp_b") == [1, 2, 3]
    assert store.floor("grp_b") == 0


def test_rebuild_never_brings_trimmed_events_back(tmp_path: Path, small: None) -> None:
    store = Store(tmp_path)
    add_group(store, "grp_a")
    append(store, "grp_a", 40)
    before = store.read("SELECT * FROM journal ORDER BY sequence")
    store.conn.execute("DROP TABLE journal")
    store.close()
    reopened = Store(tmp_path)
    after = reopened.read("SELECT * FROM journal ORDER BY sequence")
    assert [dict(r) for r in after] == [dict(r) for r in before]
    assert reopened.rebuilt == len(before)


def test_byte_bound_trims_oldest_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal, "RETAIN_BYTES", 2_000)
    store = Store(tmp_path)
    add_group(store, "grp_a")
    append(store, "grp_a", 30, size=100)
    total = store.read("SELECT coalesce(sum(length(payload)), 0) AS n FROM journal")[0]["n"]
    assert total <= 2_000
    assert store.journal_bytes == total
    kept = sequences(store, "grp_a")
    assert kept[-1] == 30 and kept == list(range(kept[0], 31))
    assert store.floor("grp_a") == kept[0] - 1


def test_byte_bound_counts_utf8_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """I2.4: the journal's bound is in bytes, also for text that takes two bytes a character,
    as written and as counted again when the store opens."""
    monkeypatch.setattr(journal, "RETAIN_BYTES", 2_000)
    store = Store(tmp_path)
    add_group(store, "grp_a")
    for _ in range(30):
        with store.write() as tx:
            ev = tx.event("grp_a", "session.ready", {"pad": "é" * 100})
            tx.fact("session_events", ev, {"session_id": "ses_grp_a"})
    query = "SELECT coalesce(sum(length(CAST(payload AS BLOB))), 0) AS n FROM journal"
    total = store.read(query)[0]["n"]
    assert total <= 2_000
    assert store.journal_bytes == total
    store.close()
    assert Store(tmp_path).journal_bytes == total
