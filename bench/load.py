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

import asyncio
import contextlib
import functools
import json
import secrets
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from bench import data
from bench.harness import Bench, BenchError, MeasurementTimeout, PebrelPane, TmuxPane, deadline
from bench.measure import MB, MIB, Run, _ms, log, one_request, poll_text
from bench.stats import Row

#: Every line of `data.plain_text` has it: a flooded screen always shows it.
FLOOD_NEEDLE = "pid="
#: The idle pane shows `data.screenful()`.
SCREEN_NEEDLE = "22 xxx"
#: The pause after each timed request (a client polling, not a tight loop of its own).
GAP_S = 0.005
WARMUP_S = 0.5
#: A side is idle again once its processes use less than this many cores.
IDLE_CORES = 0.15
#: A turn gives up after this many timed-out requests in a row (the side is stuck).
MAX_TIMEOUTS_IN_A_ROW = 3
EXEC_REQUEST_TIMEOUT_S = 60.0
#: A burst of concurrent calls: its wall time in ms and what went wrong, one line per call.
Burst = Coroutine[Any, Any, tuple[float, list[str]]]
SETUP_TIMEOUT_S = 300.0


@dataclass
class Probe:
    """One kind of timed request of one side and the rows its samples go to."""

    label: str
    side: str  # "pebrel" or "other", as in Row
    rows: list[Row]
    ask: Callable[[], str | None]  # None when the answer is right, else what is wrong with it
    reconnect: Callable[[], None]


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


def _tmux_processes(load: Load) -> list[psutil.Process]:
    try:
        server = psutil.Process(load.tmux_server)
        return [server, *server.children(recursive=True)]
    except psutil.Error:
        return []


def _wait_for_cats(load: Load, who: str, count: int) -> int:
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


def _wait_quiet(load: Load, who: str, processes: Callable[[], list[psutil.Process]]) -> None:
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


# --------------------------------------------------------------------------- timed requests


def _probe(load: Load, probe: Probe) -> bool:
    """Time one request, count it, keep its latency; True when it got no answer in time."""
    timeout_s = load.run.config.load_request_timeout_s
    start = time.perf_counter()
    problem: str | None
    timed_out = broken = False
    try:
        with deadline(timeout_s):
            problem = probe.ask()
        elapsed = _ms(start)
    except MeasurementTimeout:
        problem = f"no answer within {timeout_s:g} s"
        elapsed = timeout_s * 1000.0
        timed_out = broken = True
    except Exception as exc:
        problem = f"{type(exc).__name__}: {str(exc)[:160]}"
        elapsed = _ms(start)
        broken = True
    for row in probe.rows:
        row.add(probe.side, elapsed)
        row.count(probe.side, problem is not None)
    if problem is not None:
        load.failure(probe.rows, f"{probe.label}: {problem}")
    if broken:  # the connection may hold a late answer or half a line
        with deadline(30.0):
            probe.reconnect()
    return timed_out


def _measure(load: Load, probes: list[Probe]) -> tuple[int, float, float]:
    """Cycle through the probes (rotating the order); return cycles, seconds, CPU busy %."""
    cfg = load.run.config
    psutil.cpu_percent(None)
    start = time.monotonic()
    end = start + cfg.load_measure_s
    in_a_row = 0
    cycles = 0
    while time.monotonic() < end:
        shift = cycles % len(probes)
        for probe in probes[shift:] + probes[:shift]:
            in_a_row = in_a_row + 1 if _probe(load, probe) else 0
            if in_a_row >= MAX_TIMEOUTS_IN_A_ROW:
                raise BenchError(f"{in_a_row} requests in a row got no answer: turn abandoned")
            time.sleep(GAP_S)
        cycles += 1
    return cycles, time.monotonic() - start, psutil.cpu_percent(None)


def _envelope_problem(envelope: dict[str, object]) -> str | None:
    if envelope.get("ok"):
        return None
    error = envelope.get("error")
    if isinstance(error, dict):
        return f"error {error.get('code')}: {str(error.get('message'))[:120]}"
    return f"error envelope without an error: {json.dumps(envelope)[:160]}"


def _pebrel_probes(load: Load, flooded: PebrelPane) -> list[Probe]:
    b = load.bench
    assert load.idle_p is not None
    idle = load.idle_p
    panes = load.run.config.load_panes + 1

    def read(pane: PebrelPane, needle: str) -> Callable[[], str | None]:
        def ask() -> str | None:
            envelope = b.pebrel.call("pane.read", {**pane.target, "lines": 24})
            problem = _envelope_problem(envelope)
            if problem is None and needle not in envelope["result"]["text"]:
                problem = f"wrong content: {needle!r} not on the screen"
            return problem

        return ask

    def snapshot() -> str | None:
        envelope = b.pebrel.call("runtime.snapshot")
        problem = _envelope_problem(envelope)
        if problem is None:
            windows = envelope["result"]["windows"]
            count = sum(len(tab["panes"]) for win in windows for tab in win["tabs"])
            if count < panes:
                problem = f"wrong content: {count} panes in the snapshot, expected >= {panes}"
        return problem

    again = b.pebrel.reconnect
    return [
        Probe(
            "Pebrel pane.read (idle pane)",
            "pebrel",
            [load.read_idle, load.read_idle_new],
            read(idle, SCREEN_NEEDLE),
            again,
        ),
        Probe(
            "Pebrel pane.read (flooded pane)",
            "pebrel",
            [load.read_flood, load.read_flood_new],
            read(flooded, FLOOD_NEEDLE),
            again,
        ),
        Probe("Pebrel runtime.snapshot", "pebrel", [load.snapshot], snapshot, again),
    ]


def _tmux_probes(load: Load, flooded: TmuxPane) -> list[Probe]:
    b = load.bench
    assert load.idle_t is not None
    idle = load.idle_t
    panes = load.run.config.load_panes + 1

    def control(command: str, check: Callable[[list[str]], str | None]) -> Callable[[], str | None]:
        def ask() -> str | None:
            try:
                lines = b.tmux.command(command)
            except BenchError as exc:
                assert b.tmux.ctl is not None
                if b.tmux.ctl.proc.poll() is not None:
                    raise  # the control client is gone, not an %error answer
                return str(exc)[:160]
            return check(lines)

        return ask

    def screen(needle: str) -> Callable[[list[str]], str | None]:
        def check(lines: list[str]) -> str | None:
            if needle in "\n".join(lines):
                return None
            return f"wrong content: {needle!r} not on the screen"

        return check

    def listing(lines: list[str]) -> str | None:
        if len(lines) >= panes:
            return None
        return f"wrong content: {len(lines)} panes listed, expected >= {panes}"

    def new_client(pane: TmuxPane, needle: str) -> Callable[[], str | None]:
        argv = [*b.tmux.base, "capture-pane", "-p", "-t", pane.pane_id]

        def ask() -> str | None:
            proc = subprocess.run(
                argv, env=b.tmux.env, capture_output=True, text=True, stdin=subprocess.DEVNULL
            )
            if proc.returncode != 0:
                return f"exit {proc.returncode}: {proc.stderr.strip()[:120]}"
            return None if needle in proc.stdout else f"wrong content: {needle!r} not on the screen"

        return ask

    def no_connection() -> None:
        return None

    again = b.tmux.reconnect
    return [
        Probe(
            "tmux -C capture-pane (idle pane)",
            "other",
            [load.read_idle],
            control(f"capture-pane -p -t {idle.pane_id}", screen(SCREEN_NEEDLE)),
            again,
        ),
        Probe(
            "tmux -C capture-pane (flooded pane)",
            "other",
            [load.read_flood],
            control(f"capture-pane -p -t {flooded.pane_id}", screen(FLOOD_NEEDLE)),
            again,
        ),
        Probe(
            "tmux capture-pane, new client (idle pane)",
            "other",
            [load.read_idle_new],
            new_client(idle, SCREEN_NEEDLE),
            no_connection,
        ),
        Probe(
            "tmux capture-pane, new client (flooded pane)",
            "other",
            [load.read_flood_new],
            new_client(flooded, FLOOD_NEEDLE),
            no_connection,
        ),
        Probe(
            "tmux -C list-panes -a",
            "other",
            [load.snapshot],
            control("list-panes -a", listing),
            again,
        ),
    ]


# --------------------------------------------------------------------------- concurrent exec


async def _exec_tokens(
    port: int, token: str, target: dict[str, int], n: int, tag: str
) -> tuple[float, list[str]]:
    """N connections at once, each `pane.exec echo tok-TAG-i`; return wall ms and problems."""

    async def one(i: int) -> str | None:
        expect = f"tok-{tag}-{i}"
        params = {**target, "argv": ["echo", expect]}
        response = await one_request(port, token, i, "pane.exec", params, EXEC_REQUEST_TIMEOUT_S)
        if isinstance(response, str):
            return response
        problem = _envelope_problem(response)
        if problem is not None:
            return problem
        result = response["result"]
        if response.get("id") != i:
            return f"answer to request {response.get('id')} on the connection of request {i}"
        if result.get("exit_code") != 0 or result.get("timed_out"):
            return f"exit_code {result.get('exit_code')}, timed_out {result.get('timed_out')}"
        if result.get("stdout") != expect + "\n" or result.get("stderr"):
            out, err = str(result.get("stdout"))[:60], str(result.get("stderr"))[:60]
            return f"wrong output: stdout {out!r} stderr {err!r}, expected {expect!r}"
        return None

    start = time.perf_counter()
    outcomes = await asyncio.gather(*(one(i) for i in range(n)))
    return _ms(start), [o for o in outcomes if o is not None]


async def _echo_floor(n: int, tag: str) -> tuple[float, list[str]]:
    """`asyncio.create_subprocess_exec("echo", tok)` x N, every output read and checked."""

    async def one(i: int) -> str | None:
        expect = f"tok-{tag}-{i}"
        proc = await asyncio.create_subprocess_exec(
            "echo",
            expect,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate()
        if proc.returncode != 0 or out != (expect + "\n").encode() or err:
            return f"floor echo -> {proc.returncode}: {out[:60]!r}"
        return None

    start = time.perf_counter()
    outcomes = await asyncio.gather(*(one(i) for i in range(n)))
    return _ms(start), [o for o in outcomes if o is not None]


def _exec_burst(load: Load, side: str, rep: int) -> None:
    """One burst of `load_exec` concurrent calls (Pebrel) or children (the floor), all checked."""
    b, row, n = load.bench, load.exec_row, load.run.config.load_exec
    assert load.idle_p is not None
    tag = f"{rep}{side[0]}{secrets.token_hex(3)}"
    label = f"Pebrel {n} concurrent pane.exec" if side == "pebrel" else f"asyncio floor echo x {n}"
    burst: Burst = (
        _exec_tokens(b.pebrel.port, b.pebrel.token, load.idle_p.target, n, tag)
        if side == "pebrel"
        else _echo_floor(n, tag)
    )
    try:
        elapsed, problems = asyncio.run(asyncio.wait_for(burst, EXEC_REQUEST_TIMEOUT_S + 30.0))
    except Exception as exc:
        problems = [f"the burst failed: {type(exc).__name__}: {exc}"] * n
    else:
        row.add(side, elapsed)
    for index in range(n):
        row.count(side, index < len(problems))
    for problem in problems:
        load.failure([row], f"{label}: {problem}")
    if side == "pebrel":
        load.exec_correct.append(n - len(problems))
        if problems:
            log(f"  {len(problems)}/{n} pane.exec wrong or failed (first: {problems[0]})")


def _exec_bursts(load: Load, rep: int) -> None:
    """A Pebrel burst and a floor burst, alternating which goes first across repetitions."""
    for side in ["pebrel", "other"] if rep % 2 == 0 else ["other", "pebrel"]:
        _exec_burst(load, side, rep)


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
        for window_id in windows:
            with contextlib.suppress(Exception), deadline(30.0):
                b.pebrel.close_window(window_id)
        watch.lap("close")
        _wait_quiet(load, "Pebrel", b.pebrel.processes)
        watch.lap("quiet")
        watch.log()


def _tmux_turn(load: Load, rep: int) -> None:
    b, cfg = load.bench, load.run.config
    windows: list[str] = []
    watch = Stopwatch("tmux", rep)
    try:
        with deadline(SETUP_TIMEOUT_S):
            flooded: list[TmuxPane] = []
            for _ in range(cfg.load_panes):
                pane = b.tmux.new_window()
                windows.append(pane.window_id)
                flooded.append(pane)
            watch.lap("open")
            for pane in flooded:
                b.tmux.send(pane, _loop_command(load.path))
            for pane in flooded:
                poll_text(functools.partial(b.tmux.capture, pane), FLOOD_NEEDLE)
        cats = _wait_for_cats(load, "tmux", cfg.load_panes)
        time.sleep(WARMUP_S)
        watch.lap("flood up")
        timing = _measure(load, _tmux_probes(load, flooded[0]))
        watch.lap("measure")
        procs = _tmux_processes(load)
        _turn_note(load, "tmux", rep, timing, cats)
        load.turns[-1] += f", server + shells USS {_uss_mib(procs):.0f} MiB"
    finally:
        for window_id in windows:
            with contextlib.suppress(Exception), deadline(30.0):
                b.tmux.kill_window(window_id)
        watch.lap("close")
        _wait_quiet(load, "tmux", lambda: _tmux_processes(load))
        watch.lap("quiet")
        watch.log()


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
