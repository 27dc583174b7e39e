"""The phases that feed panes data: ingestion (`cat` of a plain, SGR-coloured and
progress-bar file into an 80x24 pane, in MB/s, and the CPU the plain-text one costs per MB:
every runtime process against the tmux server) and memory per pane (USS and PSS of Pebrel's
worker + shell against the tmux server's growth + shell, idle and with 10,000 lines of
history)."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable
from typing import Any

import psutil

from bench import data
from bench.common import HISTORY_LINES
from bench.pebrel_side import PebrelPane
from bench.run import MB, MIB, POLL_S, Run, log, poll_text
from bench.stats import Row
from bench.tmux_side import TmuxPane
from bench.view_page import open_view


def _sum_memory(pids: list[int]) -> tuple[float, float]:
    uss = pss = 0.0
    for pid in pids:
        info = psutil.Process(pid).memory_full_info()
        uss += info.uss
        pss += info.pss
    return uss / MIB, pss / MIB


def _cpu_s(procs: list[psutil.Process]) -> float:
    """The CPU time these processes used so far, in seconds: the sum over their threads of
    /proc/PID/task/TID/schedstat (in nanoseconds; `cpu_times` counts clock ticks of 10 ms, too
    coarse for a few MB), else psutil's user + system time."""
    total = 0.0
    for proc in procs:
        try:
            for tid in os.listdir(f"/proc/{proc.pid}/task"):
                with open(f"/proc/{proc.pid}/task/{tid}/schedstat", encoding="ascii") as handle:
                    total += int(handle.read().split()[0]) / 1e9
            continue
        except (OSError, ValueError, IndexError):
            pass
        try:
            times = proc.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def _runtime_procs(run: Run, pane: PebrelPane) -> list[psutil.Process]:
    """Every process of the runtime but the pane's shell and what it runs (`cat`)."""
    shell = run.bench.pebrel.shell_pid(pane)
    theirs = {shell} | {child.pid for child in psutil.Process(shell).children(recursive=True)}
    return [proc for proc in run.bench.pebrel.processes() if proc.pid not in theirs]


# --------------------------------------------------------------------------- 1. ingestion


def ingestion(run: Run) -> None:
    b, cfg = run.bench, run.config
    kinds: list[tuple[str, str, Callable[[int], bytes]]] = [
        ("plain", "plain text", data.plain_text),
        ("sgr", "SGR-coloured text", data.sgr_text),
        ("progress", "progress bar (one line rewritten with CR)", data.progress_bar),
        # #21: the same plain text while `pebrel view` has a page connected (it follows the
        # pane's screen); tmux ingests it as in the plain row.
        ("plain_view", "plain text with `pebrel view` open", data.plain_text),
    ]
    rows = {
        key: run.row(
            f"ingest_{key}",
            f"ingest {label}, `cat` {cfg.ingest_bytes / MB:g} MB into 80x24",
            "MB/s",
            "tmux",
            higher_is_better=True,
        )
        for key, label, _ in kinds
    }
    cpu_row = run.row(
        "ingest_cpu",
        f"CPU per MB ingested, plain text (`cat` {cfg.ingest_bytes / MB:g} MB; every runtime "
        "process / the tmux server)",
        "ms",
        "tmux server",
    )
    bodies = {key: make(cfg.ingest_bytes) for key, _, make in kinds}

    def panes() -> tuple[PebrelPane, TmuxPane]:
        p = b.pebrel.new_window()
        b.pebrel.ready(p)
        return p, b.tmux.new_window()

    made = run.setup([*rows.values(), cpu_row], "ingest panes", panes)
    if made is None:
        return
    ppane, tpane = made
    try:
        for rep in range(cfg.reps):
            cpu_row.start_rep()
            for index, (key, _, _) in enumerate(kinds):
                row = rows[key]
                row.start_rep()
                cpu = cpu_row if key == "plain" else None
                marker = f"BENCH-END-{key}-{rep}-{secrets.token_hex(4)}"
                path = data.write_with_marker(b.files, f"{key}-{rep}.txt", bodies[key], marker)
                size = path.stat().st_size
                command = f"cat {path}"

                def pebrel_side(
                    row: Row = row,
                    marker: str = marker,
                    size: int = size,
                    command: str = command,
                    cpu: Row | None = cpu,
                    key: str = key,
                ) -> None:
                    def once() -> float:
                        b.pebrel.settle(ppane)
                        procs = _runtime_procs(run, ppane)
                        used = _cpu_s(procs)
                        start = time.perf_counter()
                        b.pebrel.prompt(ppane, command)
                        while marker not in b.pebrel.read(ppane, 5):
                            time.sleep(POLL_S)
                        rate = size / MB / (time.perf_counter() - start)
                        if cpu is not None:
                            cpu.add("pebrel", (_cpu_s(procs) - used) * 1000 / (size / MB))
                        return rate

                    page = open_view(b.pebrel) if key == "plain_view" else None
                    try:
                        run.sample(row, "pebrel", once)
                    finally:
                        if page is not None:
                            page.close()

                def tmux_side(
                    row: Row = row,
                    marker: str = marker,
                    size: int = size,
                    command: str = command,
                    cpu: Row | None = cpu,
                ) -> None:
                    def once() -> float:
                        server = [psutil.Process(b.tmux.server_pid())]
                        used = _cpu_s(server)
                        start = time.perf_counter()
                        b.tmux.send(tpane, command)
                        while marker not in b.tmux.capture(tpane):
                            time.sleep(POLL_S)
                        rate = size / MB / (time.perf_counter() - start)
                        if cpu is not None:
                            cpu.add("other", (_cpu_s(server) - used) * 1000 / (size / MB))
                        return rate

                    run.sample(row, "other", once)

                run.pair(rep + index, pebrel_side, tmux_side)
                path.unlink()
            log(f"  ingest rep {rep + 1}/{cfg.reps}")
    finally:
        b.close_windows([ppane.window_id], [tpane.window_id])


# --------------------------------------------------------------------------- 2. memory


def memory(run: Run) -> None:
    b = run.bench
    comparator = "tmux server growth + shell"
    what = "Pebrel worker + shell"
    r_uss = run.row("mem_idle_uss", f"memory per idle pane, USS ({what})", "MiB", comparator)
    r_pss = run.row("mem_idle_pss", f"memory per idle pane, PSS ({what})", "MiB", comparator)
    h_uss = run.row(
        "mem_hist_uss",
        f"memory per pane with {HISTORY_LINES:,} lines of history, USS",
        "MiB",
        comparator,
    )
    h_pss = run.row(
        "mem_hist_pss",
        f"memory per pane with {HISTORY_LINES:,} lines of history, PSS",
        "MiB",
        comparator,
    )
    rows = [r_uss, r_pss, h_uss, h_pss]
    body = data.history_lines(HISTORY_LINES)
    server = run.setup(rows, "tmux server pid", b.tmux.server_pid)
    if server is None:
        return
    # Panes stay open until the phase ends: a closed pane's freed memory would be reused by the
    # next one and hide its growth (tmux server) or skew the comparison.
    keep_p: list[int] = []
    keep_t: list[str] = []
    try:
        _memory_reps(run, rows, body, server, keep_p, keep_t)
    finally:
        b.close_windows(keep_p, keep_t)


def _sample_pane(
    run: Run,
    rows: list[Row],
    side: str,
    idle: Callable[[], float],
    full: Callable[[], float],
    holder: dict[str, Any],
    keep: list[Any],
) -> None:
    """One side's pane: the idle then the full sample (each returns the USS and leaves the PSS
    in `holder`); the pane's window is kept open until the phase ends."""
    r_uss, r_pss, h_uss, h_pss = rows
    try:
        run.sample(r_uss, side, idle)
        if "pss" in holder:
            r_pss.add(side, holder["pss"])
        run.sample(h_uss, side, full)
        if "pss_full" in holder:
            h_pss.add(side, holder["pss_full"])
    finally:
        if "pane" in holder:
            keep.append(holder["pane"].window_id)


def _memory_reps(
    run: Run, rows: list[Row], body: bytes, server: int, keep_p: list[int], keep_t: list[str]
) -> None:
    b, cfg = run.bench, run.config
    r_uss, r_pss, h_uss, h_pss = rows
    for rep in range(cfg.reps):
        for row in rows:
            row.start_rep()
        marker = f"BENCH-HIST-{rep}-{secrets.token_hex(4)}"
        path = data.write_with_marker(b.files, f"history-{rep}.txt", body, marker)

        def pebrel_side(marker: str = marker, path: Any = path) -> None:
            holder: dict[str, Any] = {}

            def idle() -> float:
                pane = b.pebrel.new_window()
                holder["pane"] = pane
                b.pebrel.ready(pane)
                shell = b.pebrel.shell_pid(pane)
                holder["pids"] = [psutil.Process(shell).ppid(), shell]
                time.sleep(0.2)
                uss, pss = _sum_memory(holder["pids"])
                holder["pss"] = pss
                return uss

            def full() -> float:
                pane = holder["pane"]
                b.pebrel.run(pane, f"cat {path}")
                poll_text(lambda: b.pebrel.read(pane, 5), marker)
                time.sleep(0.2)
                uss, pss = _sum_memory(holder["pids"])
                holder["pss_full"] = pss
                return uss

            _sample_pane(run, rows, "pebrel", idle, full, holder, keep_p)

        def tmux_side(marker: str = marker, path: Any = path) -> None:
            holder: dict[str, Any] = {}

            def idle() -> float:
                base_uss, base_pss = _sum_memory([server])
                pane = b.tmux.new_window()
                holder["pane"] = pane
                holder["base"] = (base_uss, base_pss)
                time.sleep(0.2)
                uss, pss = _sum_memory([server])
                s_uss, s_pss = _sum_memory([pane.pid])
                holder["pss"] = pss - base_pss + s_pss
                return uss - base_uss + s_uss

            def full() -> float:
                pane = holder["pane"]
                base_uss, base_pss = holder["base"]
                b.tmux.run_and_wait(pane, f"cat {path}")
                poll_text(lambda: b.tmux.capture(pane), marker)
                time.sleep(0.2)
                uss, pss = _sum_memory([server])
                s_uss, s_pss = _sum_memory([pane.pid])
                holder["pss_full"] = pss - base_pss + s_pss
                return float(uss - base_uss + s_uss)

            _sample_pane(run, rows, "other", idle, full, holder, keep_t)

        run.pair(rep, pebrel_side, tmux_side)
        path.unlink()
        for pss_row, uss_row in ((r_pss, r_uss), (h_pss, h_uss)):
            if uss_row.failed:
                pss_row.fail(uss_row.error or "")
        log(f"  memory rep {rep + 1}/{cfg.reps}")
