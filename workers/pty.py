"""The PTY backend behind one small interface: spawn, read fd, write, resize, close.

The shell gets a real controlling terminal, so job control and ctrl-c work: it is started with
``posix_spawn`` (a vfork-style clone: no copy of the worker's page tables, ~0.5 ms instead of
the 3-4 ms of a fork) as a session leader that opens the PTY's terminal as its stdin, which
makes it the controlling terminal, with stdout and stderr duplicated from it. Signals the
worker ignores (Python ignores SIGPIPE and SIGXFSZ) are reset to their defaults, so
``yes | head -1`` ends quietly as in any terminal. Where ``os.posix_spawn`` is missing,
ptyprocess forks instead. A pywinpty backend would sit behind the same interface on Windows
(not part of this version).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import signal
import struct
import termios
from dataclasses import dataclass
from typing import Protocol

from ptyprocess import PtyProcess

#: The shell is started without a fork (posix_spawn); else ptyprocess forks the worker, which
#: must then hold no ZeroMQ context or thread yet (TRAPS).
SPAWNS_WITHOUT_FORK = hasattr(os, "posix_spawn")

# Dispositions a shell must not inherit from the Python worker.
_RESET_SIGNALS = tuple(
    sig for sig in (signal.SIGPIPE, getattr(signal, "SIGXFSZ", None)) if sig is not None
)


@dataclass(frozen=True, slots=True)
class ExitStatus:
    exit_code: int | None
    signal: int | None
    #: Why the pane ended, when the backend knows better than the status (an SSH pane).
    reason: str | None = None


class Terminal(Protocol):
    """What a pane worker needs of its terminal; PosixPty here, SshPty (workers/ssh.py) for an
    SSH pane, a pywinpty one on Windows would be a third."""

    fd: int  # readable when output (or EOF) is waiting
    pid: int  # the local shell's pid (0: none, an SSH pane)

    def read(self, size: int = 65536) -> bytes | None: ...
    def waiting(self) -> int: ...
    def write(self, data: bytes) -> int: ...
    def resize(self, cols: int, rows: int) -> None: ...
    def foreground_pgid(self) -> int | None: ...
    def reap(self) -> ExitStatus | None: ...
    def kill(self) -> None: ...
    def close_fd(self) -> None: ...


def read_now(fd: int, size: int, eof_errnos: tuple[int, ...]) -> bytes | None:
    """A non-blocking read of a terminal's fd: the bytes there now, None when there are none
    yet, b"" at the end (EOF, or one of ``eof_errnos``: how the backend's fd says it)."""
    try:
        return os.read(fd, size)
    except BlockingIOError:
        return None
    except OSError as exc:
        if exc.errno in eof_errnos:
            return b""
        raise


def waiting_bytes(fd: int) -> int:
    """Bytes waiting to be read on ``fd`` right now (FIONREAD: PTYs and sockets alike)."""
    try:
        raw = fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0")
    except OSError:
        return 0
    return int(struct.unpack("i", raw)[0])


def write_now(fd: int, data: bytes) -> int:
    """Write what the kernel takes now; 0 when the fd is full."""
    try:
        return os.write(fd, data)
    except BlockingIOError:
        return 0


def _set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def _close_on_exec_all() -> None:
    """Make sure no descriptor of the worker leaks into the shell (posix_spawn closes none)."""
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc/self/fd"):
            if int(name) > 2:
                with contextlib.suppress(OSError):
                    os.set_inheritable(int(name), False)


def _spawn(argv: list[str], env: dict[str, str], cwd: str, cols: int, rows: int) -> tuple[int, int]:
    """Start ``argv`` on a new PTY as a session leader; return (master fd, pid)."""
    # posix_spawn has no chdir action: the worker moves to the pane's directory itself (a
    # relative command path then resolves there, as it would after a fork and chdir).
    os.chdir(cwd)
    executable = shutil.which(argv[0], path=env.get("PATH", os.defpath))
    if executable is None:
        raise FileNotFoundError(errno.ENOENT, "command not found", argv[0])
    _close_on_exec_all()
    master, slave = os.openpty()  # both close-on-exec
    try:
        _set_size(slave, cols, rows)
        terminal = os.ttyname(slave)
        pid = os.posix_spawn(
            executable,
            argv,
            env,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, terminal, os.O_RDWR, 0),
                (os.POSIX_SPAWN_DUP2, 0, 1),
                (os.POSIX_SPAWN_DUP2, 0, 2),
            ],
            setsid=True,
            setsigdef=_RESET_SIGNALS,
            setsigmask=(),
        )
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)
    return master, pid


class PosixPty:
    def __init__(self, argv: list[str], env: dict[str, str], cwd: str, cols: int, rows: int):
        self._proc: PtyProcess | None = None  # kept alive: it closes its fd when collected
        if SPAWNS_WITHOUT_FORK:
            self.fd, self.pid = _spawn(argv, env, cwd, cols, rows)
        else:
            self._proc = PtyProcess.spawn(argv, cwd=cwd, env=env, dimensions=(rows, cols))
            self.fd, self.pid = self._proc.fd, self._proc.pid
        os.set_blocking(self.fd, False)

    def read(self, size: int = 65536) -> bytes | None:
        """Bytes available now; b"" when the child side is gone (EIO); None when none yet."""
        return read_now(self.fd, size, (errno.EIO,))

    def waiting(self) -> int:
        """Bytes the terminal holds for us to read right now (FIONREAD)."""
        return waiting_bytes(self.fd)

    def write(self, data: bytes) -> int:
        """Write what the kernel takes now; 0 when the PTY is full."""
        return write_now(self.fd, data)

    def resize(self, cols: int, rows: int) -> None:
        _set_size(self.fd, cols, rows)

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
