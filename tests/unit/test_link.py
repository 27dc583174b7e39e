"""The frontend link (pebrel/link.py): actor messages over a Unix socket pair, in order, whole
at any size; a bad record or a failing handler costs only that message; a closed peer is
reported (the router then stops the runtime: tests/e2e/test_robustness.py)."""

from __future__ import annotations

import asyncio
import socket

import msgpack
import pytest

from pebrel import messages as m
from pebrel.link import Link, open_link

pytestmark = pytest.mark.timeout(30)


async def _pair(
    on_message: list[m.Message], failing: set[int] | None = None
) -> tuple[Link, Link, asyncio.Event]:
    """Two linked ends; the second collects what it reads, raising for connection ids in
    ``failing`` after collecting them."""
    lost = asyncio.Event()

    def collect(message: m.Message) -> None:
        on_message.append(message)
        if failing and getattr(message, "connection_id", None) in failing:
            raise RuntimeError("a handler failed")

    a, b = socket.socketpair()
    sender = await open_link(a, lambda message: None, lambda: None)
    receiver = await open_link(b, collect, lost.set)
    return sender, receiver, lost


async def _until(got: list[m.Message], count: int) -> None:
    while len(got) < count:
        await asyncio.sleep(0.001)


def test_messages_arrive_in_order_and_whole_at_any_size() -> None:
    async def test() -> None:
        got: list[m.Message] = []
        sender, receiver, _ = await _pair(got)
        big = {"text": "x" * (8 * 1024 * 1024), "lines": ["y" * 80] * 10_000}
        sent = [
            m.ConnectionClosed(connection_id=1),
            m.RequestAnswered(connection_id=2, request_id=1, ok=True, result=big, error=None),
            m.RequestAnswered(
                connection_id=3,
                request_id=2,
                ok=True,
                result=None,
                error=None,
                result_json=b'{"revision":1}',
            ),
            m.StopFrontend(),
        ]
        for message in sent:
            assert sender.send(message)
        await asyncio.wait_for(_until(got, len(sent)), 20)
        assert got == sent
        sender.close()
        receiver.close()

    asyncio.run(test())


def test_a_failing_handler_or_a_bad_record_costs_only_that_message() -> None:
    async def test() -> None:
        got: list[m.Message] = []
        sender, receiver, lost = await _pair(got, failing={2})
        assert sender.transport is not None
        sender.send(m.ConnectionClosed(connection_id=1))
        sender.send(m.ConnectionClosed(connection_id=2))  # its handler raises
        sender.transport.write(msgpack.packb({"type": "no_such_message"}))
        sender.send(m.ConnectionClosed(connection_id=3))
        await asyncio.wait_for(_until(got, 3), 10)
        assert [message.connection_id for message in got] == [1, 2, 3]  # type: ignore[attr-defined]
        assert receiver.open and not lost.is_set()
        sender.close()
        receiver.close()

    asyncio.run(test())


def test_a_closed_peer_is_reported_and_sending_then_says_so() -> None:
    async def test() -> None:
        got: list[m.Message] = []
        sender, receiver, lost = await _pair(got)
        sender.close()
        await asyncio.wait_for(lost.wait(), 10)
        receiver.close()
        await asyncio.sleep(0)
        assert not receiver.send(m.StopFrontend())

    asyncio.run(test())


def test_bytes_that_are_not_msgpack_close_the_link() -> None:
    async def test() -> None:
        got: list[m.Message] = []
        sender, receiver, lost = await _pair(got)
        assert sender.transport is not None
        sender.transport.write(b"\xc1")
        await asyncio.wait_for(lost.wait(), 10)
        assert got == [] and not receiver.open
        sender.close()

    asyncio.run(test())
