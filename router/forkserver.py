"""The router's side of the fork server (workers/forkserver.py): spawn pane workers fast.

The server offers each spare it forks over the spares channel (a Unix socket): the spare's pid
and the write end of its config pipe. A new pane's config goes straight to a spare held here,
and the server hears afterwards that it was taken; with no spare at hand the config goes to
the server, which forks a child for it and answers with its pid. Requests and replies are the
typed records of pebrel/messages/forkserver.py, JSON lines on the server's stdin/stdout;
replies are read without blocking the loop. A new worker writes its own report (its shell's
pid) to the same stdout pipe, so a spawn resolves from its pid and the worker's ``shell_pid``.
The server also reports every child's exit status, which is how the router learns that a
worker died (workers are the fork server's children, not the router's), and that a spare it
holds is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import socket
import subprocess
from collections.abc import Callable
from typing import Any, NamedTuple

from pebrel import entrypoints, fdlimit, proctree
from pebrel.datadir import open_log
from pebrel.entrypoints import module_argv
from pebrel.errors import ErrorCode, PebrelError
from pebrel.messages import MessageError
from pebrel.messages.forkserver import (
    PRELOAD_SSH_VAR,
    ChildExited,
    ForkFailed,
    ForkRecord,
    ShellReported,
    SpareOffered,
    SpareTaken,
    SpawnWorker,
    WorkerForked,
    decode_line,
    encode_line,
)
from pebrel.runtimelock import shell_key_file

logger = logging.getLogger(__name__)

#: Received descriptors are close-on-exec from the start where the platform can say so.
_CLOEXEC = getattr(socket, "MSG_CMSG_CLOEXEC", 0)

SPAWN_TIMEOUT_S = 10.0
REPORT_TIMEOUT_S = 2.0
#: How long the loop waits for the fork server's exit status once its pipe closed.
EXIT_STATUS_WAIT_S = 0.5
"""How long a spawn waits for the new worker's report before answering without its shell."""


class SpawnReply(NamedTuple):
    """A forked worker; ``shell_pid`` is None if it did not report a running shell."""

    pid: int
    shell_pid: int | None
    integrated: bool
    #: The worker already exited (its exit line came while the spawn was in flight).
    exited: bool = False
    returncode: int | None = None


class _Spawn:
    """One spawn in flight: the server's pid line and the worker's report, in either order."""

    def __init__(self, fut: asyncio.Future[SpawnReply]) -> None:
        self.fut = fut
        self.pid: int | None = None
        self.report: ShellReported | None = None
        self.exited = False
        self.returncode: int | None = None

    def forked(self, pid: int) -> None:
        """Its worker's pid (the fork server's line, or the spare it went to); the worker's
        report has REPORT_TIMEOUT_S from now."""
        self.pid = pid
        self.try_answer()
        if not self.fut.done():
            asyncio.get_running_loop().call_later(REPORT_TIMEOUT_S, self.give_up)

    def reported(self, report: ShellReported) -> None:
        self.report = report
        self.try_answer()

    def try_answer(self) -> None:
        """Answer once both lines are in."""
        if self.pid is None or self.report is None or self.fut.done():
            return
        self.fut.set_result(SpawnReply(self.pid, self.report.shell_pid, self.report.integrated))

    def time_out(self) -> None:
        if not self.fut.done():
            self.fut.set_exception(TimeoutError("no answer from the fork server in time"))

    def give_up(self) -> None:
        """No report is coming (the worker exited, or took too long): answer without one."""
        if self.pid is not None and not self.fut.done():
            self.fut.set_result(SpawnReply(self.pid, None, False))


class ForkServer:
    def __init__(
        self,
        log_path: str,
        endpoint: str,
        on_exit: Callable[[int, int | None, str | None], None],
        preload_ssh: bool = False,
    ) -> None:
        self.log_path = log_path
        #: settings.toml has SSH profiles: the fork server imports asyncssh for its workers.
        self.preload_ssh = preload_ssh
        self.endpoint = endpoint
        self.on_exit = on_exit
        self.proc: subprocess.Popen[bytes] | None = None
        self.pending: dict[int, _Spawn] = {}
        self.ids = itertools.count(1)
        self.buffer = b""
        self.alive: set[int] = set()
        #: Spares offered by the server: pid -> the write end of its config pipe.
        self.spares: dict[int, int] = {}
        self.channel: socket.socket | None = None
        #: Its stdout is read (until its EOF is handled, in _gone).
        self.reading = False

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def start(self) -> None:
        self._drop_spares()
        self.buffer = b""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            with open_log(self.log_path) as log, proctree.OWN_CHILDREN_LOCK:
                argv = [*module_argv(entrypoints.FORKSERVER), self.log_path, self.endpoint]
                self.proc = subprocess.Popen(
                    [*argv, str(theirs.fileno())],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    close_fds=True,
                    pass_fds=(theirs.fileno(),),
                    start_new_session=True,
                    env={
                        **os.environ,
                        **fdlimit.original_env(),
                        PRELOAD_SSH_VAR: "1" if self.preload_ssh else "",
                    },
                )
                proctree.OWN_CHILDREN.add(self.proc.pid)  # never taken for an orphan
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        loop = asyncio.get_running_loop()
        ours.setblocking(False)
        self.channel = ours
        loop.add_reader(ours.fileno(), self._offered)
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        os.set_blocking(fd, False)
        loop.add_reader(fd, self._readable)
        self.reading = True

    async def spawn(self, config: dict[str, Any]) -> SpawnReply:
        """Fork a pane worker with `config`; return its pid and, once it runs, its shell's."""
        self._running()
        reply, lost = await self._spawn(config, use_spare=True)
        if lost:  # killed as it was taken (its config went with it): fork a worker for it
            logger.warning("a spare died as it was taken; forking a worker for the pane")
            self._running()
            reply, _ = await self._spawn(config, use_spare=False)
        return reply

    def _running(self) -> None:
        """Start the fork server again if it exited (its exit handled first, if not yet)."""
        if self.proc is not None and self.proc.poll() is None:
            return
        if self.proc is not None and self.reading:
            self._gone()  # its pipe's EOF may still be on its way
        logger.warning("fork server not running; starting it again")
        self.start()

    async def _spawn(self, config: dict[str, Any], use_spare: bool) -> tuple[SpawnReply, bool]:
        """One attempt; True with it when the spare it went to died before its first word."""
        request_id = next(self.ids)
        loop = asyncio.get_running_loop()
        spawn = _Spawn(loop.create_future())
        self.pending[request_id] = spawn
        taken: int | None = None
        try:
            line = encode_line(SpawnWorker(request_id, config))
            taken = self._to_spare(line) if use_spare else None
            if taken is None:
                self._write(line)
            else:
                spawn.forked(taken)
            # A timer, not asyncio.wait_for: its task would cost the answer two loop turns.
            timer = loop.call_later(SPAWN_TIMEOUT_S, spawn.time_out)
            try:
                reply = await spawn.fut
            finally:
                timer.cancel()
        except (OSError, TimeoutError) as exc:
            raise PebrelError(
                ErrorCode.ACTION_FAILED, f"could not start a pane worker: {exc}"
            ) from exc
        finally:
            self.pending.pop(request_id, None)
            if taken is not None:  # told once the start is answered: the server forks the
                self._tell(SpareTaken(taken))  # next spare then, not on the same cores now
        if spawn.exited:  # maybe after the answer, before this coroutine resumed
            lost = taken is not None and spawn.report is None
            return reply._replace(exited=True, returncode=spawn.returncode), lost
        self.alive.add(reply.pid)
        return reply, False

    def _write(self, line: bytes) -> None:
        """A line to the fork server's stdin."""
        if self.proc is None or self.proc.stdin is None:
            raise BrokenPipeError("the fork server is not running")
        self.proc.stdin.write(line)
        self.proc.stdin.flush()

    def _tell(self, record: ForkRecord) -> None:
        with contextlib.suppress(OSError, ValueError):  # it exited: its restart forks anew
            self._write(encode_line(record))

    def _offered(self) -> None:
        """Take in the spares the server offers (a pid and its config pipe's write end)."""
        assert self.channel is not None
        while True:
            try:
                data, fds, _, _ = socket.recv_fds(self.channel, 1024, 4, _CLOEXEC)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data, fds = b"", []
            for fd in fds:
                os.set_inheritable(fd, False)
                os.set_blocking(fd, False)  # a spare that does not read never stalls the loop
            if not data and not fds:  # the server's end is closed
                asyncio.get_running_loop().remove_reader(self.channel.fileno())
                return
            try:
                offer = decode_line(data)
            except MessageError:
                offer = None
            if not isinstance(offer, SpareOffered) or len(fds) != 1:
                logger.warning("unreadable spare offer from the fork server")
                for fd in fds:
                    os.close(fd)
                continue
            self.spares[offer.pid] = fds[0]

    def _to_spare(self, line: bytes) -> int | None:
        """Write ``line`` (a pane's config) to a spare; its pid, or None if none took it."""
        while self.spares:
            pid, fd = next(iter(self.spares.items()))  # the oldest: the most warmed up
            del self.spares[pid]
            try:
                written = os.write(fd, line)  # an empty pipe takes 64 KiB at once
            except BlockingIOError:
                written = 0
            except OSError:  # it died unused
                os.close(fd)
                continue
            if written < len(line):
                self._finish_write(fd, memoryview(line)[written:])
            else:
                os.close(fd)
            return pid
        return None

    def _finish_write(self, fd: int, rest: memoryview) -> None:
        """Write the rest of a large config as the spare reads it, off the loop's back."""
        loop = asyncio.get_running_loop()

        def writable() -> None:
            nonlocal rest
            try:
                rest = rest[os.write(fd, rest) :]
            except BlockingIOError:
                return
            except OSError:  # it died: its exit answers the spawn
                rest = rest[:0]
            if not rest:
                loop.remove_writer(fd)
                os.close(fd)

        loop.add_writer(fd, writable)

    def _drop_spares(self) -> None:
        for fd in self.spares.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self.spares.clear()
        if self.channel is not None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self.channel.fileno())
            self.channel.close()
            self.channel = None

    def _readable(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        try:
            data = os.read(self.proc.stdout.fileno(), 1 << 16)
        except BlockingIOError:
            return
        if not data:
            self._gone()
            return
        self.buffer += data
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            try:
                record = decode_line(line)
            except MessageError:
                logger.warning("unreadable line from the fork server")
                continue
            self._handle(record)

    def _handle(self, record: ForkRecord) -> None:
        if isinstance(record, ChildExited):
            self._exited(record)
            return
        if not isinstance(record, ShellReported | WorkerForked | ForkFailed):
            logger.warning("unexpected record from the fork server", extra={"type": record.type})
            return
        spawn = self.pending.get(record.spawn_id)
        if spawn is None:
            return
        if isinstance(record, ShellReported):  # kept even after a give_up: it did report
            spawn.reported(record)
        elif spawn.fut.done():
            return
        elif isinstance(record, WorkerForked):
            spawn.forked(record.pid)
        else:
            spawn.fut.set_exception(
                PebrelError(ErrorCode.ACTION_FAILED, f"fork failed: {record.error}")
            )

    def _exited(self, record: ChildExited) -> None:
        fd = self.spares.pop(record.pid, None)
        if fd is not None:  # a spare that died unused: nobody needs to hear of it
            os.close(fd)
            return
        self.alive.discard(record.pid)
        self._remove_key_file(record.pid)
        self.on_exit(record.pid, record.returncode, None)
        for waiting in self.pending.values():
            if waiting.pid == record.pid:
                waiting.exited, waiting.returncode = True, record.returncode
                waiting.give_up()  # if it died before reporting

    def _remove_key_file(self, pid: int) -> None:
        """The shell key file of a worker that died before its shell's first prompt (its
        worker removes it then, or when it stops; not when it is killed)."""
        path = shell_key_file(self.endpoint, pid)
        if path is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)

    def _gone(self) -> None:
        """The fork server exited: its workers die with it (parent-death signal)."""
        assert self.proc is not None and self.proc.stdout is not None
        self.reading = False
        loop = asyncio.get_running_loop()
        with contextlib.suppress(Exception):
            loop.remove_reader(self.proc.stdout.fileno())
        reason = self._exit_reason()
        logger.error(reason)
        self._drop_spares()
        for pid in list(self.alive):  # they end with it (parent-death signal)
            self.alive.discard(pid)
            self._remove_key_file(pid)
            self.on_exit(pid, None, reason)
        for spawn in self.pending.values():
            if not spawn.fut.done():
                spawn.fut.set_exception(
                    PebrelError(ErrorCode.ACTION_FAILED, "the fork server exited")
                )

    def _exit_reason(self) -> str:
        """What ended the fork server, for the panes that end with it (docs/protocol.md)."""
        assert self.proc is not None
        code = self.proc.poll()
        if code is None:  # its pipe closed as it exited: its status follows at once
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = self.proc.wait(EXIT_STATUS_WAIT_S)
        if code is None:
            return "the fork server closed its pipe"
        if code < 0:
            return f"the fork server exited (killed by signal {-code})"
        return f"the fork server exited (status {code})"

    def close(self) -> None:
        """Stop reading and close its stdin, which ends it (call on the loop's thread)."""
        self._drop_spares()  # they read EOF and exit
        if self.proc is None:
            return
        if self.proc.stdout is not None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self.proc.stdout.fileno())
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()

    def wait(self) -> None:
        """Wait for it to exit (blocking: run it off the loop)."""
        if self.proc is None:
            return
        try:
            self.proc.wait(3)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
