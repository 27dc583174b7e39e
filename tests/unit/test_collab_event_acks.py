"""Event cursors and `collab.events.ack` (I2.2, I2.3; #17 item 6): cursors decode or are
INVALID_EVENT_CURSOR; an ACK must be of the principal's group, not behind, and sent by the
consumer's newest stream; only principals with events.read subscribe and ACK.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pebrel.collab import cursor
from pebrel.errors import CollabCode, CollabError
from tests.unit.collab_world import USER, World, make_world
from tests.unit.stream_fakes import (
    FakeSink,
    ack,
    add_principal,
    fails,
    got,
    revoke_row,
    run,
    tasks,
)

pytestmark = pytest.mark.timeout(60)

C = CollabCode


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    yield from make_world(tmp_path)


# -- cursors ---------------------------------------------------------------------------------------


def test_a_cursor_round_trips_and_anything_else_is_refused() -> None:
    text = cursor.encode("grp_0123abcd", 42)
    assert cursor.decode(text) == ("grp_0123abcd", 42)
    assert "=" not in text and "grp" not in text
    wrong = [
        None,
        42,
        "",
        "!!!",
        "x" * 300,
        text + "=",
        text[:-2],
        "_" + cursor.encode("grp_a", 1)[1:],
        "cGVicmVsLmN1cnNvci52MjpncnBfYToz",  # pebrel.cursor.v2:grp_a:3
        "cGVicmVsLmN1cnNvci52MTpncnBfYTow",  # pebrel.cursor.v1:grp_a:0
        "cGVicmVsLmN1cnNvci52MTpncnBfYTowMQ",  # pebrel.cursor.v1:grp_a:01
    ]
    for bad in wrong:
        with pytest.raises(CollabError) as info:
            cursor.decode(bad)
        assert info.value.code == C.INVALID_EVENT_CURSOR, bad


# -- ACK -------------------------------------------------------------------------------------------


def test_ack_checks_group_direction_and_send_window(world: World) -> None:
    grp = world.group()
    other = world.group("other")
    bot = add_principal(world.store, "bot", grp)

    async def body() -> None:
        await tasks(world.service, grp, 4)
        sink = FakeSink()
        await world.service.subscribe(bot, {"consumer": "main"}, sink)
        await got(sink, 4)
        await ack(world.service, bot, "main", sink.events()[2]["cursor"])

    run(body)
    loop = asyncio.new_event_loop()

    def acking(consumer: str, text: Any) -> Callable[[], Any]:
        return lambda: loop.run_until_complete(ack(world.service, bot, consumer, text))

    try:
        fails(C.INVALID_EVENT_CURSOR, world, acking("main", "garbage"))
        error = fails(C.INVALID_EVENT_CURSOR, world, acking("main", cursor.encode(other, 3)))
        assert error.details["reason"] == "other_group"
        error = fails(C.INVALID_EVENT_CURSOR, world, acking("main", cursor.encode(grp, 2)))
        assert error.details["reason"] == "behind" and error.details["acked_sequence"] == 3
        error = fails(C.EVENT_ACK_NOT_SENT, world, acking("main", cursor.encode(grp, 5)))
        assert error.details["sent_sequence"] == 4
        fails(C.EVENT_ACK_NOT_SENT, world, acking("never", cursor.encode(grp, 1)))
        fails(C.INVALID_ARGUMENT, world, acking("bad name", cursor.encode(grp, 1)))
        again = acking("main", cursor.encode(grp, 3))()
        assert again["acked_sequence"] == 3, "the current ACK again is answered ok"
        assert acking("main", cursor.encode(grp, 4))()["acked_sequence"] == 4
        stored = world.store.read("SELECT acked_sequence FROM consumers WHERE name = 'main'")
        assert stored[0][0] == 4
    finally:
        loop.close()


def test_only_principals_with_events_read_subscribe_and_ack(world: World) -> None:
    grp = world.group()
    add_principal(world.store, "bot", grp)
    mute = add_principal(world.store, "mute", grp, permissions=("task.read",))
    gone = add_principal(world.store, "gone", grp)
    revoke_row(world.store, "gone")

    def subscribing(caller: dict[str, Any], params: dict[str, Any]) -> Callable[[], Any]:
        return lambda: asyncio.run(world.service.subscribe(caller, params, FakeSink()))

    fails(C.INTEGRATION_PERMISSION_DENIED, world, subscribing(USER, {"consumer": "main"}))
    fails(C.INTEGRATION_PERMISSION_DENIED, world, subscribing(mute, {"consumer": "main"}))
    fails(C.INTEGRATION_REVOKED, world, subscribing(gone, {"consumer": "main"}))
    bot = {"kind": "principal", "principal_id": "bot"}
    wrong: list[dict[str, Any]] = [
        {},
        {"consumer": ""},
        {"consumer": "a b"},
        {"consumer": "x" * 65},
        {"consumer": "-x"},
        {"consumer": 3},
        {"consumer": "ok", "extra": 1},
    ]
    for params in wrong:
        fails(C.INVALID_ARGUMENT, world, subscribing(bot, params))
    text = cursor.encode(grp, 1)
    fails(C.INTEGRATION_PERMISSION_DENIED, world,
          lambda: world.call("collab.events.ack", USER, consumer="main", cursor=text))  # fmt: skip
    fails(C.INTEGRATION_PERMISSION_DENIED, world,
          lambda: asyncio.run(ack(world.service, mute, "main", text)))  # fmt: skip
    fails(C.INTEGRATION_REVOKED, world, lambda: asyncio.run(ack(world.service, gone, "main", text)))


def test_one_connection_carries_one_stream(world: World) -> None:
    grp = world.group()
    bot = add_principal(world.store, "bot", grp)

    async def body() -> None:
        sink = FakeSink()
        await world.service.subscribe(bot, {"consumer": "a"}, sink)
        with pytest.raises(CollabError) as info:
            await world.service.subscribe(bot, {"consumer": "b"}, sink)
        assert info.value.code == C.INVALID_ARGUMENT
        assert not sink.closed

    run(body)
