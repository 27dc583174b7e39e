"""The phases that time one pane operation at a time: creating a pane (until its shell exists,
until its first prompt), reading a 24x80 screen (persistent connection, CLI, CLI floor) and
the prompt-and-wait round trip of `true`."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from typing import Any

from bench import data
from bench.common import BenchError
from bench.pebrel_side import PebrelPane
from bench.run import Run, _ms, log, poll_text
from bench.tmux_side import TmuxPane

# --------------------------------------------------------------------------- 3. creation


#: After each side of a creation sample: a closed pane's processes exit, Pebrel's fork server
#: forks its next spare 10 ms after the start was answered and the spare warms up (~5 ms of
#: CPU: it runs a whole worker start once).
CREATION_SETTLE_S = 0.05


def creation(run: Run) -> None:
    b, cfg = run.bench, run.config
    spawn = run.row(
        "create_spawn",
        "create a pane: until its shell process exists (`pane.split` / `split-window -P`)",
        "ms",
        "tmux -C split-window",
    )
    prompt = run.row(
        "create_prompt",
        "create a pane: until first prompt (`pane.run true` ok) / a new tmux pane ran a command",
        "ms",
        "tmux split-window 'tmux wait-for -S'",
    )

    def panes() -> tuple[PebrelPane, TmuxPane]:
        p = b.pebrel.new_window()
        b.pebrel.ready(p)
        return p, b.tmux.new_window()

    made = run.setup([spawn, prompt], "creation panes", panes)
    if made is None:
        return
    ppane, tpane = made
    try:
        for rep in range(cfg.reps):
            spawn.start_rep()
            prompt.start_rep()
            for i in range(cfg.creations):

                def pebrel_side() -> None:
                    holder: dict[str, Any] = {}

                    def create() -> float:
                        start = time.perf_counter()
                        holder["pane"] = b.pebrel.split(ppane)
                        spawned = _ms(start)
                        b.pebrel.ready(holder["pane"])
                        holder["prompt"] = _ms(start)
                        return spawned

                    try:
                        run.sample(spawn, "pebrel", create)
                        if "prompt" in holder:
                            prompt.add("pebrel", holder["prompt"])
                        elif spawn.failed:
                            prompt.fail(spawn.error or "")
                    finally:
                        if "pane" in holder:
                            with contextlib.suppress(Exception):
                                b.pebrel.close_pane(holder["pane"])

                def tmux_side() -> None:
                    holder: dict[str, Any] = {}

                    def create() -> float:
                        start = time.perf_counter()
                        holder["pane"] = b.tmux.split(tpane)
                        return _ms(start)

                    def first_command() -> float:
                        ch = b.tmux.channel()
                        start = time.perf_counter()
                        b.tmux.split(tpane, f"tmux wait-for -S {ch}")
                        b.tmux.wait_for(ch)
                        return _ms(start)

                    try:
                        run.sample(spawn, "other", create)
                    finally:
                        if "pane" in holder:
                            b.tmux.kill_pane(holder["pane"])
                    run.sample(prompt, "other", first_command)

                run.pair(rep + i, pebrel_side, tmux_side, settle_s=CREATION_SETTLE_S)
            log(f"  creation rep {rep + 1}/{cfg.reps}")
    finally:
        b.close_windows([ppane.window_id], [tpane.window_id])


# --------------------------------------------------------------------------- 4. read latency


def reads(run: Run) -> None:
    b, cfg = run.bench, run.config
    persistent = run.row(
        "read_persistent",
        "read a 24x80 screen, persistent connection (`pane.read` / `tmux -C` `capture-pane`)",
        "ms",
        "tmux -C capture-pane",
    )
    cli = run.row(
        "read_cli",
        "read a 24x80 screen through the CLI (`pebrel pane read` / `tmux capture-pane`)",
        "ms",
        "tmux capture-pane (new client)",
    )
    floor = run.row(
        "read_cli_floor",
        "the same CLI read / bare `python -c 'import click, json, socket'` (CLI floor)",
        "ms",
        "python floor",
    )
    screen = b.files / "screen.txt"
    screen.write_bytes(data.screenful())

    def panes() -> tuple[PebrelPane, TmuxPane]:
        p = b.pebrel.new_window()
        b.pebrel.run(p, f"clear; cat {screen}")
        t = b.tmux.new_window()
        b.tmux.run_and_wait(t, f"clear; cat {screen}")
        poll_text(lambda: b.pebrel.read(p, 24), "22 xxx")
        poll_text(lambda: b.tmux.capture(t), "22 xxx")
        return p, t

    made = run.setup([persistent, cli, floor], "read panes", panes)
    if made is None:
        return
    ppane, tpane = made
    pebrel_cli = [
        b.pebrel.exe,
        "pane",
        "read",
        str(ppane.pane_id),
        "--window",
        str(ppane.window_id),
        "--lines",
        "24",
    ]
    tmux_cli = [*b.tmux.base, "capture-pane", "-p", "-t", tpane.pane_id]

    floor_cli = [sys.executable, "-c", "import click, json, socket"]

    def spawn(argv: list[str], env: dict[str, str], expect: bytes = b"22 xxx") -> float:
        start = time.perf_counter()
        proc = subprocess.run(
            argv, env=env, capture_output=True, timeout=30, stdin=subprocess.DEVNULL
        )
        elapsed = _ms(start)
        if proc.returncode != 0 or expect not in proc.stdout:
            raise BenchError(f"{argv[0]} -> {proc.returncode}: {proc.stdout[:200]!r}")
        return elapsed

    def p_read() -> float:
        start = time.perf_counter()
        text = b.pebrel.read(ppane, 24)
        elapsed = _ms(start)
        if "22 xxx" not in text:
            raise BenchError("pane.read did not return the screen")
        return elapsed

    def t_read() -> float:
        start = time.perf_counter()
        text = b.tmux.capture(tpane)
        elapsed = _ms(start)
        if "22 xxx" not in text:
            raise BenchError("capture-pane did not return the screen")
        return elapsed

    def p_cli() -> None:
        run.sample(cli, "pebrel", lambda: spawn(pebrel_cli, b.pebrel.env))
        if cli.pebrel and cli.pebrel[-1] and not floor.failed:
            floor.add("pebrel", cli.pebrel[-1][-1])

    def t_cli() -> None:
        run.sample(cli, "other", lambda: spawn(tmux_cli, b.tmux.env))

    def f_cli() -> None:
        run.sample(floor, "other", lambda: spawn(floor_cli, b.pebrel.env, b""))

    try:
        for rep in range(cfg.reps):
            persistent.start_rep()
            cli.start_rep()
            floor.start_rep()
            for i in range(cfg.reads):
                run.pair(
                    rep + i,
                    lambda: run.sample(persistent, "pebrel", p_read),
                    lambda: run.sample(persistent, "other", t_read),
                )
            for i in range(cfg.cli_reads):
                steps = [p_cli, t_cli, f_cli]
                for k in range(3):  # rotate which of the three goes first
                    steps[(rep + i + k) % 3]()
            log(f"  read rep {rep + 1}/{cfg.reps}")
    finally:
        b.close_windows([ppane.window_id], [tpane.window_id])


# --------------------------------------------------------------------------- 5. round trip


def round_trip(run: Run) -> None:
    b, cfg = run.bench, run.config
    row = run.row(
        "prompt_wait",
        "run `true` and wait (`pane.prompt` + `pane.wait settled after_seq`)",
        "ms",
        "tmux send-keys + wait-for",
    )

    def panes() -> tuple[PebrelPane, TmuxPane]:
        p = b.pebrel.new_window()
        b.pebrel.ready(p)
        return p, b.tmux.new_window()

    made = run.setup([row], "round-trip panes", panes)
    if made is None:
        return
    ppane, tpane = made

    def p_once() -> float:
        start = time.perf_counter()
        seq = b.pebrel.prompt(ppane, "true")
        result = b.pebrel.ok(
            "pane.wait",
            {**ppane.target, "state": "settled", "after_seq": seq, "timeout_ms": 30_000},
        )
        elapsed = _ms(start)
        if result.get("state") != "completed":
            raise BenchError(f"pane.wait settled on {result.get('state')!r}, not completed")
        return elapsed

    def t_once() -> float:
        start = time.perf_counter()
        b.tmux.run_and_wait(tpane, "true")
        return _ms(start)

    try:
        run.sample_pairs(row, cfg.round_trips, p_once, t_once, "round trip")
    finally:
        b.close_windows([ppane.window_id], [tpane.window_id])
