"""Stand-ins for the event-stream unit tests (#17): a Sink you can stall, principals as rows.

`FakeSink` is a connection as collab/stream.py sees it: it records the lines sent, and when
`stuck` it counts their bytes as unsent until `unstick()`; an `eager` one says it drained
while it still holds them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from pebrel.collab import principals
from pebrel.collab.service import Service
from pebrel.collab.store import Store, dumps
from pebrel.errors import CollabCode, CollabError
from pebrel.integration_wire import token_hash
from tests.conftest import wait_for_async
from tests.unit.collab_world import USER, World


class FakeSink:
    def __init__(self, stuck: bool = False, eager: bool = False) -> None:
        self.lines: list[dict[str, Any]] = []
        self.closed = False
        self.error: CollabError | None = None
        self.stuck = stuck
        self.held = 0
        self.moved = asyncio.Event()
        #: drained() returns at once, however much is held (a transport below its own
        #: high-water mark, which may be above the stream's bound).
        self.eager = eager

    def send(self, line: dict[str, Any]) -> None:
        assert not self.closed, "a line sent on a closed connection"
        self.lines.append(line)
        if self.stuck:
            self.held += len(json.dumps(line)) + 1

    def buffered(self) -> int:
        return self.held

    async def drained(self) -> None:
        if self.eager:
            return
        while self.held:
            self.moved.clear()
            await self.moved.wait()

    def unstick(self) -> None:
        self.stuck = False
        self.held = 0
        self.moved.set()

    def end(self, error: CollabError | None = None) -> None:
        self.error = error
        self.closed = True
        self.moved.set()

    # -- what the tests read --------------------------------------------------------------------
    def events(self) -> list[dict[str, Any]]:
        return [line for line in self.lines if line["type"] == "event"]

    def sequences(self) -> list[int]:
        return [int(line["sequence"]) for line in self.events()]

    def heartbeats(self) -> list[dict[str, Any]]:
        return [line for line in self.lines if line["type"] == "heartbeat"]


def add_principal(
    store: Store,
    principal_id: str,
    group_id: str,
    permissions: tuple[str, ...] = ("events.read", "task.read"),
) -> dict[str, Any]:
    """A principal row as the admin CLI would store it; its socket caller."""
    with store.write() as tx:
        tx.insert(
            "principals",
            {
                "id": principal_id,
                "group_id": group_id,
                "permissions": dumps(sorted(permissions)),
                "launch_profiles": "[]",
                "token_hash": token_hash(f"token-{principal_id}"),
                "revoked_at": None,
                "created_at": tx.now,
                "updated_at": tx.now,
            },
        )
    return {"kind": "principal", "principal_id": principal_id}


def revoke_row(store: Store, principal_id: str) -> None:
    principals.changed(store)  # as collab/integration_admin.py's writes do
    with store.write() as tx:
        tx.execute("UPDATE principals SET revoked_at = ? WHERE id = ?", (tx.now, principal_id))


async def ack(service: Service, caller: dict[str, Any], consumer: str, cursor: Any) -> Any:
    """`collab.events.ack` as ``caller`` (through Service.handle: the rights table applies)."""
    return await service.handle(
        "collab.events.ack", {"consumer": consumer, "cursor": cursor}, caller
    )


# -- scenario helpers ----------------------------------------------------------------------------


def run(body: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(body())


async def tasks(service: Service, group: str, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        await service.handle(
            "collab.task.create", {"group": group, "title": f"t{i}", "content": f"c{i}"}, USER
        )


async def got(sink: FakeSink, n: int, what: str = "events") -> None:
    await wait_for_async(lambda: len(sink.events()) >= n, 10, f"{n} {what}")


def fails(code: CollabCode, world: World, call: Callable[[], Any]) -> CollabError:
    """``call`` raises ``code`` (not retryable) and changes nothing in the database."""
    before = world.state()
    with pytest.raises(CollabError) as info:
        call()
    assert info.value.code == code, info.value.to_wire()
    assert info.value.details["retryable"] is False
    assert world.state() == before
    return info.value
