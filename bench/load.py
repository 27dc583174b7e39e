"""Under load (issue 6 item 6): reads, snapshots and concurrent `pane.exec` while 16 panes flood.

Each side takes its own turn (never both at once: the machine may have two cores). A turn opens
16 more windows of 80x24, types `while :; do cat FILE; done` into each (FILE: generated plain
text, 50 MB), and while they flood, times requests from the persistent clients: a read of a 17th
pane that stays idle, a read of one flooded pane, and the runtime-wide listing. On Pebrel's turn,
bursts of 128 concurrent `pane.exec` with unique outputs follow, next to the asyncio floor under
the same flood. Then the turn closes its windows and waits until no `cat` of the file is left
and the side's processes are idle. The side that goes first alternates across repetitions.

Failures are counted, never dropped: an error envelope, a wrong answer, a lost connection or no
answer within the request deadline. Every request enters the latencies, a timed-out one at its
deadline, so a stall shows in the p99 as well as in the count.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections import Counter
from collections.abc import Callable
from typing import TypeVar

import psutil

from bench.common import deadline
from bench.load_flood import (
    FLOOD_NEEDLE,
    Flood,
    Load,
    _cats,
    _flood_tmux,
    _loop_command,
    _prepare,
    _tmux_processes,
    _uss_mib,
    _wait_for_cats,
    _wait_quiet,
)
from bench.load_probes import _exec_bursts, _measure, _pebrel_probes, _tmux_probes
from bench.pebrel_side import PebrelPane
from bench.run import MB, Run, log, poll_text
from bench.stats import Row

WARMUP_S = 0.5
SETUP_TIMEOUT_S = 300.0

W = TypeVar("W", int, str)  # a window id: Pebrel's int, tmux's "@N"


# --------------------------------------------------------------------------- the two turns


class Stopwatch:
    """The steps of a turn and how long each took (for the progress log)."""

    def __init__(self, who: str, rep: int) -> None:
        self.head = f"{who} turn {rep + 1}"
        self.steps: list[str] = []
        self.last = time.monotonic()

    def lap(self, step: str) -> None:
        now = time.monotonic()
        self.steps.append(f"{step} {now - self.last:.1f} s")
        self.last = now

    def log(self) -> None:
        log(f"  {self.head}: {', '.join(self.steps)}")


def _turn_note(load: Load, who: str, rep: int, timing: tuple[int, float, float], cats: int) -> None:
    cycles, seconds, busy = timing
    load.turns.append(
        f"{who} turn {rep + 1}: {cycles} cycles in {seconds:.1f} s, "
        f"{cats} `cat`s seen at once, CPU {busy:.0f}% busy"
    )


def _end_turn(
    load: Flood,
    watch: Stopwatch,
    who: str,
    close: Callable[[W], None],
    windows: list[W],
    processes: Callable[[], list[psutil.Process]],
) -> None:
    """After a turn: close its windows, then wait until its flood is gone and the side idle."""
    for window_id in windows:
        with contextlib.suppress(Exception), deadline(30.0):
            close(window_id)
    watch.lap("close")
    _wait_quiet(load, who, processes)
    watch.lap("quiet")
    watch.log()


def _pebrel_turn(load: Load, rep: int) -> None:
    b, cfg = load.bench, load.run.config
    windows: list[int] = []
    watch = Stopwatch("Pebrel", rep)
    try:
        with deadline(SETUP_TIMEOUT_S):
            flooded: list[PebrelPane] = []
            for _ in range(cfg.load_panes):
                pane = b.pebrel.new_window()
                windows.append(pane.window_id)
                b.pebrel.ready(pane)
                flooded.append(pane)
            watch.lap("open")
            for pane in flooded:
                b.pebrel.prompt(pane, _loop_command(load.path))
            for pane in flooded:
                poll_text(functools.partial(b.pebrel.read, pane, 5), FLOOD_NEEDLE)
        cats = _wait_for_cats(load, "Pebrel", cfg.load_panes)
        time.sleep(WARMUP_S)
        watch.lap("flood up")
        timing = _measure(load, _pebrel_probes(load, flooded[0]))
        watch.lap("measure")
        _exec_bursts(load, rep)
        watch.lap("exec")
        procs = b.pebrel.processes()
        _turn_note(load, "Pebrel", rep, timing, cats)
        load.turns[-1] += f", {len(procs)} runtime processes, USS {_uss_mib(procs):.0f} MiB"
    finally:
        _end_turn(load, watch, "Pebrel", b.pebrel.close_window, windows, b.pebrel.processes)


def _tmux_turn(load: Load, rep: int) -> None:
    b, cfg = load.bench, load.run.config
    windows: list[str] = []
    watch = Stopwatch("tmux", rep)
    try:
        with deadline(SETUP_TIMEOUT_S):
            flooded = _flood_tmux(b, cfg.load_panes, load.path, windows, lambda: watch.lap("open"))
        cats = _wait_for_cats(load, "tmux", cfg.load_panes)
        time.sleep(WARMUP_S)
        watch.lap("flood up")
        timing = _measure(load, _tmux_probes(load, flooded[0]))
        watch.lap("measure")
        procs = _tmux_processes(load)
        _turn_note(load, "tmux", rep, timing, cats)
        load.turns[-1] += f", server + shells USS {_uss_mib(procs):.0f} MiB"
    finally:
        _end_turn(load, watch, "tmux", b.tmux.kill_window, windows, lambda: _tmux_processes(load))


# --------------------------------------------------------------------------- the phase


def _rows(run: Run) -> Load:
    cfg = run.config
    flood = f"under load ({cfg.load_panes} panes `cat` {cfg.load_bytes / MB:g} MB in a loop)"
    ctl, new = "tmux -C capture-pane", "tmux capture-pane (new client)"
    table = [
        ("read_idle", "read an idle pane (`pane.read` / `tmux -C` `capture-pane`)", ctl),
        ("read_flood", "read a flooded pane (`pane.read` / `tmux -C` `capture-pane`)", ctl),
        (
            "read_idle_new",
            "read an idle pane (`pane.read` / `tmux capture-pane`, a new client)",
            new,
        ),
        (
            "read_flood_new",
            "read a flooded pane (`pane.read` / `tmux capture-pane`, a new client)",
            new,
        ),
        ("snapshot", "`runtime.snapshot` / `tmux -C` `list-panes -a`", "tmux -C list-panes -a"),
    ]
    rows = {
        name: run.row(
            f"load_{name}",
            f"{flood}: {what}",
            "ms",
            comparator,
            tail_percentile=99.0,
            ratio_of_tails=True,
        )
        for name, what, comparator in table
    }
    exec_row = run.row(
        "load_exec",
        f"{flood}: {cfg.load_exec} concurrent `pane.exec echo tok-<i>`, every output checked",
        "ms",
        f"asyncio floor (create_subprocess_exec echo x {cfg.load_exec}, same flood)",
    )
    return Load(
        run=run,
        read_idle=rows["read_idle"],
        read_flood=rows["read_flood"],
        read_idle_new=rows["read_idle_new"],
        read_flood_new=rows["read_flood_new"],
        snapshot=rows["snapshot"],
        exec_row=exec_row,
        path=run.bench.files / "flood.txt",
    )


def _write_notes(load: Load) -> None:
    cfg = load.run.config
    flood = (
        f"{cfg.load_reps} repetitions; each turn floods {cfg.load_panes} new 80x24 windows with "
        f"`while :; do cat FILE; done` (FILE: {load.path.stat().st_size / MB:.1f} MB of plain "
        "text) while the other side is idle"
    )
    load.read_idle.note = "; ".join([flood, *load.turns, *load.problems])
    if load.exec_correct:
        counts = ", ".join(str(c) for c in load.exec_correct)
        load.exec_row.note = f"correct answers per burst of {cfg.load_exec}: {counts}"
    for row in load.rows():
        reasons = load.reasons.get(row.key, Counter()).most_common(8)
        if reasons:
            failed = "; ".join(f"{count} x {reason}" for reason, count in reasons)
            row.note = "; ".join(filter(None, [row.note, f"failed requests: {failed}"]))


def under_load(run: Run) -> None:
    b, cfg = run.bench, run.config
    load = _rows(run)
    screen = b.files / "load-screen.txt"
    try:
        if not run.setup(load.rows(), "flood file and idle panes", lambda: _prepare(load, screen)):
            return
        turns: list[tuple[str, Callable[[Load, int], None], list[Row]]] = [
            ("Pebrel", _pebrel_turn, load.rows()),
            ("tmux", _tmux_turn, load.rows()[:-1]),
        ]
        for rep in range(cfg.load_reps):
            for row in load.rows():
                row.start_rep()
            for who, turn, rows in turns if rep % 2 == 0 else turns[::-1]:
                try:
                    turn(load, rep)
                except Exception as exc:
                    reason = f"{who} turn {rep + 1}: {type(exc).__name__}: {exc}"
                    log(f"  {reason}")
                    for row in rows:
                        row.fail(reason)
                    run.recover()
            log(f"  load rep {rep + 1}/{cfg.load_reps}")
    finally:
        if load.idle_p is not None:
            with contextlib.suppress(Exception), deadline(30.0):
                b.pebrel.close_window(load.idle_p.window_id)
        if load.idle_t is not None:
            b.tmux.kill_window(load.idle_t.window_id)
        for proc in _cats(load.path):
            with contextlib.suppress(psutil.Error):
                proc.kill()
        if load.path.exists():
            _write_notes(load)
        load.path.unlink(missing_ok=True)
        screen.unlink(missing_ok=True)
