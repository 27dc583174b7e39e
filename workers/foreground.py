"""Which program owns a pane's terminal, and whether it is a known AI CLI.

The worker polls the PTY's foreground process group (tcgetpgrp) and hands it to
:class:`ForegroundTracker`. While the shell itself is in the foreground nothing else is read.
When another group takes the terminal, its processes are classified once: the group leader
first, then its descendants, then the shell's other children in the same group (the later
parts of a pipeline), each checked with :func:`pebrel.agentkinds.describe` on its cmdline; the
first one that is an AI CLI wins (a wrapper before the program it starts). While the group
holds the terminal, a recognised agent is re-checked every ``RECHECK_S`` by re-reading two
cmdlines (to catch `exec`), an unrecognised group by classifying it again (to catch wrappers
that start the real CLI as a child). Only a few small /proc files are read per check.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections import deque
from dataclasses import dataclass
from typing import Protocol

from pebrel.agentkinds import describe

logger = logging.getLogger(__name__)

RECHECK_S = 0.5
#: How long a group leader that is still an un-exec'd fork of the shell is re-checked each poll.
SETTLE_S = 1.0
MAX_CANDIDATES = 32


@dataclass(frozen=True, slots=True)
class Foreground:
    shell_in_foreground: bool
    pgid: int
    agent_kind: str | None
    program: str  # "" while the shell has the terminal


class ProcSource(Protocol):
    def pgrp(self, pid: int) -> int | None: ...
    def cmdline(self, pid: int) -> list[str] | None: ...
    def children(self, pid: int) -> list[int]: ...


class ProcFs:
    """Reads the few /proc files the tracker needs; every method tolerates vanished processes."""

    def __init__(self, root: str = "/proc") -> None:
        self.root = root

    def pgrp(self, pid: int) -> int | None:
        try:
            with open(f"{self.root}/{pid}/stat", "rb") as f:
                stat = f.read()
            # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
            return int(stat[stat.rindex(b")") + 2 :].split()[2])
        except (OSError, ValueError, IndexError):
            return None

    def cmdline(self, pid: int) -> list[str] | None:
        """argv, or [comm] for a process without one (a zombie); None when it is gone."""
        try:
            with open(f"{self.root}/{pid}/cmdline", "rb") as f:
                raw = f.read()
            if not raw:
                with open(f"{self.root}/{pid}/comm", "rb") as f:
                    raw = f.read().rstrip(b"\n")
        except OSError:
            return None
        return [part.decode("utf-8", "surrogateescape") for part in raw.rstrip(b"\0").split(b"\0")]

    def children(self, pid: int) -> list[int]:
        found: list[int] = []
        try:
            tids = os.listdir(f"{self.root}/{pid}/task")
        except OSError:
            return found
        for tid in tids:
            try:
                with open(f"{self.root}/{pid}/task/{tid}/children", "rb") as f:
                    found.extend(int(child) for child in f.read().split())
            except FileNotFoundError:
                return _children_slow(pid)  # a kernel without CONFIG_PROC_CHILDREN
            except (OSError, ValueError):
                continue
        return found


def _children_slow(pid: int) -> list[int]:
    import psutil  # only on kernels without /proc/PID/task/TID/children

    with contextlib.suppress(psutil.Error):
        return [child.pid for child in psutil.Process(pid).children()]
    return []


def group_members(source: ProcSource, pgid: int, shell_pid: int) -> list[int]:
    """Processes of group `pgid`: the leader, its descendants, then the shell's other children."""
    members: list[int] = []
    seen: set[int] = set()
    queue: deque[int] = deque([pgid])
    queue.extend(source.children(shell_pid))
    while queue and len(members) < MAX_CANDIDATES:
        pid = queue.popleft()
        if pid in seen or pid == shell_pid:
            continue
        seen.add(pid)
        if source.pgrp(pid) != pgid:
            continue
        members.append(pid)
        # Descendants of this member come before the shell's next child (pipeline siblings).
        queue.extendleft(reversed(source.children(pid)))
    return members


class ForegroundTracker:
    """Turns foreground-group polls into Foreground facts, reporting only changes."""

    def __init__(self, shell_pid: int, source: ProcSource | None = None) -> None:
        self.shell_pid = shell_pid
        self.source: ProcSource = source if source is not None else ProcFs()
        self.current = Foreground(True, shell_pid, None, "")
        self._since = 0.0  # when the current group took the terminal
        self._next_check = 0.0
        self._leader_cmd: list[str] | None = None
        self._chosen: int | None = None
        self._chosen_cmd: list[str] | None = None
        self._shell_cmd: list[str] | None = self.source.cmdline(shell_pid)
        #: Set while the shell runs a command (OSC 133 C seen, no D yet): the only time the
        #: shell process itself can have been replaced by `exec program`.
        self.exec_watch = False

    def update(self, pgid: int, now: float) -> Foreground | None:
        """Take one poll of the foreground group; the new Foreground if anything changed."""
        if pgid == self.shell_pid:
            if self.exec_watch:
                replaced = self._exec_replaced(now)
                if replaced is not None:
                    return self._set(replaced)
                if not self.current.shell_in_foreground and self.current.pgid == pgid:
                    return None  # still the program that replaced the shell
            if self.current.shell_in_foreground:
                return None  # the idle fast path: no /proc reads, no allocation
            self._chosen = None
            return self._set(Foreground(True, pgid, None, ""))
        if self.current.shell_in_foreground or pgid != self.current.pgid:
            self._since = now
            return self._classify(pgid, now)
        if now < self._next_check:
            return None
        if self.current.agent_kind is not None and self._unchanged(pgid):
            self._next_check = now + RECHECK_S
            return None
        return self._classify(pgid, now)

    def _exec_replaced(self, now: float) -> Foreground | None:
        """`exec claude` in the shell: the shell's own process now runs the agent."""
        if now < self._next_check:
            return None
        self._next_check = now + RECHECK_S
        cmd = self.source.cmdline(self.shell_pid)
        if not cmd or cmd == self._shell_cmd:
            return None
        kind, program = describe(cmd)
        if kind is None:
            return None
        return Foreground(False, self.shell_pid, kind, program)

    def _unchanged(self, pgid: int) -> bool:
        if self.source.cmdline(pgid) != self._leader_cmd:
            return False
        return self._chosen in (None, pgid) or self.source.cmdline(self._chosen) == self._chosen_cmd

    def _classify(self, pgid: int, now: float) -> Foreground | None:
        source = self.source
        kind: str | None = None
        program = ""
        chosen: int | None = None
        chosen_cmd: list[str] | None = None
        for pid in group_members(source, pgid, self.shell_pid):
            cmd = source.cmdline(pid)
            if not cmd:
                continue
            pid_kind, pid_program = describe(cmd)
            if chosen is None or pid_kind is not None:
                chosen, chosen_cmd, program = pid, cmd, pid_program
            if pid_kind is not None:
                kind = pid_kind
                break
        self._leader_cmd = source.cmdline(pgid)
        self._chosen, self._chosen_cmd = chosen, chosen_cmd
        self._next_check = now + RECHECK_S
        if kind is None and self._leader_cmd is not None and now - self._since < SETTLE_S:
            if self._shell_cmd is None:
                self._shell_cmd = source.cmdline(self.shell_pid)
            if self._leader_cmd == self._shell_cmd:
                self._next_check = now  # forked, not yet exec'd: look again next poll
        return self._set(Foreground(False, pgid, kind, program))

    def _set(self, new: Foreground) -> Foreground | None:
        if new == self.current:
            return None
        self.current = new
        logger.debug(
            "foreground changed",
            extra={"pgid": new.pgid, "agent_kind": new.agent_kind, "program": new.program},
        )
        return new
