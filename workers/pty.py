"""The PTY backend behind one small interface: spawn, read fd, write, resize, close.

ptyprocess on POSIX gives the child a real controlling terminal (setsid + TIOCSCTTY), so job
control and ctrl-c work. A pywinpty backend would sit behind the same interface on Windows
(not part of this version).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
from dataclasses import dataclass

from ptyprocess import PtyProcess


@dataclass(frozen=True, slots=True)
class ExitStatus:
    exit_code: int | None
    signal: int | None


class PosixPty:
    def __init__(self, argv: list[str], env: dict[str, str], cwd: str, cols: int, rows: int):
        self._proc = PtyProcess.spawn(argv, cwd=cwd, env=env, dimensions=(rows, cols))
        self._proc.delayafterclose = 0
        self._proc.delayafterterminate = 0
        self.fd: int = self._proc.fd
        self.pid: int = self._proc.pid
        os.set_blocking(self.fd, False)

    def read(self, size: int = 65536) -> bytes | None:
        """Bytes available now; b"" when the child side is gone (EIO); None when none yet."""
        try:
            return os.read(self.fd, size)
        except BlockingIOError:
            return None
        except OSError as exc:
            if exc.errno == errno.EIO:
                return b""
            raise

    def write(self, data: bytes) -> int:
        """Write what the kernel takes now; 0 when the PTY is full."""
        try:
            return os.write(self.fd, data)
        except BlockingIOError:
            return 0

    def resize(self, cols: int, rows: int) -> None:
        self._proc.setwinsize(rows, cols)

    def foreground_pgid(self) -> int | None:
        try:
            return os.tcgetpgrp(self.fd)
        except OSError:
            return None

    def reap(self) -> ExitStatus | None:
        """Collect the exit status if the child has exited (never blocks, never waits on -1)."""
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            return ExitStatus(None, None)
        if pid == 0:
            return None
        if os.WIFSIGNALED(status):
            return ExitStatus(None, os.WTERMSIG(status))
        return ExitStatus(os.WEXITSTATUS(status), None)

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self.pid, signal.SIGKILL)

    def close_fd(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)
