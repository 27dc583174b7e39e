"""A pane worker's process entry: getting a spare ready, the shell report, the run.

The fork server calls :func:`prepare`, then :func:`serve`, in each forked child;
:func:`configure_logging` is also run once in the fork server itself, so its children inherit
the handler.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from dataclasses import dataclass

import zmq

from pebrel import logfile, proctree
from pebrel import messages as m
from pebrel.messages import MessageError
from pebrel.messages.forkserver import ShellReported, SpawnWorker, decode_line, encode_line
from pebrel.workers.app import STOP_SIGNALS, Worker
from pebrel.workers.config import WorkerConfig
from pebrel.workers.osc import OscEvent
from pebrel.workers.pty import SPAWNS_WITHOUT_FORK
from pebrel.workers.screen import PaneScreen
from pebrel.workers.shells import launch_spec
from pebrel.zmqio import connect_worker, worker_connection

logger = logging.getLogger(__name__)


def configure_logging(log_path: str) -> None:
    """Log to the runtime log, one line per record, tagged with the worker's pid."""
    logfile.configure(
        log_path, "%(asctime)s worker[%(process)d] %(levelname)s %(name)s: %(message)s"
    )


@dataclass(frozen=True, slots=True)
class Prepared:
    """What a spare worker builds while it waits for its pane: a fresh fork would pay for
    these, and for the copy-on-write faults they cause, after its shell has started."""

    loop: asyncio.AbstractEventLoop
    #: Set by SIGTERM, SIGHUP or SIGINT: the spare installs the handlers while it waits, and
    #: its worker stops on the same event.
    stopped: asyncio.Event
    #: Only where the shell is started with posix_spawn: ptyprocess forks, and a process
    #: with a ZeroMQ context must never fork (TRAPS).
    ctx: zmq.Context[zmq.SyncSocket] | None
    sock: zmq.SyncSocket | None


def prepare(endpoint: str | None, warm: bool = True) -> Prepared:
    """Get a spare worker ready: its loop, its connection to the router (``endpoint``), and,
    if ``warm``, one pass over a worker's start, so the pages it writes are copied before a
    pane waits (not for a child forked for a pane already waiting: that would only delay it)."""
    loop = asyncio.new_event_loop()
    ctx = sock = None
    if warm and SPAWNS_WITHOUT_FORK:
        _touch_worker_path(loop)
    elif warm:  # ptyprocess forks: no trial shell here, only the screen code
        screen = PaneScreen(80, 24, 100, write_back=lambda data: None)
        screen.feed(_SAMPLE_OUTPUT)
        screen.read(24)
    if endpoint and SPAWNS_WITHOUT_FORK:
        ctx = zmq.Context()
        sock = connect_worker(ctx, endpoint)
    proctree.set_child_subreaper()  # the pane's orphans (nohup, setsid) re-parent here
    proctree.request_short_slice()  # given back at the first prompt (Worker)
    stopped = asyncio.Event()
    for sig in STOP_SIGNALS:  # ~60 us each (asyncio checks every signal number): not later
        loop.add_signal_handler(sig, stopped.set)
    return Prepared(loop, stopped, ctx, sock)


#: What a shell's first prompt looks like to a worker: marks, a cwd report, a title, text.
_SAMPLE_OUTPUT = (
    b"\x1b]133;D;0\x07\x1b]7;file://host/tmp\x07\x1b]0;user@host: ~\x07"
    b"\x1b]133;A\x07\x1b[01;32muser@host\x1b[00m:~$ \x1b]133;B\x07"
)


def _touch_worker_path(loop: asyncio.AbstractEventLoop) -> None:
    """Start a worker on ``true`` the way a pane's worker starts, feed it a prompt, and undo
    it all. A forked spare shares the fork server's memory copy-on-write: every object a
    start touches (if only a reference count) costs a page copy the first time. Measured on
    a split: the worker spent ~2.5 ms of CPU from its config to its loop in a spare warmed
    only on the spawn path, competing with the new shell and the router for the cores."""
    line = encode_line(
        SpawnWorker(
            0,
            {
                "endpoint": "",
                "window_id": 0,
                "pane_id": 0,
                "argv": ["true"],
                "integrate": False,
                "env": {"PATH": os.environ.get("PATH", os.defpath)},
                "cwd": os.getcwd(),
                "cols": 80,
                "rows": 24,
                "scrollback_lines": 100,
                "log_path": "",
            },
        )
    )
    request = decode_line(line)  # as a spare reads its config
    assert isinstance(request, SpawnWorker)
    config = WorkerConfig(**request.config)
    launch_spec("bash", os.environ)
    try:
        worker = Worker(config)
    except OSError:
        return
    try:
        for part in worker.scanner.feed(_SAMPLE_OUTPUT):
            if isinstance(part, OscEvent):
                fact = worker.osc.message(part)
                if fact is not None:
                    m.encode(fact)
            else:
                worker.screen.feed(part)
        worker.screen_rules.screen_changed()
        worker.screen.read(24)
        m.encode(m.PaneStarted(window_id=0, pane_id=0, worker_pid=0, shell_pid=0, integrated=True))
        loop.run_until_complete(_touch_loop(worker, loop))
    finally:
        worker.screen_rules.close()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(worker.pty.pid, 0)
        worker.pty.close_fd()


async def _touch_loop(worker: Worker, loop: asyncio.AbstractEventLoop) -> None:
    """The loop side of a worker's start (its reader, child watcher), undone."""
    worker.execs.install(loop)
    # No orphan reaping for the trial worker: a SIGCHLD now would leave a timer behind that
    # reaps children of the real worker later (its shell's exit status with them).
    worker.execs.uninstall(loop)
    loop.add_reader(worker.pty.fd, lambda: None)
    await asyncio.sleep(0)
    loop.remove_reader(worker.pty.fd)
    worker.execs.close()


def serve(prepared: Prepared, config_fd: int, report_fd: int) -> None:
    """The fork server's child entry: wait in the spare's loop for a pane's config on
    ``config_fd`` (a SpawnWorker line), then run its worker until the pane closes. EOF or a
    stop signal first: no pane for this spare."""
    with asyncio.Runner(loop_factory=lambda: prepared.loop) as runner:
        runner.run(proctree.then_unhook_signal_wakeup(_serve(prepared, config_fd, report_fd)))


async def _serve(prepared: Prepared, config_fd: int, report_fd: int) -> None:
    line = await _config_line(config_fd, prepared.stopped)
    os.close(config_fd)
    if not line:
        return
    request = decode_line(line)
    if not isinstance(request, SpawnWorker):
        raise MessageError(f"a spare was sent a {request.type} record")
    # What the fork server froze stays frozen: a collection never walks (and writes the
    # headers of) the objects shared with it, which would copy every page they are on.
    worker = start_worker(WorkerConfig(**request.config), report_fd, request.spawn_id, prepared)
    await worker.run()


async def _config_line(fd: int, stopped: asyncio.Event) -> bytes:
    """The first line read from ``fd``; b"" on EOF before one, or once ``stopped`` is set."""
    loop = asyncio.get_running_loop()
    line: asyncio.Future[bytes] = loop.create_future()
    data = bytearray()

    def readable() -> None:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        data.extend(chunk)
        if not line.done() and (not chunk or b"\n" in chunk):
            line.set_result(bytes(data.partition(b"\n")[0]) if b"\n" in data else b"")

    def stop(_: object) -> None:
        if not line.done():
            line.set_result(b"")

    os.set_blocking(fd, False)
    loop.add_reader(fd, readable)
    signalled = loop.create_task(stopped.wait())
    signalled.add_done_callback(stop)
    try:
        return await line
    finally:
        loop.remove_reader(fd)
        signalled.cancel()


def start_worker(config: WorkerConfig, report_fd: int, spawn_id: int, prepared: Prepared) -> Worker:
    """Start a pane's shell and build its worker (call on the running loop).

    Once the shell runs, its ShellReported goes to ``report_fd`` (one line, one write, then
    the fd is closed): the router answers the pane's start from it before this worker has even
    connected. If the shell cannot start, the report has no ``shell_pid`` and the
    PaneStartFailed over ZeroMQ explains why (then exits).
    """
    # The fork server's child has its parent-death signal and logging set up already, and
    # is a child subreaper (prepare).
    unreported: int | None = report_fd

    def report(shell_pid: int | None, integrated: bool) -> None:
        nonlocal unreported
        if unreported is not None:  # once: a failure after the report must not send another
            line = encode_line(ShellReported(spawn_id, shell_pid, integrated))
            with contextlib.suppress(OSError):
                os.write(unreported, line)
            os.close(unreported)
            unreported = None

    try:
        worker = Worker(
            config,
            report,
            ctx=prepared.ctx,
            sock=prepared.sock,
            stopped=prepared.stopped,
            short_start_slice=True,
        )
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
    return worker
