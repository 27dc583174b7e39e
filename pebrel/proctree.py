"""Process-tree control shared by the router and pane workers (never imported by the CLI)."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import ipaddress
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Coroutine
from typing import Any

import psutil

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


async def then_unhook_signal_wakeup(main: Coroutine[Any, Any, None]) -> None:
    """Run a process's main coroutine, then stop signals from writing to its loop's wakeup fd.

    Wrap the coroutine `asyncio.run` (or a Runner) runs. Closing the loop closes that fd (its
    self-pipe) before it removes the loop's signal handlers (CPython 3.11 to 3.13), so a
    signal in between (a SIGCHLD as the pane's processes end, a second SIGTERM at a stop) was
    written to a closed fd ("Exception ignored ... Bad file descriptor" in runtime.log) or,
    had the number been reused, into another file. Called in the main thread.
    """
    try:
        await main
    finally:
        signal.set_wakeup_fd(-1)


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    return bool(_libc().prctl(option, value, 0, 0, 0) == 0)


#: sched_setattr(2) syscall numbers (glibc has no wrapper).
_SYS_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274, "arm64": 274}
_SCHED_FLAG_RESET_ON_FORK = 0x01
_SCHED_RESET_ON_FORK = 0x40000000  # or-ed into sched_getscheduler()'s answer


class _SchedAttr(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_uint32),
        ("sched_policy", ctypes.c_uint32),
        ("sched_flags", ctypes.c_uint64),
        ("sched_nice", ctypes.c_int32),
        ("sched_priority", ctypes.c_uint32),
        ("sched_runtime", ctypes.c_uint64),
        ("sched_deadline", ctypes.c_uint64),
        ("sched_period", ctypes.c_uint64),
    ]


def request_short_slice(slice_ns: int = 100_000) -> bool:
    """Ask the scheduler for short time slices for the calling thread (Linux >= 6.12, EEVDF).

    For a process that runs for microseconds per message and then sleeps (the router, the
    frontend adapter): with every core busy (pane workers ingesting a flood), a waking
    short-slice task gets an earlier deadline and preempts at once instead of waiting out a
    busy task's slice. Same policy (kept), same nice, no privilege needed; children get
    the default slice back (reset-on-fork). Older kernels ignore the request; False where the
    call is not available.
    """
    return _set_slice(slice_ns)


def request_default_slice() -> bool:
    """Go back to the scheduler's default time slice (after :func:`request_short_slice`)."""
    return _set_slice(0)


def _set_slice(slice_ns: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    number = _SYS_SCHED_SETATTR.get(os.uname().machine)
    if number is None:
        return False
    attr = _SchedAttr(
        size=ctypes.sizeof(_SchedAttr),
        # The policy it has (SCHED_FLAG_KEEP_POLICY would also drop reset-on-fork).
        sched_policy=os.sched_getscheduler(0) & ~_SCHED_RESET_ON_FORK,
        sched_flags=_SCHED_FLAG_RESET_ON_FORK,
        sched_nice=os.getpriority(os.PRIO_PROCESS, 0),
        sched_runtime=slice_ns,
    )
    return bool(_libc().syscall(number, 0, ctypes.byref(attr), 0) == 0)


def set_child_subreaper() -> bool:
    """Orphaned descendants (nohup, setsid, disown) re-parent to us, so we can end them."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def set_parent_death_signal(sig: int = signal.SIGTERM) -> bool:
    return _prctl(_PR_SET_PDEATHSIG, int(sig))


#: Children this process started itself. A subreaper that ends the orphans it inherits must
#: never take one of these for an orphan: starting one and registering it happen under the
#: same lock as the orphan scan.
OWN_CHILDREN: set[int] = set()
OWN_CHILDREN_LOCK = threading.Lock()


def own_child(pid: int) -> None:
    with OWN_CHILDREN_LOCK:
        OWN_CHILDREN.add(pid)


def forget_child(pid: int) -> None:
    with OWN_CHILDREN_LOCK:
        OWN_CHILDREN.discard(pid)


def run_owned(
    argv: list[str], timeout_s: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """subprocess.run for a short helper command (git, say), registered as our own child.

    Raises subprocess.TimeoutExpired after killing the command, like subprocess.run.
    """
    with OWN_CHILDREN_LOCK:
        proc = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        OWN_CHILDREN.add(proc.pid)
    try:
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)
    finally:
        forget_child(proc.pid)


def descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def kill_processes(procs: list[psutil.Process]) -> None:
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.send_signal(signal.SIGKILL)


def kill_descendants(pid: int = 0) -> int:
    """SIGKILL every descendant of `pid` (default: this process), repeatedly until none remain.

    Repeats because a dying process's children re-parent to us (subreaper) after we listed them.
    Reaps only our own direct children, by pid. Returns how many processes were signalled.
    """
    me = pid or os.getpid()
    total = 0
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        procs = descendants(me)
        if not procs:
            break
        kill_processes(procs)
        total += len(procs)
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                if proc.ppid() == os.getpid():
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(proc.pid, 0)
        live = [p for p in descendants(me) if _alive(p)]
        if not live:
            # Zombies that are not our children belong to someone else to reap.
            break
        time.sleep(0.01)
    return total


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


_LOOPBACK = ipaddress.ip_address("127.0.0.1")


def _proc_address(field: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]:
    """An address of /proc/net/tcp{,6}: hex words in host byte order, then the hex port."""
    host, _, port = field.partition(":")
    raw = b"".join(
        int(host[i : i + 8], 16).to_bytes(4, sys.byteorder) for i in range(0, len(host), 8)
    )
    address = ipaddress.ip_address(raw)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address, int(port, 16)


def tcp_peer_pids(client_port: int, server_port: int) -> set[int]:
    """The processes holding the client end of a loopback TCP connection (#16).

    The connection is 127.0.0.1:`client_port` -> 127.0.0.1:`server_port` (the frontend
    adapter's listening port), seen from the server side. Its client socket's inode is found in
    /proc/net/tcp (or tcp6, for a dual-stack socket), then every process with a file
    descriptor on that inode (several after a fork). Empty when the connection is gone or the
    holder cannot be seen (another user's process, another network namespace). Reads /proc
    only: blocking, so callers run it off their event loop.
    """
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as handle:
                rows = handle.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) < 10 or fields[9] == "0":
                continue
            local, remote = _proc_address(fields[1]), _proc_address(fields[2])
            if local == (_LOOPBACK, client_port) and remote == (_LOOPBACK, server_port):
                inodes.add(fields[9])
    if not inodes:
        return set()
    wanted = {f"socket:[{inode}]" for inode in inodes}
    holders: set[int] = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fds = os.scandir(f"/proc/{entry.name}/fd")
        except OSError:
            continue
        with fds:
            for fd in fds:
                try:
                    if os.readlink(fd.path) in wanted:
                        holders.add(int(entry.name))
                        break
                except OSError:
                    continue
    return holders
