"""The exec runner of a pane worker (R6.3): argv without a shell, as an independent child.

The child is not on the pane's PTY: stdin is /dev/null, stdout and stderr are pipes drained
concurrently into tail buffers that keep the last `max_output_bytes` of each stream (the end
of a test run is what matters). It runs in its own session with the pane's launch
environment plus `PEBREL_EXEC_ID=<random>`, so the processes it leaves behind can be found
even after `setsid`/`nohup`: those re-parent to the worker (a child subreaper), not to the
child, so "descendants of the child" alone would miss them.

On timeout the child's group and every leftover are killed; on a normal exit the pipes get
`PIPE_GRACE_S` to reach EOF (a leftover may hold them), then leftovers are killed. Finding,
killing and reaping leftovers lives in workers/leftovers.py; it reads /proc, so the runner
calls it in a thread, never on the worker's loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pebrel import messages as m
from pebrel.workers.leftovers import EXEC_ID_ENV, ExecChildren, OrphanReaper, kill_leftovers

logger = logging.getLogger(__name__)

#: After the child exits, how long pipes held open by its leftovers are still read.
PIPE_GRACE_S = 0.2
#: After a kill, how long to wait for the child's exit status before giving up on it.
KILL_WAIT_S = 0.5
#: SIGCHLD bursts (32 execs ending together) are reaped in one pass after this delay.
REAP_DEBOUNCE_S = 0.05


@dataclass(frozen=True, slots=True)
class ExecSpec:
    argv: list[str]
    cwd: str
    env: dict[str, str]
    timeout_s: float
    max_output_bytes: int


@dataclass(frozen=True, slots=True)
class ExecOutcome:
    exit_code: int | None
    signal: int | None
    stdout: bytes
    stderr: bytes
    stdout_total: int
    stderr_total: int
    timed_out: bool
    duration_ms: int
    #: Why the child could not be started (None: it was), and the errno's name if any.
    error: str | None = None
    errno_name: str | None = None


class TailBuffer:
    """The last `limit` bytes of a stream, and how many bytes the stream carried in all."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        self._buf = bytearray()

    def append(self, data: bytes) -> None:
        self.total += len(data)
        self._buf += data
        # Trim only past twice the limit, so a stream of small chunks costs O(n), not O(n^2).
        if len(self._buf) > 2 * self.limit:
            del self._buf[: len(self._buf) - self.limit]

    def tail(self) -> bytes:
        return bytes(self._buf[-self.limit :]) if self._buf else b""


class _Capture(asyncio.SubprocessProtocol):
    """Collects both pipes as they arrive; futures for each pipe's EOF and the child's exit."""

    def __init__(self, loop: asyncio.AbstractEventLoop, limit: int) -> None:
        self.streams = {1: TailBuffer(limit), 2: TailBuffer(limit)}
        self.closed: dict[int, asyncio.Future[None]] = {
            1: loop.create_future(),
            2: loop.create_future(),
        }
        self.exited: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        buf = self.streams.get(fd)
        if buf is not None:
            buf.append(data.encode() if isinstance(data, str) else data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        fut = self.closed.get(fd)
        if fut is not None and not fut.done():
            fut.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


async def _within(futures: Iterable[asyncio.Future[Any]], timeout_s: float) -> bool:
    """Wait for all `futures` at most `timeout_s`; True when they all completed."""
    pending = [f for f in futures if not f.done()]
    if not pending:
        return True
    if timeout_s <= 0:
        return False
    _, still = await asyncio.wait(pending, timeout=timeout_s)
    return not still


def not_started(exc: OSError | ValueError, duration_ms: int) -> ExecOutcome:
    """The outcome of a child that could not be started: the errno's name (``ENOENT``) and
    what went wrong (``No such file or directory: 'x'``); a ValueError counts as EINVAL."""
    if isinstance(exc, OSError) and exc.errno is not None:
        name = errno.errorcode.get(exc.errno, f"E{exc.errno}")
        where = f": {exc.filename!r}" if exc.filename is not None else ""
        error = f"{exc.strerror}{where}"
    else:
        name, error = "EINVAL", str(exc)
    return ExecOutcome(None, None, b"", b"", 0, 0, False, duration_ms, error, name)


class ExecRunner:
    """Runs the execs of one pane worker; `shell_pid` is the pane's shell (never a leftover)."""

    def __init__(self, shell_pid: int) -> None:
        self.shell_pid = shell_pid
        #: Exec children still being run (kept from the reaper; killed by `abandon`).
        self.children = ExecChildren()

    async def run(self, spec: ExecSpec) -> ExecOutcome:
        loop = asyncio.get_running_loop()
        marker = secrets.token_hex(16)
        started = time.monotonic()
        proto = _Capture(loop, spec.max_output_bytes)
        self.children.spawning += 1
        try:
            transport, _ = await loop.subprocess_exec(
                lambda: proto,
                *spec.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=spec.cwd,
                env={**spec.env, EXEC_ID_ENV: marker},
                start_new_session=True,
                close_fds=True,
            )
        except (OSError, ValueError) as exc:
            return not_started(exc, _ms(started))
        else:
            pid = transport.get_pid()
            self.children.pids.add(pid)
        finally:
            self.children.spawning -= 1
        timed_out = False
        exited_at: float | None = None
        try:
            remaining = started + spec.timeout_s - time.monotonic()
            if not await _within([proto.exited], remaining):
                timed_out = True
                logger.info("exec timed out", extra={"pid": pid, "argv0": spec.argv[0]})
                # The child is not reaped yet (its exit would have completed `exited`).
                with contextlib.suppress(OSError):
                    os.killpg(pid, signal.SIGKILL)
                await loop.run_in_executor(
                    None, kill_leftovers, pid, marker.encode(), self.shell_pid
                )
                await _within([proto.exited], KILL_WAIT_S)
            else:
                exited_at = time.monotonic()
                await _within(proto.closed.values(), PIPE_GRACE_S)
            await loop.run_in_executor(
                None, kill_leftovers, pid, marker.encode(), self.shell_pid, exited_at
            )
            code = transport.get_returncode()
        finally:
            self.children.pids.discard(pid)
            transport.close()
        out, err = proto.streams[1], proto.streams[2]
        return ExecOutcome(
            exit_code=code if code is not None and code >= 0 else None,
            signal=-code if code is not None and code < 0 else None,
            stdout=out.tail(),
            stderr=err.tail(),
            stdout_total=out.total,
            stderr_total=err.total,
            timed_out=timed_out,
            duration_ms=_ms(started),
        )

    def abandon(self) -> None:
        """Worker close: kill every running exec's group. The close path reaps them (their
        runs are cancelled: asyncio's watcher finding them gone changes no answer)."""
        for pid in self.children.pids:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
        self.children.pids.clear()


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


# ---- the worker's side of pane.exec ----------------------------------------------------------


def resolve_cwd(
    requested: str | None,
    reported: str | None,
    shell_pid: int,
    shell_in_foreground: bool,
    fallback: str,
) -> str:
    """The exec's cwd: the requested one; else the shell's OSC 7 cwd if it is a directory,
    else the shell process's cwd, else the pane's launch cwd.

    While the shell itself owns the terminal, its process cwd comes first: bash reports OSC 7
    after the command's done mark, so right after `cd` the reported cwd may still be the old
    one. While a program runs in the foreground (a nested shell that reports OSC 7 itself),
    the report is the better guess.
    """
    if requested:
        return requested
    actual: str | None = None
    with contextlib.suppress(OSError):
        actual = os.readlink(f"/proc/{shell_pid}/cwd")
    if actual is not None and not os.path.isdir(actual):
        actual = None  # e.g. "/old/dir (deleted)"
    if shell_in_foreground and actual is not None:
        return actual
    if reported and os.path.isdir(reported):
        return reported
    return actual or fallback


class ExecService:
    """RunExec in, ExecFinished out; owns the child watcher and the orphan reaper."""

    def __init__(
        self,
        shell_pid: int,
        env: dict[str, str],
        send: Callable[[m.Message], None],
    ) -> None:
        self.runner = ExecRunner(shell_pid)
        self.env = env
        self.send = send
        self.tasks: set[asyncio.Task[None]] = set()
        self.reaper: OrphanReaper | None = OrphanReaper(shell_pid, self.runner.children)
        self._reap_pending = False
        self._close_watcher: Callable[[], None] | None = None

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        """SIGCHLD reaping of orphans, and on Python 3.11 asyncio's pidfd child watcher.

        Python 3.11's default watcher starts a thread per child; 3.12+ watch children with
        pidfds on their own (and deprecate, then in 3.14 remove, the watcher API).
        """
        if sys.version_info < (3, 12):
            watcher = asyncio.PidfdChildWatcher()
            watcher.attach_loop(loop)
            asyncio.set_child_watcher(watcher)
            self._close_watcher = watcher.close
        loop.add_signal_handler(signal.SIGCHLD, self._on_sigchld, loop)

    def uninstall(self, loop: asyncio.AbstractEventLoop) -> None:
        """Undo `install` (the fork server's trial worker): no reaping from here on, since a
        SIGCHLD timer left behind would reap children of the real worker later."""
        self.reaper = None
        loop.remove_signal_handler(signal.SIGCHLD)
        if self._close_watcher is not None:  # the real worker's own replaces it
            self._close_watcher()
            self._close_watcher = None

    def _on_sigchld(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._reap_pending or self.reaper is None:
            return
        self._reap_pending = True
        loop.call_later(REAP_DEBOUNCE_S, self._reap, loop)

    def _reap(self, loop: asyncio.AbstractEventLoop) -> None:
        self._reap_pending = False
        if self.reaper is not None and self.reaper.reap() is None:
            self._on_sigchld(loop)  # a spawn in flight: come back after it

    def start(self, message: m.RunExec, cwd: str) -> None:
        task = asyncio.get_running_loop().create_task(self._run(message, cwd))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _run(self, message: m.RunExec, cwd: str) -> None:
        spec = ExecSpec(
            argv=list(message.argv),
            cwd=cwd,
            env=self.env,
            timeout_s=message.timeout_ms / 1000,
            max_output_bytes=message.max_output_bytes,
        )
        try:
            outcome = await self.runner.run(spec)
        except Exception:
            logger.exception("exec runner failed", extra={"argv0": spec.argv[:1]})
            outcome = ExecOutcome(None, None, b"", b"", 0, 0, False, 0, "exec runner failed", "EIO")
        self.send(
            m.ExecFinished(
                request_id=message.request_id,
                exit_code=outcome.exit_code,
                signal=outcome.signal,
                stdout=outcome.stdout,
                stderr=outcome.stderr,
                stdout_total=outcome.stdout_total,
                stderr_total=outcome.stderr_total,
                timed_out=outcome.timed_out,
                duration_ms=outcome.duration_ms,
                cwd=cwd,
                error=outcome.error,
                errno_name=outcome.errno_name,
            )
        )

    def close(self) -> None:
        """Worker close: kill running execs and hand their reaping to the close path."""
        self.runner.abandon()
        for task in self.tasks:
            task.cancel()
