"""The collab link's parts that need no runtime: peer lookup, caller, coalescing, the
service's Terminal over the link (FEATURES I1; #16)."""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from pebrel import messages as m
from pebrel import proctree
from pebrel.collab.app import CollabApp, RouterTerminal, wire_error
from pebrel.collab.service import Service
from pebrel.collab.terminal import TerminalUnavailable
from pebrel.errors import CollabCode, CollabError, ErrorCode, PebrelError
from pebrel.link import Link
from pebrel.router import collab_caller
from pebrel.router.collab_link import Coalescer

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def client() -> Iterator[socket.socket]:
    """The client end of a loopback TCP connection of this process."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.create_connection(server.getsockname()) as client:
            accepted, _ = server.accept()
            with accepted:
                yield client


@pytest.fixture
def connection(client: socket.socket) -> tuple[int, int]:
    """Its (client port, server port)."""
    return client.getsockname()[1], client.getpeername()[1]


def test_the_peer_of_a_connection_is_this_process(connection: tuple[int, int]) -> None:
    """I1: the client end of a loopback connection is found by its ports (only ours)."""
    client_port, server_port = connection
    assert proctree.tcp_peer_pids(client_port, server_port) == {os.getpid()}
    # The server end is not the client end.
    assert proctree.tcp_peer_pids(server_port, client_port) == {os.getpid()}
    assert proctree.tcp_peer_pids(client_port, server_port + 1 or 1) == set()


def test_a_gone_connection_has_no_peer() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server_port = server.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", server_port))
        client_port = client.getsockname()[1]
        client.close()
    assert proctree.tcp_peer_pids(client_port, server_port) == set()


def test_the_caller_is_the_user_a_pane_or_unknown(connection: tuple[int, int]) -> None:
    """I1: ancestors decide: a pane's shell or worker, else the user; the router or nothing
    found: unknown."""
    client_port, server_port = connection
    me = os.getpid()
    assert collab_caller.resolve(client_port, server_port, {}, router_pid=1 << 30) == {
        "kind": "user"
    }
    parent = os.getppid()
    assert collab_caller.resolve(client_port, server_port, {parent: (2, 5)}, 1 << 30) == {
        "kind": "pane",
        "window_id": 2,
        "pane_id": 5,
    }
    assert collab_caller.resolve(client_port, server_port, {}, router_pid=parent) == {
        "kind": "unknown"
    }
    assert collab_caller.resolve(0, server_port, {me: (1, 1)}, 1 << 30) == {"kind": "unknown"}
    assert collab_caller.resolve(client_port, 1, {me: (1, 1)}, 1 << 30) == {"kind": "unknown"}


def test_a_child_holding_the_socket_too_is_placed_with_it(
    client: socket.socket, connection: tuple[int, int]
) -> None:
    """Several holders (a fork): placed together when they agree, else unknown."""
    client_port, server_port = connection
    me = os.getpid()
    child = subprocess.Popen(  # it holds the connection's client end too
        [sys.executable, "-c", "import sys; sys.stdin.read()"],
        stdin=subprocess.PIPE,
        pass_fds=(client.fileno(),),
    )
    try:
        assert proctree.tcp_peer_pids(client_port, server_port) >= {me, child.pid}
        assert collab_caller.resolve(client_port, server_port, {me: (1, 3)}, 1 << 30) == {
            "kind": "pane",
            "window_id": 1,
            "pane_id": 3,
        }
        # The child alone in a pane: the holders disagree.
        assert collab_caller.resolve(client_port, server_port, {child.pid: (1, 4)}, 1 << 30) == {
            "kind": "unknown"
        }
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(10)


def test_coalescing_sends_at_most_one_per_interval_and_always_the_last() -> None:
    """I1 (#16): snapshots to the collab service: the first at once, then at most one per
    interval, and the last change is always sent."""

    async def scenario() -> tuple[list[float], float, float]:
        loop = asyncio.get_running_loop()
        sent: list[float] = []
        coalescer = Coalescer(0.05, lambda: sent.append(loop.time()))
        coalescer.poke()  # at once
        last_poke = loop.time()
        for _ in range(10):  # a storm: sent at the interval, the last one too
            last_poke = loop.time()
            coalescer.poke()
            await asyncio.sleep(0.004)
        await asyncio.sleep(0.1)
        later = loop.time()
        coalescer.poke()  # long after: at once again
        coalescer.poke()
        coalescer.cancel()  # a pending trailing send can be dropped (the watcher left)
        await asyncio.sleep(0.08)
        return sent, last_poke, later

    sent, last_poke, later = asyncio.run(scenario())
    assert all(b - a >= 0.049 for a, b in itertools.pairwise(sent)), sent
    # The storm's last change is sent: a send at or after its last poke (under load the
    # trailing send may fall inside the storm's final sleep).
    assert any(at >= last_poke for at in sent if at < later), (sent, last_poke)
    assert later <= sent[-1] < later + 0.01  # after a quiet interval: sent in the poke itself
    assert sent[-2] < later


class FakeLink(Link):
    def __init__(self) -> None:
        super().__init__(lambda message: None, lambda: None)
        self.sent: list[m.Message] = []
        self.is_open = True

    @property
    def open(self) -> bool:
        return self.is_open

    def send(self, message: m.Message) -> bool:
        if not self.is_open:
            return False
        self.sent.append(message)
        return True


def test_router_terminal_calls_answers_and_loses_the_link() -> None:
    """The service's Terminal: answers by call id, errors as PebrelError, a lost link as
    TerminalUnavailable, a silent runtime after the bounded wait as TerminalUnavailable."""

    async def scenario() -> None:
        terminal = RouterTerminal(timeout_s=0.2)
        link = FakeLink()
        terminal.link = link
        first = asyncio.ensure_future(terminal.call("pane.read", {"pane_id": 1}))
        second = asyncio.ensure_future(terminal.call("agent.prompt", {"agent": "a"}))
        await asyncio.sleep(0)
        calls = [msg for msg in link.sent if isinstance(msg, m.TerminalCall)]
        assert [c.method for c in calls] == ["pane.read", "agent.prompt"]
        terminal.answered(
            m.TerminalAnswered(
                call_id=calls[1].call_id,
                ok=False,
                result=None,
                error={"code": "agent_exited", "message": "gone", "details": {"agent": "a"}},
            )
        )
        terminal.answered(
            m.TerminalAnswered(call_id=calls[0].call_id, ok=True, result={"text": "x"}, error=None)
        )
        assert await first == {"text": "x"}
        with pytest.raises(PebrelError) as failed:
            await second
        assert failed.value.code == ErrorCode.AGENT_EXITED
        assert failed.value.details == {"agent": "a"}
        # No answer within the bound: outcome unknown.
        with pytest.raises(TerminalUnavailable):
            await terminal.call("pane.run", {"pane_id": 1, "command": "true"})
        # The link lost with a call in flight.
        third = asyncio.ensure_future(terminal.call("pane.read", {"pane_id": 1}))
        await asyncio.sleep(0)
        terminal.lost()
        with pytest.raises(TerminalUnavailable):
            await third
        link.is_open = False
        with pytest.raises(TerminalUnavailable):
            await terminal.call("pane.read", {"pane_id": 1})
        assert terminal.pending == {}
        assert terminal.snapshot() is None
        snap: dict[str, Any] = {"windows": []}
        terminal.snapshot_changed(
            m.SnapshotChanged(connection_id=0, runtime_id="r", revision=3, snapshot=snap)
        )
        assert terminal.snapshot() == snap

    asyncio.run(scenario())


def test_wire_errors_keep_their_codes() -> None:
    assert wire_error({"code": "TASK_CHANGED", "message": "m"}).code == CollabCode.TASK_CHANGED
    assert wire_error({"code": "weird", "message": "m"}).code == ErrorCode.INTERNAL_ERROR
    assert wire_error(None).code == ErrorCode.INTERNAL_ERROR


class RaisingService:
    async def handle(
        self, method: str, params: dict[str, Any], caller: dict[str, Any]
    ) -> dict[str, Any]:
        if method == "collab.task.get":
            raise CollabError(CollabCode.TASK_NOT_FOUND, "no such task", {"task": "tsk_1"})
        if method == "collab.group.list":
            raise RuntimeError("a bug")
        return {"caller": caller}


def test_the_service_answers_results_collab_errors_and_internal_errors(
    tmp_path: Path,
) -> None:
    """collab/app.py: a CollabError goes back as it is; anything else as internal_error with
    an incident id."""

    async def scenario() -> list[m.CollabAnswered]:
        app = CollabApp(-1, tmp_path)
        link = FakeLink()
        app.link = link
        app.service = cast(Service, RaisingService())
        for request_id, method in enumerate(
            ("collab.capabilities", "collab.task.get", "collab.group.list"), 1
        ):
            app.request(
                m.CollabRequest(
                    request_id=request_id, method=method, params={}, caller={"kind": "user"}
                )
            )
        while app.tasks:
            await asyncio.sleep(0.001)
        return [msg for msg in link.sent if isinstance(msg, m.CollabAnswered)]

    answers = {a.request_id: a for a in asyncio.run(scenario())}
    assert answers[1].ok and answers[1].result == {"caller": {"kind": "user"}}
    assert not answers[2].ok and answers[2].error == {
        "code": "TASK_NOT_FOUND",
        "message": "no such task",
        "details": {"task": "tsk_1", "retryable": False},
    }
    assert not answers[3].ok and answers[3].error is not None
    assert answers[3].error["code"] == "internal_error"
    assert answers[3].error["details"]["incident"]
