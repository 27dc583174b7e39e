"""The soak's view of the runtime's processes: each process of the data dir sorted into a kind
(router, adapter, fork server, spare, pane worker, shell, other) from the runtime's process
tree, and RSS, USS, open fds and threads measured for each (psutil)."""

from __future__ import annotations

import contextlib
from collections.abc import Collection
from dataclasses import dataclass, field

import psutil

from pebrel import entrypoints
from pebrel.entrypoints import module_argv

MIB = 1024 * 1024
KINDS = ("router", "adapter", "forkserver", "spare", "worker", "shell", "other")


@dataclass
class Usage:
    pid: int
    rss: float  # MiB
    uss: float  # MiB
    fds: int
    threads: int


@dataclass
class Sample:
    """One look at every process of the runtime, by kind; `stable` are the workers of the
    long-lived panes (by worker pid)."""

    t: float
    kinds: dict[str, list[Usage]] = field(default_factory=dict)
    stable: dict[int, Usage] = field(default_factory=dict)

    def one(self, kind: str) -> Usage | None:
        found = self.kinds.get(kind, [])
        return found[0] if len(found) == 1 else None

    def brief(self) -> dict[str, str]:
        """Per kind: count, RSS/USS (mean and max when several), fds and threads."""
        out: dict[str, str] = {}
        for kind in KINDS:
            found = self.kinds.get(kind, [])
            if not found:
                continue
            if len(found) == 1:
                u = found[0]
                out[kind] = f"{u.rss:.1f}/{u.uss:.1f} MiB, {u.fds} fd, {u.threads} thr"
                continue
            n = len(found)
            out[kind] = (
                f"{n}x mean {sum(u.rss for u in found) / n:.1f}/{sum(u.uss for u in found) / n:.1f}"
                f" max {max(u.rss for u in found):.1f}/{max(u.uss for u in found):.1f} MiB, "
                f"fd {sum(u.fds for u in found)} (max {max(u.fds for u in found)}), "
                f"thr {sum(u.threads for u in found)}"
            )
        return out

    def as_json(self) -> dict[str, object]:
        return {
            kind: {
                "count": len(found),
                "pids": [u.pid for u in found],
                "rss_mib": [round(u.rss, 2) for u in found],
                "uss_mib": [round(u.uss, 2) for u in found],
                "fds": [u.fds for u in found],
                "threads": [u.threads for u in found],
            }
            for kind, found in self.kinds.items()
        }


def _started_as(proc: psutil.Process, module: str) -> bool:
    try:
        return bool(proc.cmdline()[1:4] == module_argv(module)[1:])
    except psutil.Error:
        return False


def _usage(proc: psutil.Process) -> Usage | None:
    try:
        with proc.oneshot():
            mem = proc.memory_full_info()
            return Usage(proc.pid, mem.rss / MIB, mem.uss / MIB, proc.num_fds(), proc.num_threads())
    except psutil.Error:
        return None  # it ended meanwhile (a closed pane's worker)


def _live(proc: psutil.Process) -> bool:
    try:
        return bool(proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def _children(proc: psutil.Process) -> list[psutil.Process]:
    """The live children (a worker that exited and is not reaped yet is no spare)."""
    with contextlib.suppress(psutil.Error):
        return [child for child in proc.children() if _live(child)]
    return []


def classify(router_pid: int, shells: Collection[int]) -> dict[str, list[psutil.Process]]:
    """The runtime's processes by kind, from its tree. `shells`: the panes' shell pids (the
    snapshot's `pid`), so a worker is told from the spare even while it runs an exec."""
    kinds: dict[str, list[psutil.Process]] = {kind: [] for kind in KINDS}
    try:
        router = psutil.Process(router_pid)
    except psutil.Error:
        return kinds
    kinds["router"].append(router)
    for child in _children(router):
        if _started_as(child, entrypoints.ADAPTER):
            kinds["adapter"].append(child)
        elif _started_as(child, entrypoints.FORKSERVER):
            kinds["forkserver"].append(child)
            for worker in _children(child):
                below = _children(worker)
                shell = [p for p in below if p.pid in shells]
                kinds["worker" if shell or below else "spare"].append(worker)
                kinds["shell"].extend(shell)
        else:
            kinds["other"].append(child)
    return kinds


def worker_of(shell_pid: int) -> int | None:
    """The pid of the pane worker whose child is `shell_pid`."""
    with contextlib.suppress(psutil.Error):
        return psutil.Process(shell_pid).ppid()
    return None


def take(t: float, router_pid: int, shells: Collection[int], stable: Collection[int]) -> Sample:
    sample = Sample(t)
    for kind, procs in classify(router_pid, shells).items():
        usages = [u for u in (_usage(p) for p in procs) if u is not None]
        sample.kinds[kind] = usages
        if kind == "worker":
            sample.stable = {u.pid: u for u in usages if u.pid in stable}
    return sample
