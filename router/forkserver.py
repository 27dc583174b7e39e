"""The router's side of the fork server (workers/forkserver.py): spawn pane workers fast.

Requests and replies are JSON lines on the server's stdin/stdout; replies are read without
blocking the loop. A new worker writes its own report (its shell's pid) to the same stdout
pipe, so a spawn resolves from two lines: the server's ``pid`` and the worker's ``shell_pid``.
The server also reports every worker's exit status, which is how the router learns that a
worker died (workers are the fork server's children, not the router's).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any, NamedTuple

from pebrel import proctree
from pebrel.errors import ErrorCode, PebrelError

logger = logging.getLogger(__name__)

SPAWN_TIMEOUT_S = 10.0
REPORT_TIMEOUT_S = 2.0
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
        self.report: dict[str, Any] | None = None
        self.exited = False
        self.returncode: int | None = None

    def reported(self, report: dict[str, Any]) -> None:
        self.report = report
        self.try_answer()

    def try_answer(self) -> None:
        """Answer once both lines are in."""
        if self.pid is None or self.report is None or self.fut.done():
            return
        shell_pid = self.report.get("shell_pid")
        self.fut.set_result(
            SpawnReply(
                self.pid,
                None if shell_pid is None else int(shell_pid),
                bool(self.report.get("integrated")),
            )
        )

    def give_up(self) -> None:
        """No report is coming (the worker exited, or took too long): answer without one."""
        if self.pid is not None and not self.fut.done():
            self.fut.set_result(SpawnReply(self.pid, None, False))


class ForkServer:
    def __init__(
        self, log_path: str, endpoint: str, on_exit: Callable[[int, int | None], None]
    ) -> None:
        self.log_path = log_path
        self.endpoint = endpoint
        self.on_exit = on_exit
        self.proc: subprocess.Popen[bytes] | None = None
        self.pending: dict[int, _Spawn] = {}
        self.ids = itertools.count(1)
        self.buffer = b""
        self.alive: set[int] = set()

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def start(self) -> None:
        with open(self.log_path, "ab") as log, proctree.OWN_CHILDREN_LOCK:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "workers.forkserver", self.log_path, self.endpoint],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                close_fds=True,
                start_new_session=True,
            )
            proctree.OWN_CHILDREN.add(self.proc.pid)  # never taken for an orphan
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        os.set_blocking(fd, False)
        asyncio.get_running_loop().add_reader(fd, self._readable)

    async def spawn(self, config: dict[str, Any]) -> SpawnReply:
        """Fork a pane worker with `config`; return its pid and, once it runs, its shell's."""
        if self.proc is None or self.proc.poll() is not None:
            logger.warning("fork server not running; starting it again")
            self.start()
        assert self.proc is not None and self.proc.stdin is not None
        request_id = next(self.ids)
        spawn = _Spawn(asyncio.get_running_loop().create_future())
        self.pending[request_id] = spawn
        try:
            line = json.dumps({"id": request_id, "config": config}).encode() + b"\n"
            self.proc.stdin.write(line)
            self.proc.stdin.flush()
            reply = await asyncio.wait_for(spawn.fut, SPAWN_TIMEOUT_S)
        except (OSError, TimeoutError) as exc:
            raise PebrelError(
                ErrorCode.ACTION_FAILED, f"could not start a pane worker: {exc}"
            ) from exc
        finally:
            self.pending.pop(request_id, None)
        if spawn.exited:  # maybe after the answer, before this coroutine resumed
            return reply._replace(exited=True, returncode=spawn.returncode)
        self.alive.add(reply.pid)
        return reply

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
                message = json.loads(line)
            except ValueError:
                logger.warning("unreadable line from the fork server")
                continue
            self._handle(message)

    def _handle(self, message: dict[str, Any]) -> None:
        if "exited" in message:
            pid = int(message["exited"])
            self.alive.discard(pid)
            self.on_exit(pid, message.get("returncode"))
            for waiting in self.pending.values():
                if waiting.pid == pid:
                    waiting.exited, waiting.returncode = True, message.get("returncode")
                    waiting.give_up()  # if it died before reporting
            return
        spawn = self.pending.get(message.get("id", -1))
        if spawn is None or spawn.fut.done():
            return
        if "shell_pid" in message:
            spawn.reported(message)
        elif "pid" in message:
            spawn.pid = int(message["pid"])
            spawn.try_answer()
            if not spawn.fut.done():
                asyncio.get_running_loop().call_later(REPORT_TIMEOUT_S, spawn.give_up)
        else:
            spawn.fut.set_exception(
                PebrelError(ErrorCode.ACTION_FAILED, f"fork failed: {message.get('error')}")
            )

    def _gone(self) -> None:
        """The fork server exited: its workers die with it (parent-death signal)."""
        assert self.proc is not None and self.proc.stdout is not None
        loop = asyncio.get_running_loop()
        with contextlib.suppress(Exception):
            loop.remove_reader(self.proc.stdout.fileno())
        logger.error("the fork server exited", extra={"returncode": self.proc.poll()})
        for pid in list(self.alive):
            self.alive.discard(pid)
            self.on_exit(pid, None)
        for spawn in self.pending.values():
            if not spawn.fut.done():
                spawn.fut.set_exception(
                    PebrelError(ErrorCode.ACTION_FAILED, "the fork server exited")
                )

    def close(self) -> None:
        """Stop reading and close its stdin, which ends it (call on the loop's thread)."""
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
