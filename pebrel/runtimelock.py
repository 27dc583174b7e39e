"""`runtime.lock`: held (flock) by the router for its whole life, naming it and its ipc dir.

The router writes ``{"pid": ..., "ipc_dir": ...}`` into the lock file once it holds the lock.
That is how `pebrel runtime status|stop` find a runtime that runs but does not answer (its
`runtime.port` says nothing about a process that stopped answering), and how a start or a stop
after a runtime that died without cleaning up (SIGKILL) removes the ZeroMQ ipc dir it left in
the temp dir.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

from pebrel.datadir import RUNTIME_LOCK, open_private

IPC_PREFIX = "pebrel-"
#: The scheme of the router's ZeroMQ endpoint, a socket in the ipc dir.
IPC_SCHEME = "ipc://"


def shell_key_file(endpoint: str, worker_pid: int) -> str | None:
    """Where the pane worker `worker_pid` puts its shell's key file (workers/shellkey.py).

    In the runtime's private ipc dir (0700, the directory of the router's ipc `endpoint`),
    named by the worker's pid: the router removes the file of a worker that died before its
    shell's first prompt (a worker removes its own file then, or when it stops), and the
    runtime's end removes the ipc dir with whatever is in it. None for an endpoint that is not
    in an ipc dir (the key file then goes to the temp dir).
    """
    directory = ipc_dir_of(endpoint)
    return None if directory is None else os.path.join(directory, f"key-{worker_pid}")


def ipc_dir_of(endpoint: str) -> str | None:
    """The runtime's private ipc dir (0700, removed at the runtime's end), from the router's
    ipc `endpoint`; None for an endpoint that is not in one."""
    if not endpoint.startswith(IPC_SCHEME):
        return None
    return os.path.dirname(endpoint[len(IPC_SCHEME) :])


def hold(directory: Path) -> int | None:
    """Open and lock `runtime.lock` for this process; None if another process holds it."""
    fd = open_private(directory / RUNTIME_LOCK, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def read_record(directory: Path) -> dict[str, Any]:
    """What the last router wrote into `runtime.lock` (empty if nothing readable)."""
    try:
        fd = open_private(directory / RUNTIME_LOCK, os.O_RDONLY)
    except OSError:
        return {}
    try:
        raw = os.read(fd, 65536)
    finally:
        os.close(fd)
    try:
        record = json.loads(raw)
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def write_record(fd: int, pid: int, ipc_dir: str) -> None:
    """Name the holder (this router) and its ipc dir in the held lock file."""
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps({"pid": pid, "ipc_dir": ipc_dir}).encode(), 0)


def held(directory: Path) -> bool:
    """Whether a process holds `runtime.lock` (a runtime of this data dir runs)."""
    try:
        fd = open_private(directory / RUNTIME_LOCK, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases a lock we took
    return False


def _has_open(pid: int, path: Path) -> bool:
    """Whether process `pid` has the file at `path` open (Linux's /proc; psutil elsewhere)."""
    try:
        target = os.stat(path)
    except OSError:
        return False
    fd_dir = f"/proc/{pid}/fd"
    if os.path.isdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            for name in os.listdir(fd_dir):
                with contextlib.suppress(OSError):
                    st = os.stat(f"{fd_dir}/{name}")
                    if (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino):
                        return True
        return False
    import psutil

    try:
        return any(os.path.samefile(f.path, path) for f in psutil.Process(pid).open_files())
    except (psutil.Error, OSError):
        return False


def holder(directory: Path, *candidates: int) -> int | None:
    """The pid of the router holding `runtime.lock`, None if no runtime holds it, 0 if one
    does but no candidate (the recorded pid, then `candidates`) is it.

    A pid counts only if that process has the lock file open: a pid recorded by a runtime
    that is gone may name another process by now.
    """
    if not held(directory):
        return None
    recorded = read_record(directory).get("pid")
    pids = [recorded] if isinstance(recorded, int) else []
    for pid in [*pids, *candidates]:
        if pid > 0 and _has_open(pid, directory / RUNTIME_LOCK):
            return pid
    return 0


def remove_ipc_dir(directory: Path) -> bool:
    """Remove the ipc dir the last router recorded, if it is still there; True if it was.

    Only a real directory (not a link) named like Pebrel's and owned by this user is removed.
    Call it only while no router of this data dir runs.
    """
    name = read_record(directory).get("ipc_dir")
    if not isinstance(name, str) or not os.path.basename(name).startswith(IPC_PREFIX):
        return False
    try:
        st = os.lstat(name)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        return False
    shutil.rmtree(name, ignore_errors=True)
    return True
