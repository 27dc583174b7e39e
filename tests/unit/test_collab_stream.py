"""The durable event stream's hub (I2.1-I2.5; #17 item 6): replay from the durable ACK, live
push after each commit, the send window, takeover, slow consumers, retention gaps, revoke.

A real Store and Service in tmp_path; the connections are `FakeSink`s (tests/unit/stream_fakes).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from pebrel.collab import cursor, journal, stream
from pebrel.collab.service import Service
from pebrel.collab.store import Store
from pebrel.errors import CollabCode, CollabError
from tests.conftest import assert_never_async, wait_for_async
from tests.unit.collab_world import USER, FakeTerminal, RecordingDeliveries, World, make_world
from tests.unit.stream_fakes import FakeSink, ack, add_principal, fails, got, run, tasks

pytestmark = pytest.mark.timeout(60)

C = CollabCode


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    yield from make_world(tmp_path)


@pytest.fixture
def small_retention(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal, "RETAIN_EVENTS_PER_GROUP", 20)
    monkeypatch.setattr(journal, "SLACK", 2)


# -- subscribe, replay, live -----------------------------------------------------------------------


def test_a_new_consumer_gets_every_retained_event_then_live_ones(world: World) -> None:
    grp = world.group()
    bot = add_principal(world.store, "bot", grp)

    async def body() -> None:
        await tasks(world.service, grp, 5)
        sink = FakeSink()
        answer = await world.service.subscribe(bot, {"consumer": "main"}, sink)
        assert answer["created"] is True and answer["acked_sequence"] == 0
        assert answer["start_sequence"] == 1 and answer["last_sequence"] == 5
        assert answer["heartbeat_s"] == stream.HEARTBEAT_S
        assert sink.lines == [], "nothing is sent before the answer goes out"
        await got(sink, 5)
        await tasks(world.service, grp, 3, start=5)
        await got(sink, 8)
        assert sink.sequences() == list(range(1, 9))
        listed = await world.service.handle("collab.events.list", {"group": grp}, USER)
        for sent, kept in zip(sink.events(), listed["events"], strict=True):
            assert sent == {**kept, "cursor": cursor.encode(grp, kept["sequence"])}
        assert not sink.closed

    run(body)


def test_a_new_consumer_starts_at_the_oldest_retained_event(
    world: World, small_retention: None
) -> None:
    grp = world.group()
    bot = add_principal(world.store, "bot", grp)

    async def body() -> None:
        await tasks(world.service, grp, 40)
        floor = world.store.floor(grp)
        assert floor > 0
        sink = FakeSink()
        answer = await world.service.subscribe(bot, {"consumer": "late"}, sink)
        assert answer["start_sequence"] == floor + 1
        await got(sink, 40 - floor)
        assert sink.sequences() == list(range(floor + 1, 41))

    run(body)


def test_a_reconnect_replays_from_the_durable_ack_after_a_restart(tmp_path: Path) -> None:
    world = World(tmp_path)
    grp = world.group()
    bot = add_principal(world.store, "bot", grp)

    async def first() -> None:
        await tasks(world.service, grp, 6)
        sink = FakeSink()
        await world.service.subscribe(bot, {"consumer": "main"}, sink)
        await got(sink, 6)
        answer = await ack(world.service, bot, "main", sink.events()[3]["cursor"])
        assert answer["acked_sequence"] == 4
        await world.service.close()

    run(first)
    world.store.close()
    store = Store(tmp_path)  # the service restarted: the send windows are gone
    service = Service(store, FakeTerminal(), RecordingDeliveries())

    async def second() -> None:
        with pytest.raises(CollabError) as info:
            await ack(service, bot, "main", cursor.encode(grp, 5))
        assert info.value.code == C.EVENT_ACK_NOT_SENT
        assert (await ack(service, bot, "main", cursor.encode(grp, 4)))["acked_sequence"] == 4
        sink = FakeSink()
        answer = await service.subscribe(bot, {"consumer": "main"}, sink)
        assert answer["created"] is False and answer["start_sequence"] == 5
        await got(sink, 2)
        assert sink.sequences() == [5, 6]
        assert (await ack(service, bot, "main", sink.events()[1]["cursor"]))["acked_sequence"] == 6
        await service.close()

    run(second)
    store.close()


def test_heartbeats_come_at_the_interval(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream, "HEARTBEAT_S", 0.05)
    grp = world.group()
    bot = add_principal(world.store, "bot", grp)

    async def body() -> None:
        sink = FakeSink()
        await world.service.subscribe(bot, {"consumer": "main"}, sink)
        await wait_for_async(lambda: len(sink.heartbeats()) >= 3, 5, "3 heartbeats")
        beats = sink.heartbeats()
        assert all(set(b) == {"type", "at"} and isinstance(b["at"], int) for b in beats)
        assert beats[2]["at"] - beats[0]["at"] >= 90

    run(body)


# -- takeover, slow, gap, revoke, disconnect -------------------------------------------------------


def test_a_second_subscribe_takes_over_and_the_window_moves_with_it(world: World) -> None:
    grp = world.group()
    bot = add_principal(world.store, "bot", grp)

    async def body() -> None:
        await tasks(world.service, grp, 3)
        old = FakeSink()
        await world.service.subscribe(bot, {"consumer": "main"}, old)
        await got(old, 3)
        new = FakeSink()
        await world.service.subscribe(bot, {"consumer": "main"}, new)
        assert old.closed and old.error is not None
        assert old.error.code == C.EVENT_CONSUMER_REPLACED and old.error.details["retryable"]
        await tasks(world.service, grp, 1, start=3)
        await got(new, 4)
        assert old.sequences() == [1, 2, 3]
        assert new.sequences() == [1, 2, 3, 4]

    run(body)


def test_an_ack_of_what_only_the_replaced_stream_sent_is_refused(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    grp = world.group()
    bot = add_principal(world.store, "bot", grp)
    monkeypatch.setattr(stream, "BATCH", 2)

    async def body() -> None:
        await tasks(world.service, grp, 4)
        old = FakeSink()
        await world.service.subscribe(bot, {"consumer": "main"}, old)
        await got(old, 4)
        new = FakeSink()
        await world.service.subscribe(bot, {"consumer": "main"}, new)
        with pytest.raises(CollabError) as info:  # the new stream has sent nothing yet
            await ack(world.service, bot, "main", old.events()[3]["cursor"])
        assert info.value.code == C.EVENT_ACK_NOT_SENT
        await got(new, 4)
        assert (await ack(world.service, bot, "main", new.events()[3]["cursor"]))["acked_sequence"]

    run(body)


@pytest.mark.parametrize("eager", [False, True])
def test_a_slow_consumer_ends_and_never_stalls_the_others(
    world: World, monkeypatch: pytest.MonkeyPatch, eager: bool
) -> None:
    monkeypatch.setattr(stream, "SLOW_BYTES", 2000)
    monkeypatch.setattr(stream, "SLOW_GRACE_S", 0.3)
    grp = world.group()
    bot = add_principal(world.store, "bot", grp)

    async def body() -> None:
        slow, quick = FakeSink(stuck=True, eager=eager), FakeSink()
        await world.service.subscribe(bot, {"consumer": "slow"}, slow)
        await world.service.subscribe(bot, {"consumer": "quick"}, quick)
        await tasks(world.service, grp, 30)
        await got(quick, 30)
        assert len(slow.events()) < 30, "the slow one stopped pumping past its bound"
        await wait_for_async(lambda: slow.closed, 5, "the slow stream to end")
        assert slow.error is not None and slow.error.code == C.EVENT_CONSUMER_SLOW
        assert slow.error.details["retryable"] is True
        await tasks(world.service, grp, 5, start=30)
        await got(quick, 35)
        assert quick.sequences() == list(range(1, 36))

    run(body)


def test_a_caught_up_consumer_that_stops_reading_is_cut_as_slow(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream that sent every event but whose receiver left them unread past the bound is
    cut after the grace time, with no later commit or heartbeat needed to notice it."""
    monkeypatch.setattr(stream, "SLOW_BYTES", 10)
    monkeypatch.setattr(stream, "SLOW_GRACE_S", 0.3)
    grp = world.group()
    bot = add_principal(world.store, "bot", grp)

    async def body() -> None:
        sink = FakeSink(stuck=True)
        await world.service.subscribe(bot, {"consumer": "main"}, sink)
        await tasks(world.service, grp, 1)  # its one event takes the stream past the bound
        await wait_for_async(lambda: sink.closed, 5, "the stream to end")
        assert sink.error is not None and sink.error.code == C.EVENT_CONSUMER_SLOW
        assert sink.sequences() == [1]

    run(body)


def test_a_stream_whose_next_event_was_trimmed_ends_with_a_gap(
    world: World, small_retention: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream, "SLOW_BYTES", 10)
    monkeypatch.setattr(stream, "SLOW_GRACE_S", 30.0)
    grp = world.group()
    bot = add_principal(world.store, "bot", grp)

    async def body() -> None:
        await tasks(world.service, grp, 1)
        sink = FakeSink(stuck=True)
        await world.service.subscribe(bot, {"consumer": "main"}, sink)
        await got(sink, 1)
        await tasks(world.service, grp, 40, start=1)  # trims past what the stream sent
        assert world.store.floor(grp) > 1
        sink.unstick()
        await wait_for_async(lambda: sink.closed, 5, "the stream to end")
        assert sink.error is not None and sink.error.code == C.EVENT_RETENTION_GAP
        assert sink.error.details["retryable"] is False
        assert sink.sequences() == [1], "nothing after the gap was sent"

    run(body)


def test_a_consumer_behind_the_floor_cannot_subscribe(world: World, small_retention: None) -> None:
    grp = world.group()
    bot = add_principal(world.store, "bot", grp)

    async def first() -> None:
        await tasks(world.service, grp, 3)
        sink = FakeSink()
        await world.service.subscribe(bot, {"consumer": "main"}, sink)
        await got(sink, 3)
        await ack(world.service, bot, "main", sink.events()[1]["cursor"])
        world.service.disconnected(sink)
        await tasks(world.service, grp, 40, start=3)

    run(first)
    again = world.service.subscribe(bot, {"consumer": "main"}, FakeSink())
    error = fails(C.EVENT_RETENTION_GAP, world, lambda: asyncio.run(again))
    assert error.details["acked_sequence"] == 2
    assert error.details["oldest_retained_sequence"] == world.store.floor(grp) + 1

    async def fresh() -> None:
        sink = FakeSink()
        answer = await world.service.subscribe(bot, {"consumer": "main-2"}, sink)
        assert answer["start_sequence"] == world.store.floor(grp) + 1

    run(fresh)


def test_revoke_ends_the_principal_s_streams_at_once(world: World) -> None:
    grp = world.group()
    bot = add_principal(world.store, "bot", grp)
    other = add_principal(world.store, "other", grp)

    async def body() -> None:
        a, b, c = FakeSink(), FakeSink(), FakeSink()
        await world.service.subscribe(bot, {"consumer": "a"}, a)
        await world.service.subscribe(bot, {"consumer": "b"}, b)
        await world.service.subscribe(other, {"consumer": "a"}, c)
        await tasks(world.service, grp, 2)
        await got(a, 2)
        await world.service.handle("collab.integration.revoke", {"id": "bot"}, USER)
        for sink in (a, b):
            assert sink.closed and sink.error is not None
            assert sink.error.code == C.INTEGRATION_REVOKED
        assert not c.closed
        await tasks(world.service, grp, 1, start=2)
        await got(c, 3)
        await assert_never_async(lambda: len(a.lines) > 2, 0.2, "a revoked stream sends nothing")
        with pytest.raises(CollabError) as info:
            await ack(world.service, bot, "a", a.events()[0]["cursor"])
        assert info.value.code == C.INTEGRATION_REVOKED

    run(body)


def test_a_closed_connection_keeps_its_window_for_acks(world: World) -> None:
    grp = world.group()
    bot = add_principal(world.store, "bot", grp)

    async def body() -> None:
        await tasks(world.service, grp, 2)
        sink = FakeSink()
        await world.service.subscribe(bot, {"consumer": "main"}, sink)
        await got(sink, 2)
        sink.closed = True
        world.service.disconnected(sink)
        assert not world.service.hub.by_sink
        assert (await ack(world.service, bot, "main", sink.events()[1]["cursor"]))[
            "acked_sequence"
        ] == 2
        await tasks(world.service, grp, 1, start=2)
        assert len(sink.lines) == 2

    run(body)
