"""The under-load phase's state and its flood: `Load` (the rows, the idle panes, the flood file
and what the turns saw), the preparation of the flood file and of each side's idle 17th pane,
and the flood's processes: finding its `cat`s, waiting until they all run, and after a turn
until none is left and the side is idle again; with the CPU and memory they use."""

from __future__ import annotations

import contextlib
import functools
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import psutil

from bench import data
from bench.harness import Bench
from bench.pebrel_side import PebrelPane
from bench.run import MIB, Run, log, poll_text
from bench.stats import Row
from bench.tmux_side import TmuxPane

#: Every line of `data.plain_text` has it: a flooded screen always shows it.
FLOOD_NEEDLE = "pid="
#: The idle pane shows `data.screenful()`.
SCREEN_NEEDLE = "22 xxx"
#: A side is idle again once its processes use less than this many cores.
IDLE_CORES = 0.15


class Flood(Protocol):
    """What the flood's helpers need of a phase's state (`Load`, or bench/load_many.py's)."""

    @property
    def path(self) -> Path: ...

    @property
    def tmux_server(self) -> int: ...

    def problem(self, text: str) -> None: ...


@dataclass
class Load:
    """The phase's state: its rows, the idle panes, the flood file, and what the turns saw."""

    run: Run
    read_idle: Row
    read_flood: Row
    read_idle_new: Row
    read_flood_new: Row
    snapshot: Row
    exec_row: Row
    path: Path
    idle_p: PebrelPane | None = None
    idle_t: TmuxPane | None = None
    tmux_server: int = 0
    reasons: dict[str, Counter[str]] = field(default_factory=dict)  # by row key
    turns: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    exec_correct: list[int] = field(default_factory=list)

    @property
    def bench(self) -> Bench:
        return self.run.bench

    def rows(self) -> list[Row]:
        return [
            self.read_idle,
            self.read_flood,
            self.read_idle_new,
            self.read_flood_new,
            self.snapshot,
            self.exec_row,
        ]

    def failure(self, rows: list[Row], reason: str) -> None:
        for row in rows:
            self.reasons.setdefault(row.key, Counter())[reason] += 1

    def problem(self, text: str) -> None:
        self.problems.append(text)
        log(f"  {text}")


def _loop_command(path: Path) -> str:
    return f"while :; do cat {path}; done"


# --------------------------------------------------------------------------- processes


def _cats(path: Path) -> list[psutil.Process]:
    """The live `cat FILE` processes of the flood (of whichever side is flooding)."""
    wanted = ["cat", str(path)]
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        with contextlib.suppress(psutil.Error):
            if proc.info["cmdline"] == wanted and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
    return found


def _cpu_seconds(proc: psutil.Process) -> float | None:
    try:
        times = proc.cpu_times()
    except psutil.Error:
        return None
    return float(times.user + times.system)


def _busy_cores(procs: list[psutil.Process], window_s: float = 0.3) -> float:
    """Cores the processes used over `window_s` (those alive at both ends)."""
    before = [(proc, _cpu_seconds(proc)) for proc in procs]
    time.sleep(window_s)
    used = 0.0
    for proc, start in before:
        end = _cpu_seconds(proc)
        if start is not None and end is not None:
            used += end - start
    return used / window_s


def _uss_mib(procs: list[psutil.Process]) -> float:
    total = 0.0
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            total += proc.memory_full_info().uss
    return total / MIB


def _tmux_processes(load: Flood) -> list[psutil.Process]:
    try:
        server = psutil.Process(load.tmux_server)
        return [server, *server.children(recursive=True)]
    except psutil.Error:
        return []


def _wait_for_cats(load: Flood, who: str, count: int) -> int:
    """Until `count` `cat`s of the file run at once (10 s); return the most seen."""
    end = time.monotonic() + 10.0
    most = 0
    while time.monotonic() < end:
        most = max(most, len(_cats(load.path)))
        if most >= count:
            return most
        time.sleep(0.05)
    load.problem(f"{who}: at most {most} of {count} flooding `cat`s seen at once")
    return most


def _wait_quiet(load: Flood, who: str, processes: Callable[[], list[psutil.Process]]) -> None:
    """After a turn: no `cat` of the file left, and the side's processes idle again."""
    end = time.monotonic() + 20.0
    while cats := _cats(load.path):
        if time.monotonic() > end:
            load.problem(
                f"{who}: {len(cats)} `cat` processes outlived their closed panes by 20 s "
                f"(pids {', '.join(str(p.pid) for p in cats)}); killed by pid"
            )
            for proc in cats:
                with contextlib.suppress(psutil.Error):
                    proc.kill()
            break
        time.sleep(0.1)
    end = time.monotonic() + 30.0
    while True:
        cores = _busy_cores(processes())
        if cores < IDLE_CORES:
            return
        if time.monotonic() > end:
            load.problem(f"{who}: still using {cores:.2f} cores 30 s after the flood was closed")
            return


def _prepare(load: Load, screen: Path) -> bool:
    """The flood file, and the idle 17th pane of each side showing a known screen."""
    b, cfg = load.bench, load.run.config
    load.path.write_bytes(data.plain_text(cfg.load_bytes))
    screen.write_bytes(data.screenful())
    load.tmux_server = b.tmux.server_pid()
    load.idle_p = b.pebrel.new_window()
    b.pebrel.run(load.idle_p, f"clear; cat {screen}")
    load.idle_t = b.tmux.new_window()
    b.tmux.run_and_wait(load.idle_t, f"clear; cat {screen}")
    idle_p, idle_t = load.idle_p, load.idle_t
    poll_text(lambda: b.pebrel.read(idle_p, 24), SCREEN_NEEDLE)
    poll_text(lambda: b.tmux.capture(idle_t), SCREEN_NEEDLE)
    return True


def _flood_tmux(
    b: Bench, count: int, path: Path, windows: list[str], lap: Callable[[], None]
) -> list[TmuxPane]:
    """Open ``count`` tmux windows (their ids go to ``windows`` as they open, for the turn's
    clean-up), call ``lap`` once they are open, type the flood's loop into each and wait until
    each shows the flood's text; the flooded panes."""
    flooded: list[TmuxPane] = []
    for _ in range(count):
        pane = b.tmux.new_window()
        windows.append(pane.window_id)
        flooded.append(pane)
    lap()
    for pane in flooded:
        b.tmux.send(pane, _loop_command(path))
    for pane in flooded:
        poll_text(functools.partial(b.tmux.capture, pane), FLOOD_NEEDLE)
    return flooded
