"""The fork server: a small process that has imported the pane worker and forks one per pane.

Starting a fresh interpreter per pane costs ~100 ms; forking this already-initialised process
costs a few milliseconds, and the children share its imported code pages (`gc.freeze()` keeps
the collector from touching them). It has no threads and no ZeroMQ context (TRAPS: never fork
with either).

It keeps one *spare* child forked ahead of time, already set up as a worker process and waiting
for its config on a pipe. The write end of that pipe goes to the router over the spares channel
(a Unix socket, SCM_RIGHTS), so a new pane's config goes from the router straight to the spare:
one process hop, not two. The router says when it took the spare, and the next one is forked a
moment later. The records that go between them, and who writes which where, are in
pebrel/messages/forkserver.py (JSON lines; the channel: one datagram per spare). It reaps its
own children (pane workers and the spare) and exits when its stdin closes; its children then
get SIGTERM from their parent-death signal.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import selectors
import signal
import socket
import sys
import time

from pebrel import fdlimit, injection, proctree
from pebrel.messages import MessageError
from pebrel.messages.forkserver import (
    PRELOAD_SSH_VAR,
    ChildExited,
    ForkFailed,
    ForkRecord,
    SpareOffered,
    SpareTaken,
    SpawnWorker,
    WorkerForked,
    decode_line,
    encode_line,
)
from pebrel.screenrules import shipped_rules
from pebrel.workers import startup
from pebrel.workers.shells import launch_spec

logger = logging.getLogger(__name__)

SPARE_DELAY_S = 0.01
"""How long after handing out the spare the next one is forked: not while the new pane's
worker and shell are starting on the same cores."""
SPARE_RETRY_S = 1.0
"""How long after a failed fork, or a spare that died unused, the next one is tried (a spare
that cannot start, say a vanished endpoint, must not become a fork loop)."""


def _write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to a blocking pipe (a config larger than the pipe's 64 KiB is
    written as the child reads it; a signal can cut a write short)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _child(
    parent: int, config_r: int, out_fd: int, private: list[int], endpoint: str | None, warm: bool
) -> None:
    """In the forked child: become a clean pane worker process, wait for its config, run it
    (``warm``: a spare, with time to go over a worker's start first)."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        proctree.set_parent_death_signal(signal.SIGTERM)
        if os.getppid() != parent:  # the fork server died before the line above
            os._exit(0)
        report_fd = os.dup(out_fd)  # the router's end of stdout, for this worker's report
        for fd in private:
            os.close(fd)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)  # stdin was the fork server's requests
        os.dup2(devnull, 1)
        os.close(devnull)
        os.setsid()
        startup.serve(startup.prepare(endpoint, warm), config_r, report_fd)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        code = 1
    os._exit(code)


class ForkServer:
    def __init__(self, endpoint: str | None, channel: socket.socket) -> None:
        self.endpoint = endpoint  # the router's: a spare connects before it has a pane
        self.channel = channel  # where spares are offered to the router
        self.requests = sys.stdin.fileno()
        self.out = sys.stdout.buffer
        self.wakeup_r, self.wakeup_w = os.pipe()
        os.set_blocking(self.wakeup_r, False)
        os.set_blocking(self.wakeup_w, False)
        self.buffer = b""
        self.children: set[int] = set()
        #: Children the router never heard of (its config could not be written): their exit
        #: is not news.
        self.unreported: set[int] = set()
        #: The spare offered to the router and not taken yet.
        self.spare: int | None = None
        self.refill_at = 0.0  # time.monotonic() when the next spare is forked

    def reply(self, record: ForkRecord) -> None:
        self.out.write(encode_line(record))
        self.out.flush()

    def fork_child(self, spare: bool) -> tuple[int, int]:
        """A child set up as a worker process, waiting for its config on the returned fd."""
        config_r, config_w = os.pipe()
        parent = os.getpid()
        private = [self.wakeup_r, self.wakeup_w, config_w, self.channel.fileno()]
        try:
            pid = os.fork()
        except OSError:
            os.close(config_r)
            os.close(config_w)
            raise
        if pid == 0:
            _child(parent, config_r, self.out.fileno(), private, self.endpoint, spare)
        os.close(config_r)
        self.children.add(pid)
        return pid, config_w

    def refill(self) -> None:
        """Fork the next spare when it is due and offer it to the router (a failed fork only
        means the next pane forks on request)."""
        if self.spare is not None or time.monotonic() < self.refill_at:
            return
        try:
            pid, config_w = self.fork_child(spare=True)
        except OSError:
            self.refill_at = time.monotonic() + SPARE_RETRY_S
            return
        try:
            socket.send_fds(self.channel, [encode_line(SpareOffered(pid))], [config_w])
        except OSError:  # the router is going: the child reads EOF and exits
            self.unreported.add(pid)
            self.refill_at = time.monotonic() + SPARE_RETRY_S
        else:
            self.spare = pid
        finally:
            os.close(config_w)

    def taken(self, pid: int) -> None:
        """The router handed spare ``pid`` a pane: fork the next one a moment later."""
        if self.spare == pid:
            self.spare = None
            self.refill_at = time.monotonic() + SPARE_DELAY_S

    def spawn(self, request: SpawnWorker, line: bytes) -> None:
        """A pane for which the router had no spare: fork a child and write it the config
        (``line``, the request as it came)."""
        try:
            pid, config_w = self.fork_child(spare=False)
        except OSError as exc:
            self.reply(ForkFailed(request.spawn_id, str(exc)))
            return
        try:
            _write_all(config_w, line)
        except OSError as exc:  # it died before reading: it never was a pane
            self.unreported.add(pid)
            self.reply(ForkFailed(request.spawn_id, f"the new worker exited: {exc}"))
            return
        finally:
            os.close(config_w)
        self.reply(WorkerForked(request.spawn_id, pid))

    def reap(self) -> None:
        for pid in list(self.children):
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done, status = pid, 0
            if done == 0:
                continue
            self.children.discard(pid)
            if self.spare == pid:  # died before the router took it (or as it did)
                self.spare = None
                self.refill_at = time.monotonic() + SPARE_RETRY_S
            if pid in self.unreported:
                self.unreported.discard(pid)
                continue
            code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
            self.reply(ChildExited(pid, code))

    def on_requests(self) -> bool:
        data = os.read(self.requests, 1 << 20)
        if not data:
            return False
        self.buffer += data
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            if not line.strip():
                continue
            try:
                request = decode_line(line)
            except MessageError:
                logger.warning("unreadable request to the fork server dropped")
                continue
            if isinstance(request, SpareTaken):
                self.taken(request.pid)
            elif isinstance(request, SpawnWorker):
                self.spawn(request, line + b"\n")
            else:
                logger.warning("unexpected record to the fork server", extra={"type": request.type})
        return True

    def serve(self) -> None:
        signal.set_wakeup_fd(self.wakeup_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        selector = selectors.DefaultSelector()
        selector.register(self.requests, selectors.EVENT_READ, "requests")
        selector.register(self.wakeup_r, selectors.EVENT_READ, "sigchld")
        self.refill()
        running = True
        while running:
            due = max(0.0, self.refill_at - time.monotonic())
            timeout = None if self.spare is not None else due
            for key, _ in selector.select(timeout):
                if key.data == "sigchld":
                    while True:
                        try:
                            if not os.read(self.wakeup_r, 512):
                                break
                        except BlockingIOError:
                            break
                    self.reap()
                elif not self.on_requests():
                    running = False
            if running:
                self.refill()
        for pid in list(self.children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)


def _warm_caches() -> None:
    """Do once here what every worker would otherwise do at start (children inherit it)."""
    shipped_rules()  # ~3 ms: the shipped screen rules, parsed and compiled
    for shell in ("bash", "zsh", "fish"):
        launch_spec(shell, os.environ)  # ~1 ms for bash: reads the binary for SYS_BASHRC
    if os.environ.pop(PRELOAD_SSH_VAR, "") == "1":
        import asyncssh  # noqa: F401 (~0.1 s an SSH pane's worker would spend at its start)


def main() -> None:
    proctree.set_parent_death_signal(signal.SIGTERM)
    fdlimit.restore_soft_limit()  # pane workers and shells get the limit the user had
    # argv: the runtime log (workers inherit the open handler), the router's endpoint, the fd
    # of the spares channel (a Unix socket the router passed)
    log_path, endpoint, channel_fd = sys.argv[1:4]
    startup.configure_logging(log_path)
    injection.install(injection.FORKSERVER)
    channel = socket.socket(fileno=int(channel_fd))
    _warm_caches()
    gc.collect()
    gc.freeze()
    ForkServer(endpoint, channel).serve()


if __name__ == "__main__":
    main()
