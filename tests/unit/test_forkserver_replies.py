"""The router's side of a spawn: the fork server's pid line and the new worker's own report
arrive on one pipe in either order, and a worker that dies first still gets an answer (R3.4).

The end-to-end paths (a real fork server, spare and worker) are in tests/e2e/test_pane_start.py
and tests/e2e/test_robustness.py; these pin the orderings a real run cannot force.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from pebrel.messages.forkserver import (
    ChildExited,
    ForkFailed,
    ShellReported,
    SpareOffered,
    SpawnWorker,
    WorkerForked,
    encode_line,
)
from pebrel.router.forkserver import ForkServer, SpawnReply, _Spawn
from pebrel.zmqio import worker_identity

pytestmark = pytest.mark.timeout(30)


def _server() -> tuple[ForkServer, list[tuple[int, int | None]]]:
    exits: list[tuple[int, int | None]] = []
    server = ForkServer(
        "unused.log", "ipc://unused", lambda pid, code, why: exits.append((pid, code))
    )
    return server, exits


async def _pending(server: ForkServer, request_id: int) -> _Spawn:
    spawn = _Spawn(asyncio.get_running_loop().create_future())
    server.pending[request_id] = spawn
    return spawn


def _run(test: Any) -> None:
    asyncio.run(test())


def test_the_pid_line_then_the_report_answers_with_the_shell() -> None:
    async def test() -> None:
        server, _ = _server()
        spawn = await _pending(server, 1)
        server._handle(WorkerForked(1, 100))
        assert not spawn.fut.done()  # the shell is not known yet
        server._handle(ShellReported(1, 101, True))
        assert spawn.fut.result() == SpawnReply(100, 101, True)

    _run(test)


def test_a_report_before_the_pid_line_waits_for_it() -> None:
    async def test() -> None:
        server, _ = _server()
        spawn = await _pending(server, 1)
        server._handle(ShellReported(1, 101, False))
        assert not spawn.fut.done()
        server._handle(WorkerForked(1, 100))
        assert spawn.fut.result() == SpawnReply(100, 101, False)

    _run(test)


def test_a_report_without_a_shell_answers_without_one() -> None:
    async def test() -> None:
        server, _ = _server()
        spawn = await _pending(server, 1)
        server._handle(WorkerForked(1, 100))
        server._handle(ShellReported(1, None, False))
        assert spawn.fut.result() == SpawnReply(100, None, False)

    _run(test)


def test_a_worker_that_exits_before_reporting_is_answered_and_its_exit_passed_on() -> None:
    async def test() -> None:
        server, exits = _server()
        spawn = await _pending(server, 1)
        other = await _pending(server, 2)
        server._handle(WorkerForked(1, 100))
        server._handle(WorkerForked(2, 200))
        server._handle(ChildExited(100, 1))
        assert exits == [(100, 1)]
        assert spawn.fut.result() == SpawnReply(100, None, False)
        assert not other.fut.done()  # another worker's spawn is untouched

    _run(test)


def test_a_fork_error_fails_the_spawn() -> None:
    async def test() -> None:
        server, _ = _server()
        spawn = await _pending(server, 1)
        server._handle(ForkFailed(1, "Resource temporarily unavailable"))
        with pytest.raises(Exception, match="fork failed"):
            spawn.fut.result()

    _run(test)


def test_lines_for_unknown_spawns_are_ignored() -> None:
    async def test() -> None:
        server, exits = _server()
        spawn = await _pending(server, 1)
        server._handle(WorkerForked(7, 700))
        server._handle(ShellReported(7, 701, True))
        assert not spawn.fut.done() and exits == []

    _run(test)


def test_worker_identities_are_unique_to_the_process_start() -> None:
    """A worker is addressed by an identity of its own, never by its pane or a bare pid: a
    message meant for a dead worker cannot reach a later process with the same pid."""
    first, second = worker_identity(), worker_identity()
    assert first != second
    assert first.startswith(b"w%d." % os.getpid())


def test_a_config_larger_than_the_pipe_never_blocks_the_loop() -> None:
    """A spare offered over the channel gets a config larger than its pipe: the router writes
    what fits and the rest as the spare reads (a spare that does not read, stopped or still
    warming up, must not stall the router's loop)."""

    async def test() -> None:
        server, _ = _server()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        ours.setblocking(False)
        server.channel = ours
        config_r, config_w = os.pipe()
        try:
            socket.send_fds(theirs, [encode_line(SpareOffered(4242))], [config_w])
            os.close(config_w)
            server._offered()
            assert list(server.spares) == [4242]
            line = encode_line(SpawnWorker(1, {"argv": ["x" * 300_000]}))
            started = time.monotonic()
            assert server._to_spare(line) == 4242  # nobody reads yet
            assert time.monotonic() - started < 0.5 and server.spares == {}
            received = b""
            os.set_blocking(config_r, False)
            while len(received) < len(line):
                await asyncio.sleep(0.001)  # the loop writes the rest as this reads
                with contextlib.suppress(BlockingIOError):
                    received += os.read(config_r, 1 << 16)
            assert received == line
        finally:
            os.close(config_r)
            ours.close()
            theirs.close()

    _run(test)


def test_a_spare_that_died_before_it_was_taken_is_skipped() -> None:
    """Its exit came first, or its pipe has no reader: the next spare, or the fork server, is
    asked instead."""

    async def test() -> None:
        server, exits = _server()
        dead_r, dead_w = os.pipe()
        os.close(dead_r)  # its reader is gone
        live_r, live_w = os.pipe()
        os.set_blocking(dead_w, False)
        os.set_blocking(live_w, False)
        server.spares = {7: dead_w, 8: live_w}
        try:
            line = encode_line(SpawnWorker(1, {}))
            assert server._to_spare(line) == 8
            assert os.read(live_r, 100) == line
            assert server.spares == {}  # both used up, their write ends closed
            other_r, other_w = os.pipe()
            os.close(other_r)
            server.spares = {9: other_w}
            server._handle(ChildExited(9, -9))
            assert server.spares == {} and exits == []  # a spare's exit is not a pane's
            assert server._to_spare(b"{}\n") is None
        finally:
            os.close(live_r)

    _run(test)


def test_a_restart_before_the_old_servers_eof_still_reports_its_workers(tmp_path: Path) -> None:
    """The fork server died and a spawn restarts it before the loop has read the old pipe's
    EOF: the old server's workers are still reported gone (their panes marked exited)."""

    async def test() -> None:
        exits: list[int] = []
        server = ForkServer(
            str(tmp_path / "log"),
            f"ipc://{tmp_path}/none",
            lambda pid, code, why: exits.append(pid),
        )
        server.start()
        try:
            server.alive.add(999_999)  # a pane worker the old server ran
            old = server.proc
            assert old is not None
            old.kill()
            old.wait()  # no loop turn: its EOF is not handled yet
            server._running()
            assert exits == [999_999] and server.alive == set()
            assert server.proc is not old and server.proc is not None
            assert server.proc.poll() is None
        finally:
            server.close()
            await asyncio.get_running_loop().run_in_executor(None, server.wait)

    _run(test)


def test_a_report_after_the_give_up_is_still_recorded() -> None:
    """A slow spare answered without its shell (the report timer) that then reports and dies:
    it did start a shell, so it is not retried as a spare lost when taken."""

    async def test() -> None:
        server, _ = _server()
        spawn = await _pending(server, 1)
        spawn.pid = 100
        spawn.give_up()
        assert spawn.fut.result() == SpawnReply(100, None, False)
        server._handle(ShellReported(1, 101, True))
        assert spawn.report is not None and spawn.report.shell_pid == 101

    _run(test)
