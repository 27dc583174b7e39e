"""Leftovers of execs: finding and killing them, and reaping what re-parents to the worker.

An exec's leftover is a live descendant of the pane worker that is in the exec child's
session or carries its `PEBREL_EXEC_ID` marker in its environment (`setsid` leaves the
session but keeps the environment; `nohup` keeps both). Scanning reads /proc, so the exec
runner calls `kill_leftovers` in a thread. The worker is a child subreaper, so killed
leftovers and escapees become its zombies: `OrphanReaper` waits for those by pid on
SIGCHLD, never for -1, and never for the shell or an exec child asyncio is watching.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from dataclasses import dataclass

logger = logging.getLogger(__name__)

EXEC_ID_ENV = "PEBREL_EXEC_ID"
#: Bound on the kill-until-none-remain loop (processes may fork while we kill).
KILL_LOOP_S = 2.0


# ---- /proc scanning (runs in a thread) -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Stat:
    state: bytes
    ppid: int
    session: int


def _stat(pid: int) -> _Stat | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        return _Stat(fields[0], int(fields[1]), int(fields[3]))
    except (IndexError, ValueError):
        return None


def _process_table() -> dict[int, _Stat]:
    table: dict[int, _Stat] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            found = _stat(int(name))
            if found is not None:
                table[int(name)] = found
    return table


_scan_lock = threading.Lock()
_last_scan: tuple[float, dict[int, _Stat]] | None = None


def _table_since(not_before: float) -> dict[int, _Stat]:
    """A process table read no earlier than `not_before` (monotonic seconds).

    Many execs that end together (32 concurrent `true`) share one scan: a scan that started
    after an exec's child exited sees every leftover of it that is still alive.
    """
    global _last_scan
    with _scan_lock:
        if _last_scan is not None and _last_scan[0] >= not_before:
            return _last_scan[1]
        started = time.monotonic()
        table = _process_table()
        _last_scan = (started, table)
        return table


def _descendants(table: dict[int, _Stat], root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, st in table.items():
        children.setdefault(st.ppid, []).append(pid)
    found: list[int] = []
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def _carries(pid: int, entry: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return entry in handle.read().split(b"\0")
    except OSError:
        return False


def find_leftovers(
    session: int, marker: bytes, shell_pid: int, not_before: float | None = None
) -> list[int]:
    """Live descendants of this worker in `session` or carrying the exec marker.

    Processes of the shell's session are skipped without reading their environment: an
    exec's processes can leave its session only for a new one, never join the shell's.
    `not_before` (when the exec's child was seen to exit) lets concurrent callers share a scan.
    """
    table = _table_since(time.monotonic() if not_before is None else not_before)
    shell = table.get(shell_pid)
    shell_session = shell.session if shell is not None else -1
    entry = EXEC_ID_ENV.encode() + b"=" + marker
    found = []
    for pid in _descendants(table, os.getpid()):
        st = table[pid]
        if st.state == b"Z" or pid == shell_pid or st.session == shell_session:
            continue
        if st.session == session or _carries(pid, entry):
            found.append(pid)
    return found


def kill_leftovers(
    session: int, marker: bytes, shell_pid: int, exited_at: float | None = None
) -> int:
    """SIGKILL every leftover of one exec until none remain; return how many were signalled.

    Repeats because a process may fork while we kill. Reaping is left to `OrphanReaper` (the
    killed processes re-parent to the worker) and to asyncio (the exec child itself).
    """
    total = 0
    deadline = time.monotonic() + KILL_LOOP_S
    not_before = exited_at
    while time.monotonic() < deadline:
        found = find_leftovers(session, marker, shell_pid, not_before)
        not_before = None  # after a kill, only a fresh scan will do
        if not found:
            break
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        total += len(found)
        time.sleep(0.005)
    if total:
        logger.info("exec leftovers killed", extra={"session": session, "count": total})
    return total


# ---- reaping -------------------------------------------------------------------------------


class ExecChildren:
    """The exec children asyncio waits for: their exit statuses are not the reaper's to take.

    asyncio forks a child and registers it with its own child watcher in one step of the loop,
    but the runner learns its pid only after `subprocess_exec` returns. While a spawn is in
    flight (`spawning`) the reaper stands back entirely, so an exec child that exits at once
    is never reaped before asyncio reads its real exit status. No asyncio child-watcher API is
    used (deprecated in 3.12, removed in 3.14).
    """

    def __init__(self) -> None:
        self.pids: set[int] = set()
        self.spawning = 0


class OrphanReaper:
    """Reap zombie children of the worker that nobody else waits for, on SIGCHLD.

    The worker is a child subreaper: killed exec leftovers and `setsid`/`nohup` escapees
    re-parent to it and would stay zombies. Only specific pids are waited for, never -1:
    the shell (the worker reaps it) and the exec children asyncio waits for are left alone,
    and no pass runs while an exec is being spawned (see `ExecChildren`). Runs on the loop
    thread. The worker debounces SIGCHLD bursts, since each pass reads /proc.
    """

    def __init__(self, shell_pid: int, execs: ExecChildren) -> None:
        self.shell_pid = shell_pid
        self.execs = execs

    def reap(self) -> int | None:
        """Reap the orphans; None when a spawn is in flight and the pass must come again."""
        if self.execs.spawning:
            return None
        reaped = 0
        me = os.getpid()
        for pid, st in _process_table().items():
            if st.ppid != me or st.state != b"Z":
                continue
            if pid == self.shell_pid or pid in self.execs.pids:
                continue
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
                reaped += 1
        return reaped
