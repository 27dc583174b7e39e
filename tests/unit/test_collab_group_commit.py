"""Group commit in the collab store (collab/store.py, collab/writes.py; I3, #16 item 7, #17 item 8).

Writes handled in the same turn of the loop share one transaction (one fsync); each is
answered only after it committed; a write that fails is undone alone; a commit that fails fails
every write of its batch as retryable and stores none of them; nothing outside a request reads
a batch before it committed.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from pebrel.collab.service import Service
from pebrel.collab.store import Batch, Event, Store
from pebrel.errors import CollabCode, CollabError
from tests.unit.collab_world import USER, World, make_world
from tests.unit.stream_fakes import FakeSink

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    yield from make_world(tmp_path)


def commits(store: Store) -> list[str]:
    """Every COMMIT the store's connection runs from now on."""
    seen: list[str] = []
    store.conn.set_trace_callback(lambda sql: seen.append(sql) if sql == "COMMIT" else None)
    return seen


def create(world: World, group: str, title: str) -> Any:
    return world.service.handle(
        "collab.task.create", {"group": group, "title": title, "content": "c"}, dict(USER)
    )


async def gathered(*work: Any) -> list[Any]:
    return list(await asyncio.gather(*work, return_exceptions=True))


def test_writes_of_one_turn_share_one_commit(world: World) -> None:
    group = world.group()
    seen = commits(world.store)
    announced: list[list[Event]] = []
    world.store.committed.append(announced.append)
    results = asyncio.run(gathered(*(create(world, group, f"t{i}") for i in range(20))))
    assert all(isinstance(r, dict) for r in results), results
    assert len(seen) == 1, "20 writes in one turn are one transaction"
    assert world.count("tasks") == 20
    # Their events are announced once, after the commit, in sequence order.
    assert len(announced) == 1
    assert [ev.sequence for ev in announced[0]] == sorted(ev.sequence for ev in announced[0])
    assert [ev.event_id for ev in announced[0]] == [e for _, e, _ in world.journal(group)]


def test_a_failing_write_is_undone_alone(world: World) -> None:
    group = world.group()
    before = world.journal(group)
    bad = world.service.handle(
        "collab.task.create", {"group": "grp_00000000000000000000", "title": "x", "content": "c"},
        dict(USER),
    )  # fmt: skip
    results = asyncio.run(gathered(create(world, group, "a"), bad, create(world, group, "b")))
    assert isinstance(results[1], CollabError)
    assert results[1].code == CollabCode.GROUP_NOT_FOUND
    assert isinstance(results[0], dict) and isinstance(results[2], dict)
    assert sorted(r[0] for r in world.store.read("SELECT title FROM tasks")) == ["a", "b"]
    kinds = [kind for _, _, kind in world.journal(group)[len(before) :]]
    assert kinds.count("task.created") == 2
    # The sequence has no hole where the refused write was.
    sequences = [s for s, _, _ in world.journal(group)]
    assert sequences == list(range(1, len(sequences) + 1))


def test_a_batch_that_cannot_commit_fails_every_write_and_stores_none(world: World) -> None:
    """A deferred foreign key, checked at COMMIT, makes the batch's commit fail."""
    group = world.group()
    world.session("alice", 1, group)
    before = world.state()
    announced: list[list[Event]] = []
    world.store.committed.append(announced.append)

    async def run() -> list[Any]:
        both = [asyncio.ensure_future(create(world, group, title)) for title in "ab"]
        await asyncio.sleep(0)  # both writes ran in the open batch
        assert world.store.batch is not None
        assert world.store.conn.execute("SELECT count(*) FROM tasks").fetchone()[0] == 2
        world.store.conn.execute("PRAGMA defer_foreign_keys=ON")
        world.store.conn.execute("UPDATE sessions SET group_id = 'grp_gone'")
        return await gathered(*both)

    results = asyncio.run(run())
    for result in results:
        assert isinstance(result, CollabError), result
        assert result.code == CollabCode.COLLAB_STORAGE_UNAVAILABLE
        assert result.details["retryable"] is True
    assert world.state() == before
    assert announced == []
    # The store works again after it.
    assert asyncio.run(create(world, group, "c"))["task"]["title"] == "c"


def test_outside_a_request_a_read_commits_the_open_batch_first(world: World) -> None:
    group = world.group()
    seen = commits(world.store)

    async def run() -> tuple[list[Any], list[Any]]:
        write = asyncio.ensure_future(create(world, group, "a"))
        await asyncio.sleep(0)
        assert world.store.batch is not None and seen == []
        # The delivery engine or an event stream reading now: the batch commits first.
        rows = world.store.read("SELECT title FROM tasks")
        assert world.store.batch is None and seen == ["COMMIT"]
        return [tuple(r) for r in rows], [await write]

    rows, answers = asyncio.run(run())
    assert rows == [("a",)]
    assert answers[0]["task"]["title"] == "a"
    assert seen == ["COMMIT"], "the scheduled commit found nothing left to do"


def test_a_read_in_a_request_waits_for_the_batch_it_saw(world: World) -> None:
    group = world.group()

    async def run() -> None:
        write = asyncio.ensure_future(create(world, group, "a"))
        await asyncio.sleep(0)
        batch = world.store.batch
        assert batch is not None
        task_id = world.store.conn.execute("SELECT id FROM tasks").fetchone()[0]
        read = await world.service.handle("collab.task.get", {"task": task_id}, dict(USER))
        # The answer came only after the batch holding the task committed.
        assert batch.done.done() and batch.done.result() is True
        assert read["task"]["title"] == "a"
        await write

    asyncio.run(run())


def test_a_revoke_refuses_a_request_of_the_same_turn_after_it(world: World) -> None:
    """Principals are kept between requests (collab/principals.py `current`); a revoke in an
    open batch drops the kept one, so a later request in that batch is already refused."""
    group = world.group()
    policy = {"id": "bridge", "groupId": group, "permissions": ["task.create"],
              "launchProfiles": []}  # fmt: skip
    world.call("collab.integration.create", policy=policy, token_sha256="0" * 64)
    bridge = {"kind": "principal", "principal_id": "bridge"}
    params = {"group": group, "title": "t", "content": "c"}
    first = world.call("collab.task.create", bridge, **params, idempotency_key="k1")
    assert first["task"]["title"] == "t"

    async def run() -> list[Any]:
        revoke = world.service.handle("collab.integration.revoke", {"id": "bridge"}, USER)
        later = world.service.handle(
            "collab.task.create", {**params, "idempotency_key": "k2"}, bridge
        )
        return await gathered(revoke, later)

    revoked, later = asyncio.run(run())
    assert isinstance(revoked, dict), revoked
    assert isinstance(later, CollabError) and later.code == CollabCode.INTEGRATION_REVOKED
    assert world.count("tasks") == 1


def test_a_batch_left_by_an_ended_loop_is_committed_by_the_next_write(world: World) -> None:
    """A loop that ends before its scheduled commit ran (a test's asyncio.run, a service
    stopping) leaves the batch open: the next write, in another loop, commits it first."""
    group = world.group()

    async def write_only() -> None:
        with world.store.joined() as tx:
            tx.execute("UPDATE groups SET name = 'renamed' WHERE id = ?", (group,))
        asyncio.get_running_loop().stop()  # before the commit's turn comes

    loop = asyncio.new_event_loop()
    try:
        task = loop.create_task(write_only())
        loop.run_forever()
        assert task.done()
    finally:
        loop.close()
    assert world.store.batch is not None
    assert asyncio.run(create(world, group, "a"))["task"]["title"] == "a"
    assert world.store.batch is None
    names = world.store.conn.execute("SELECT name FROM groups WHERE id = ?", (group,)).fetchall()
    assert names == [("renamed",)]


class FailingCommits:
    """The store's connection whose next COMMIT, once armed, fails (a disk that filled up)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.armed = False

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if self.armed and sql == "COMMIT":
            self.armed = False
            raise sqlite3.OperationalError("database or disk is full")
        return self.conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


def failing_commits(store: Store) -> FailingCommits:
    proxy = FailingCommits(store.conn)
    store.conn = cast(sqlite3.Connection, proxy)
    return proxy


def then_a_failing_batch(world: World, service: Service, params: dict[str, Any]) -> list[Any]:
    """Right after the next commit, another request's write opens a batch whose COMMIT fails.
    Returns the list that will hold that request's future."""
    failing = failing_commits(world.store)
    later: list[Any] = []

    def next_write(events: list[Event]) -> None:
        if not later:
            later.append(asyncio.ensure_future(service.handle("collab.task.create", params, USER)))
            failing.armed = True

    world.store.committed.append(next_write)
    return later


def test_a_committed_write_is_not_failed_by_a_later_batch(world: World) -> None:
    """A write whose batch committed is answered ok, even if a batch opened after it (which
    it never read) fails while its answer is on the way: a retry without a key would store
    it twice."""
    group = world.group()
    params = {"group": group, "title": "b", "content": "c"}
    later = then_a_failing_batch(world, world.service, params)

    async def run() -> tuple[Any, Any]:
        first = (await gathered(create(world, group, "a")))[0]
        (second,) = await gathered(*later)
        return first, second

    first, second = asyncio.run(run())
    assert isinstance(second, CollabError) and second.details["retryable"] is True
    titles = [r[0] for r in world.store.read("SELECT title FROM tasks")]
    assert titles == ["a"]
    assert isinstance(first, dict), f"task 'a' is stored, yet its create was answered {first!r}"


def test_the_delivery_engine_counts_only_committed_messages(world: World) -> None:
    """The kick after a write runs in the request's context, but it is the delivery engine:
    it must not read the open batch (a message of a batch that then fails would be counted,
    and the message its retry stores under the same rowid never kicked)."""
    group = world.group()
    alice = world.session("alice", 1, group)
    bob = world.session("bob", 2, group)
    service = Service(world.store, world.terminal)
    assert service.engine is not None
    engine = service.engine
    params = {"group": group, "title": "b", "content": "c", "assignee": bob}
    later = then_a_failing_batch(world, service, params)

    async def run() -> tuple[Any, Any, int]:
        await service.start()
        try:
            params = {"group": group, "title": "a", "content": "c", "assignee": alice}
            first = (await gathered(service.handle("collab.task.create", params, USER)))[0]
            (second,) = await gathered(*later)
            return first, second, engine._seen_rowid
        finally:
            engine.close()
            await engine.wait_closed()

    first, second, seen = asyncio.run(run())
    assert isinstance(second, CollabError) and second.details["retryable"] is True
    assert isinstance(first, dict), first
    top = world.store.read("SELECT coalesce(max(rowid), 0) FROM messages")[0][0]
    assert seen <= top, "the engine counted a message that was never committed"


def test_a_kept_principal_of_the_open_batch_is_not_used_outside_a_request(world: World) -> None:
    """`events.subscribe` is answered outside a request: the principal it checks must be
    the committed one, not one a request of the same turn read from the open batch."""
    group = world.group()
    policy = {"id": "bridge", "groupId": group, "permissions": ["task.read"],
              "launchProfiles": []}  # fmt: skip
    world.call("collab.integration.create", policy=policy, token_sha256="0" * 64)
    bridge = {"kind": "principal", "principal_id": "bridge"}
    failing = failing_commits(world.store)
    granted = {**policy, "permissions": ["task.read", "events.read"]}

    async def run() -> tuple[list[Any], Any]:
        update = world.service.handle("collab.integration.update", {"policy": granted}, USER)
        probe = world.service.handle("collab.capabilities", {}, bridge)
        both = [asyncio.ensure_future(update), asyncio.ensure_future(probe)]
        await asyncio.sleep(0)  # the grant is in the open batch; the probe read it
        assert world.store.batch is not None
        failing.armed = True  # ... and that batch will not commit
        subscribed: Any
        try:
            subscribed = await world.service.subscribe(bridge, {"consumer": "c"}, FakeSink())
        except CollabError as exc:
            subscribed = exc
        answers = await gathered(*both)
        await world.service.hub.close()
        return answers, subscribed

    (update, _), subscribed = asyncio.run(run())
    assert isinstance(update, CollabError) and update.details["retryable"] is True
    assert isinstance(subscribed, CollabError), f"subscribed without events.read: {subscribed}"
    assert subscribed.code == CollabCode.INTEGRATION_PERMISSION_DENIED


def test_a_transaction_sqlite_rolled_back_fails_its_batch(world: World) -> None:
    """SQLite may roll back the whole transaction on an I/O error, disk full or out of
    memory (not only the statement): the batch's earlier writes are gone, so they fail; the
    writes after it must not run outside any transaction (each RELEASE would then commit on
    its own, and be answered failed by the batch's COMMIT)."""
    group = world.group()

    async def lost() -> None:
        with world.store.joined() as tx:
            tx.execute("ROLLBACK")  # what SQLite did on its own
            raise sqlite3.OperationalError("disk I/O error")

    async def run() -> list[Any]:
        # One turn: a write, one during which SQLite drops the transaction, another write.
        work = [create(world, group, "a"), lost(), create(world, group, "b")]
        return await gathered(*(asyncio.ensure_future(w) for w in work))

    first, failed, second = asyncio.run(run())
    assert isinstance(failed, sqlite3.OperationalError)
    assert isinstance(first, CollabError) and first.details["retryable"] is True
    titles = sorted(r[0] for r in world.store.read("SELECT title FROM tasks"))
    answered = [] if isinstance(second, CollabError) else ["b"]
    assert titles == answered, f"stored {titles}, answered {second!r}"
    assert world.store.batch is None and not world.store.conn.in_transaction


def test_a_batch_of_a_closed_loop_keeps_its_outcome_and_wakes_no_one() -> None:
    """Closing the store after its loop was stopped and closed with a writer still waiting:
    the commit's outcome is kept, and waking the gone writers does not raise."""
    loop = asyncio.new_event_loop()
    batch = Batch(loop)
    batch.done.add_done_callback(lambda _: None)  # a writer that was waiting
    loop.close()
    batch.tell(True)
    assert batch.outcome is True and not batch.done.done()
