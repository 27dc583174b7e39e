"""A pane worker's process entry: getting a spare ready, the shell report, the run.

The fork server calls :func:`run_worker` in each forked child; :func:`configure_logging` is
also run once in the fork server itself, so its children inherit the handler.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
from dataclasses import dataclass

import zmq

from pebrel import messages as m
from pebrel import proctree
from pebrel.zmqio import connect_worker, worker_connection
from workers.app import Worker, WorkerConfig
from workers.pty import SPAWNS_WITHOUT_FORK, PosixPty
from workers.screen import PaneScreen

logger = logging.getLogger(__name__)


def configure_logging(log_path: str) -> None:
    """Log to the runtime log, one line per record, tagged with the worker's pid."""
    logging.basicConfig(
        filename=log_path,
        level=os.environ.get("PEBREL_LOG_LEVEL", "INFO").upper(),
        format="%(asctime)s worker[%(process)d] %(levelname)s %(name)s: %(message)s",
    )


@dataclass(frozen=True, slots=True)
class Prepared:
    """What a spare worker builds while it waits for its pane: a fresh fork would pay for
    these, and for the copy-on-write faults they cause, after its shell has started."""

    loop: asyncio.AbstractEventLoop
    #: Only where the shell is started with posix_spawn: ptyprocess forks, and a process
    #: with a ZeroMQ context must never fork (TRAPS).
    ctx: zmq.Context[zmq.SyncSocket] | None
    sock: zmq.SyncSocket | None


def prepare(endpoint: str | None) -> Prepared:
    """Get a spare worker ready: its loop, its connection to the router (``endpoint``), and
    one pass over the screen code, so the pages it writes are copied before a pane waits."""
    screen = PaneScreen(80, 24, 100, write_back=lambda data: None)
    screen.feed(b"\x1b]133;A\x07user@host:~$ \x1b]133;B\x07")
    screen.read(24)
    ctx = sock = None
    if SPAWNS_WITHOUT_FORK:
        _touch_spawn_path()
    if endpoint and SPAWNS_WITHOUT_FORK:
        ctx = zmq.Context()
        sock = connect_worker(ctx, endpoint)
    return Prepared(asyncio.new_event_loop(), ctx, sock)


def _touch_spawn_path() -> None:
    """Start and reap one ``true`` on a PTY the way a pane's shell is started: the pages that
    path writes (config parsing, openpty, posix_spawn, ...) are copied from the fork server
    now. Measured: the shell's start took ~0.8 ms in a fresh spare, ~0.2 ms once touched."""
    json.loads(json.dumps({"argv": ["true"], "env": {"A": "b"}, "cols": 80, "integrate": True}))
    with contextlib.suppress(OSError):
        pty = PosixPty(["true"], {"PATH": os.environ.get("PATH", os.defpath)}, os.getcwd(), 80, 24)
        os.waitpid(pty.pid, 0)
        pty.close_fd()


def run_worker(config: WorkerConfig, report_fd: int, report_id: object, prepared: Prepared) -> None:
    """Run one pane worker until its pane closes (the fork server's child entry).

    Once the shell runs, ``{"id": report_id, "shell_pid": S, "integrated": B}`` goes to
    ``report_fd`` (one line, one write, then the fd is closed): the router answers the pane's
    start from it before this worker has even connected. If the shell cannot start, the line
    says ``"shell_pid": null`` and the PaneStartFailed over ZeroMQ explains why.
    """
    # The fork server's child has its parent-death signal and logging set up already.
    proctree.set_child_subreaper()
    unreported: int | None = report_fd

    def report(shell_pid: int | None, integrated: bool) -> None:
        nonlocal unreported
        if unreported is not None:  # once: a failure after the report must not send another
            line = {"id": report_id, "shell_pid": shell_pid, "integrated": integrated}
            with contextlib.suppress(OSError):
                os.write(unreported, json.dumps(line).encode() + b"\n")
            os.close(unreported)
            unreported = None

    try:
        worker = Worker(config, report, ctx=prepared.ctx, sock=prepared.sock)
    except Exception as exc:
        report(None, False)
        logger.exception("pane start failed")
        ctx, sock = worker_connection(prepared.ctx, prepared.sock, config.endpoint)
        sock.send(
            m.encode(
                m.PaneStartFailed(
                    window_id=config.window_id, pane_id=config.pane_id, reason=str(exc)
                )
            )
        )
        sock.close()
        ctx.term()
        sys.exit(1)
    with asyncio.Runner(loop_factory=lambda: prepared.loop) as runner:
        runner.run(worker.run())
