"""What the under-load phase measures while a side floods: the timed requests of each side
(`Probe`: reads of the idle and the flooded pane, the runtime-wide listing; each counted and
timed, a failure kept with its reason), the cycle that runs them for the measuring window, and
the bursts of concurrent `pane.exec` with unique outputs next to the asyncio floor."""

from __future__ import annotations

import asyncio
import json
import secrets
import subprocess
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import psutil

from bench.common import BenchError, MeasurementTimeout, deadline
from bench.load_flood import FLOOD_NEEDLE, SCREEN_NEEDLE, Load
from bench.pebrel_side import PebrelPane
from bench.run import _ms, log
from bench.stats import Row
from bench.tmux_side import TmuxPane
from bench.wire import one_request

#: The pause after each timed request (a client polling, not a tight loop of its own).
GAP_S = 0.005
#: A turn gives up after this many timed-out requests in a row (the side is stuck).
MAX_TIMEOUTS_IN_A_ROW = 3
EXEC_REQUEST_TIMEOUT_S = 60.0
#: A burst of concurrent calls: its wall time in ms and what went wrong, one line per call.
Burst = Coroutine[Any, Any, tuple[float, list[str]]]


@dataclass
class Probe:
    """One kind of timed request of one side and the rows its samples go to."""

    label: str
    side: str  # "pebrel" or "other", as in Row
    rows: list[Row]
    ask: Callable[[], str | None]  # None when the answer is right, else what is wrong with it
    reconnect: Callable[[], None]


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
