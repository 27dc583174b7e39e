"""The measurements: each phase sets up its panes on both sides, then runs its rows A/B
interleaved for every repetition (the side that goes first alternates sample by sample)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psutil

from bench import data
from bench.harness import (
    HISTORY_LINES,
    Bench,
    BenchError,
    MeasurementTimeout,
    PebrelPane,
    TmuxPane,
    deadline,
)
from bench.stats import Row

POLL_S = 0.005
MB = 1_000_000
MIB = 1024 * 1024


@dataclass
class Config:
    reps: int = 7
    quick: bool = False
    ingest_bytes: int = 4 * MB
    reads: int = 200
    cli_reads: int = 10
    creations: int = 3
    round_trips: int = 20
    snapshots: int = 30
    fanouts: int = 5
    snapshot_panes: int = 64
    subscribers: int = 32
    sample_timeout_s: float = 120.0
    # Under load (bench/load.py): each side's turn floods `load_panes` panes.
    load_reps: int = 4
    load_bytes: int = 50 * MB
    load_panes: int = 16
    load_measure_s: float = 4.0
    load_request_timeout_s: float = 10.0
    load_exec: int = 128

    @staticmethod
    def make(quick: bool, reps: int | None) -> Config:
        if quick:
            return Config(
                reps=reps or 3,
                quick=True,
                ingest_bytes=1 * MB,
                reads=50,
                cli_reads=4,
                creations=2,
                round_trips=8,
                snapshots=10,
                fanouts=3,
                sample_timeout_s=60.0,
                load_reps=reps or 2,
                load_bytes=2 * MB,
                load_measure_s=3.0,
            )
        return Config(reps=reps or 7, load_reps=reps or 4)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class Run:
    bench: Bench
    config: Config
    rows: dict[str, Row] = field(default_factory=dict)

    def row(self, key: str, what: str, unit: str, comparator: str | None, **kw: Any) -> Row:
        self.rows[key] = Row(key, what, unit, comparator, **kw)
        return self.rows[key]

    def sample(
        self, row: Row, side: str, fn: Callable[[], float], timeout_s: float | None = None
    ) -> None:
        """Take one sample under a deadline; a failure marks the row n/a and ends it."""
        if row.failed:
            return
        limit = timeout_s or self.config.sample_timeout_s
        who = "Pebrel" if side == "pebrel" else "comparator"
        try:
            with deadline(limit):
                value = fn()
        except MeasurementTimeout:
            row.fail(f"{who} sample timed out after {limit:g} s")
            self.recover()
            return
        except Exception as exc:
            row.fail(f"{who}: {type(exc).__name__}: {exc}")
            return
        row.add(side, value)

    def recover(self) -> None:
        """Fresh persistent connections on both sides, so later rows are not poisoned."""
        for side in (self.bench.pebrel, self.bench.tmux):
            try:
                with deadline(30.0):
                    side.reconnect()
            except Exception as exc:
                log(f"  could not reconnect {type(side).__name__}: {exc!r}")

    def pair(self, index: int, a: Callable[[], None], b: Callable[[], None]) -> None:
        """Run the two sides of one sample, alternating which goes first."""
        for step in (a, b) if index % 2 == 0 else (b, a):
            step()

    def setup(self, rows: list[Row], what: str, fn: Callable[[], Any]) -> Any:
        try:
            with deadline(max(self.config.sample_timeout_s, 300.0)):
                return fn()
        except Exception as exc:
            for row in rows:
                row.fail(f"setup ({what}): {type(exc).__name__}: {exc}")
            return None


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


def _sum_memory(pids: list[int]) -> tuple[float, float]:
    uss = pss = 0.0
    for pid in pids:
        info = psutil.Process(pid).memory_full_info()
        uss += info.uss
        pss += info.pss
    return uss / MIB, pss / MIB


# --------------------------------------------------------------------------- 1. ingestion


def ingestion(run: Run) -> None:
    b, cfg = run.bench, run.config
    kinds: list[tuple[str, str, Callable[[int], bytes]]] = [
        ("plain", "plain text", data.plain_text),
        ("sgr", "SGR-coloured text", data.sgr_text),
        ("progress", "progress bar (one line rewritten with CR)", data.progress_bar),
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
    bodies = {key: make(cfg.ingest_bytes) for key, _, make in kinds}

    def panes() -> tuple[PebrelPane, TmuxPane]:
        p = b.pebrel.new_window()
        b.pebrel.ready(p)
        return p, b.tmux.new_window()

    made = run.setup(list(rows.values()), "ingest panes", panes)
    if made is None:
        return
    ppane, tpane = made
    try:
        for rep in range(cfg.reps):
            for index, (key, _, _) in enumerate(kinds):
                row = rows[key]
                row.start_rep()
                marker = f"BENCH-END-{key}-{rep}-{secrets.token_hex(4)}"
                path = data.write_with_marker(b.files, f"{key}-{rep}.txt", bodies[key], marker)
                size = path.stat().st_size
                command = f"cat {path}"

                def pebrel_side(
                    row: Row = row, marker: str = marker, size: int = size, command: str = command
                ) -> None:
                    def once() -> float:
                        b.pebrel.settle(ppane)
                        start = time.perf_counter()
                        b.pebrel.prompt(ppane, command)
                        while marker not in b.pebrel.read(ppane, 5):
                            time.sleep(POLL_S)
                        return size / MB / (time.perf_counter() - start)

                    run.sample(row, "pebrel", once)

                def tmux_side(
                    row: Row = row, marker: str = marker, size: int = size, command: str = command
                ) -> None:
                    def once() -> float:
                        start = time.perf_counter()
                        b.tmux.send(tpane, command)
                        while marker not in b.tmux.capture(tpane):
                            time.sleep(POLL_S)
                        return size / MB / (time.perf_counter() - start)

                    run.sample(row, "other", once)

                run.pair(rep + index, pebrel_side, tmux_side)
                path.unlink()
            log(f"  ingest rep {rep + 1}/{cfg.reps}")
    finally:
        with contextlib.suppress(Exception):
            b.pebrel.close_window(ppane.window_id)
        b.tmux.kill_window(tpane.window_id)


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
        for window_id in keep_p:
            with contextlib.suppress(Exception):
                b.pebrel.close_window(window_id)
        for tmux_window in keep_t:
            b.tmux.kill_window(tmux_window)


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

            try:
                run.sample(r_uss, "pebrel", idle)
                if "pss" in holder:
                    r_pss.add("pebrel", holder["pss"])
                run.sample(h_uss, "pebrel", full)
                if "pss_full" in holder:
                    h_pss.add("pebrel", holder["pss_full"])
            finally:
                if "pane" in holder:
                    keep_p.append(holder["pane"].window_id)

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
                return uss - base_uss + s_uss

            try:
                run.sample(r_uss, "other", idle)
                if "pss" in holder:
                    r_pss.add("other", holder["pss"])
                run.sample(h_uss, "other", full)
                if "pss_full" in holder:
                    h_pss.add("other", holder["pss_full"])
            finally:
                if "pane" in holder:
                    keep_t.append(holder["pane"].window_id)

        run.pair(rep, pebrel_side, tmux_side)
        path.unlink()
        for pss_row, uss_row in ((r_pss, r_uss), (h_pss, h_uss)):
            if uss_row.failed:
                pss_row.fail(uss_row.error or "")
        log(f"  memory rep {rep + 1}/{cfg.reps}")


def poll_text(read: Callable[[], str], needle: str, timeout_s: float = 60.0) -> None:
    end = time.monotonic() + timeout_s
    while needle not in read():
        if time.monotonic() > end:
            raise BenchError(f"{needle!r} not seen within {timeout_s:g} s")
        time.sleep(POLL_S)


# --------------------------------------------------------------------------- 3. creation


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

                run.pair(rep + i, pebrel_side, tmux_side)
            log(f"  creation rep {rep + 1}/{cfg.reps}")
    finally:
        with contextlib.suppress(Exception):
            b.pebrel.close_window(ppane.window_id)
        b.tmux.kill_window(tpane.window_id)


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
        with contextlib.suppress(Exception):
            b.pebrel.close_window(ppane.window_id)
        b.tmux.kill_window(tpane.window_id)


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
        for rep in range(cfg.reps):
            row.start_rep()
            for i in range(cfg.round_trips):
                run.pair(
                    rep + i,
                    lambda: run.sample(row, "pebrel", p_once),
                    lambda: run.sample(row, "other", t_once),
                )
            log(f"  round trip rep {rep + 1}/{cfg.reps}")
    finally:
        with contextlib.suppress(Exception):
            b.pebrel.close_window(ppane.window_id)
        b.tmux.kill_window(tpane.window_id)


# --------------------------------------------------------------------------- 6. concurrent exec


def _request(token: str, request_id: int, method: str, params: dict[str, Any]) -> bytes:
    body = {
        "protocol": "nebula.runtime",
        "version": 1,
        "id": request_id,
        "token": token,
        "method": method,
        "params": params,
    }
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


async def one_request(
    port: int,
    token: str,
    request_id: int,
    method: str,
    params: dict[str, Any],
    timeout_s: float | None = None,
) -> dict[str, Any] | str:
    """One request on its own new connection: the answer, or what went wrong instead."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError as exc:
        return f"connect: {exc}"
    try:
        writer.write(_request(token, request_id, method, params))
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), timeout_s)
    except TimeoutError:
        return f"no answer within {timeout_s:g} s"
    except OSError as exc:
        return f"connection: {exc}"
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
    if not line:
        return "connection closed without an answer"
    response: dict[str, Any] = json.loads(line)
    return response


async def _exec_burst(port: int, token: str, target: dict[str, int], n: int) -> float:
    async def one(i: int) -> str | None:
        response = await one_request(port, token, i, "pane.exec", {**target, "argv": ["true"]})
        if isinstance(response, str):
            return response
        if not response.get("ok"):
            return str(response.get("error", {}).get("code"))
        if response["result"].get("exit_code") != 0:
            return f"exit_code {response['result'].get('exit_code')}"
        return None

    start = time.perf_counter()
    outcomes = await asyncio.gather(*(one(i) for i in range(n)))
    elapsed = _ms(start)
    failures = [o for o in outcomes if o is not None]
    if failures:
        raise BenchError(f"{len(failures)}/{n} pane.exec failed (first: {failures[0]})")
    return elapsed


async def _floor_burst(n: int) -> float:
    async def one() -> int:
        proc = await asyncio.create_subprocess_exec(
            "true", stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL
        )
        return await proc.wait()

    start = time.perf_counter()
    codes = await asyncio.gather(*(one() for _ in range(n)))
    elapsed = _ms(start)
    if any(codes):
        raise BenchError("`true` failed")
    return elapsed


def concurrent_exec(run: Run) -> None:
    b, cfg = run.bench, run.config
    rows = {
        n: run.row(
            f"exec_{n}",
            f"{n} concurrent `pane.exec true`, one connection each",
            "ms",
            "asyncio floor (create_subprocess_exec x N)",
        )
        for n in (32, 128)
    }

    def pane() -> PebrelPane:
        p = b.pebrel.new_window()
        b.pebrel.ready(p)
        return p

    ppane = run.setup(list(rows.values()), "exec pane", pane)
    if ppane is None:
        return
    port, token = b.pebrel.port, b.pebrel.token
    timeout = cfg.sample_timeout_s
    try:
        for rep in range(cfg.reps):
            for index, (n, row) in enumerate(rows.items()):
                row.start_rep()
                for i in range(2):

                    def p_side(n: int = n, row: Row = row) -> None:
                        def burst() -> float:
                            coro = _exec_burst(port, token, ppane.target, n)
                            return asyncio.run(asyncio.wait_for(coro, timeout))

                        run.sample(row, "pebrel", burst)

                    def f_side(n: int = n, row: Row = row) -> None:
                        run.sample(
                            row,
                            "other",
                            lambda: asyncio.run(asyncio.wait_for(_floor_burst(n), timeout)),
                        )

                    run.pair(rep + index + i, p_side, f_side)
            log(f"  exec rep {rep + 1}/{cfg.reps}")
    finally:
        with contextlib.suppress(Exception):
            b.pebrel.close_window(ppane.window_id)


# --------------------------------------------------------------------------- 7. snapshot


def snapshot(run: Run) -> None:
    b, cfg = run.bench, run.config
    row = run.row(
        "snapshot",
        f"`runtime.snapshot` with {cfg.snapshot_panes} panes / `list-panes -a` (persistent)",
        "ms",
        "tmux -C list-panes -a",
    )
    pebrel_windows: list[int] = []
    tmux_windows: list[str] = []

    def fill() -> bool:
        # Windows of up to four panes each (80x24, split right then down), until 64 in all.
        while len(b.pebrel.panes()) < cfg.snapshot_panes:
            first = b.pebrel.new_window()
            pebrel_windows.append(first.window_id)
            made = [first]
            for direction in ("right", "down", "down"):
                if len(b.pebrel.panes()) >= cfg.snapshot_panes:
                    break
                made.append(b.pebrel.split(made[len(made) // 2], direction))
        while b.tmux.pane_count() < cfg.snapshot_panes:
            first_t = b.tmux.new_window(ready=False)
            tmux_windows.append(first_t.window_id)
            made_t = [first_t]
            for flag in ("-h", "-v", "-v"):
                if b.tmux.pane_count() >= cfg.snapshot_panes:
                    break
                line = b.tmux.command(
                    f"split-window -d {flag} -t {made_t[len(made_t) // 2].pane_id} "
                    "-P -F '#{pane_id} #{pane_pid} #{window_id}'"
                )[0]
                pane_id, pid, window_id = line.split()
                made_t.append(TmuxPane(pane_id, int(pid), window_id))
        # Let every shell draw its first prompt before timing anything.
        for record in b.pebrel.panes():
            b.pebrel.ready(PebrelPane(int(record["window_id"]), int(record["pane_id"])))
        time.sleep(1.0)
        row.note = (
            f"{len(b.pebrel.panes())} Pebrel panes, {b.tmux.pane_count()} tmux panes "
            "(windows of up to 4 panes)"
        )
        return True

    try:
        if run.setup([row], "64 panes", fill) is None:
            return

        def p_once() -> float:
            start = time.perf_counter()
            b.pebrel.ok("runtime.snapshot")
            return _ms(start)

        def t_once() -> float:
            start = time.perf_counter()
            b.tmux.command("list-panes -a")
            return _ms(start)

        for rep in range(cfg.reps):
            row.start_rep()
            for i in range(cfg.snapshots):
                run.pair(
                    rep + i,
                    lambda: run.sample(row, "pebrel", p_once),
                    lambda: run.sample(row, "other", t_once),
                )
            log(f"  snapshot rep {rep + 1}/{cfg.reps}")
    finally:
        for window_id in pebrel_windows:
            with contextlib.suppress(Exception):
                b.pebrel.close_window(window_id)
        for tmux_window in tmux_windows:
            b.tmux.kill_window(tmux_window)


# --------------------------------------------------------------------------- 8. fan-out


async def _fanout(
    port: int, token: str, subscribers: int, samples: int, window_id: int
) -> list[float]:
    """Open the subscribers, then time `samples` changes until every one of them saw it."""
    seen: list[list[tuple[float, int]]] = [[] for _ in range(subscribers)]
    changed = asyncio.Condition()
    conns: list[asyncio.StreamWriter] = []
    readers: list[asyncio.Task[None]] = []

    async def pump(index: int, reader: asyncio.StreamReader) -> None:
        while True:
            line = await reader.readline()
            if not line:
                return
            arrived = time.perf_counter()
            obj = json.loads(line)
            if obj.get("type") == "event":
                seen[index].append((arrived, int(obj.get("revision", 0))))
                async with changed:
                    changed.notify_all()

    def latest() -> int:
        return max((rev for events in seen for _, rev in events), default=0)

    try:
        for i in range(subscribers):
            reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=64 * MIB)
            conns.append(writer)
            writer.write(_request(token, i, "events.subscribe", {}))
            await writer.drain()
            ack = json.loads(await reader.readline())
            if not ack.get("ok"):
                raise BenchError(f"events.subscribe: {ack.get('error')}")
            readers.append(asyncio.create_task(pump(i, reader)))
        trigger_r, trigger_w = await asyncio.open_connection("127.0.0.1", port, limit=64 * MIB)
        conns.append(trigger_w)
        async with changed:  # every subscriber got its initial snapshot
            await changed.wait_for(lambda: all(seen))
        out: list[float] = []
        for s in range(samples):
            await asyncio.sleep(0.05)  # let anything in flight land: the baseline is now
            base = latest()
            start = time.perf_counter()
            name = f"fanout-{s}-{secrets.token_hex(3)}"
            params = {"window_id": window_id, "tab_index": 0, "name": name}
            trigger_w.write(_request(token, 1000 + s, "tab.rename", params))
            await trigger_w.drain()
            async with changed:
                await changed.wait_for(
                    lambda base=base: all(any(r > base for _, r in ev) for ev in seen)
                )
            arrivals = [min(t for t, r in ev if r > base) for ev in seen]
            out.append((max(arrivals) - start) * 1000.0)
            reply = json.loads(await trigger_r.readline())
            if not reply.get("ok"):
                raise BenchError(f"tab.rename: {reply.get('error')}")
        return out
    finally:
        for task in readers:
            task.cancel()
        for writer in conns:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


def fanout(run: Run) -> None:
    b, cfg = run.bench, run.config
    row = run.row(
        "fanout",
        f"event fan-out: change seen by all {cfg.subscribers} subscribers (`events.subscribe`)",
        "ms",
        None,
    )
    ppane = run.setup([row], "fan-out window", b.pebrel.new_window)
    if ppane is None:
        return
    port, token = b.pebrel.port, b.pebrel.token
    try:
        for rep in range(cfg.reps):
            row.start_rep()
            holder: dict[str, list[float]] = {}

            def once(holder: dict[str, list[float]] = holder) -> float:
                values = asyncio.run(
                    asyncio.wait_for(
                        _fanout(port, token, cfg.subscribers, cfg.fanouts, ppane.window_id),
                        cfg.sample_timeout_s,
                    )
                )
                holder["values"] = values
                return values[0]

            run.sample(row, "pebrel", once)
            for value in holder.get("values", [])[1:]:
                row.add("pebrel", value)
            log(f"  fan-out rep {rep + 1}/{cfg.reps}")
    finally:
        with contextlib.suppress(Exception):
            b.pebrel.close_window(ppane.window_id)


PHASES: list[tuple[str, str, Callable[[Run], None]]] = [
    ("memory", "memory per pane", memory),
    ("ingest", "ingestion", ingestion),
    ("create", "pane creation", creation),
    ("read", "read latency", reads),
    ("roundtrip", "prompt-and-wait round trip", round_trip),
    ("exec", "concurrent exec", concurrent_exec),
    ("snapshot", "snapshot with 64 panes", snapshot),
    ("fanout", "event fan-out", fanout),
]
