"""The phases of many at once: 32 and 128 concurrent `pane.exec` (next to the asyncio floor),
`runtime.snapshot` with 64 panes (next to `list-panes -a`), and one change fanned out to 32
event subscribers (an absolute figure)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import secrets
import time

from bench.common import BenchError
from bench.pebrel_side import PebrelPane
from bench.run import MIB, Run, _ms, log
from bench.stats import Row
from bench.tmux_side import TmuxPane
from bench.wire import _request, one_request

# --------------------------------------------------------------------------- 6. concurrent exec


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

        run.sample_pairs(row, cfg.snapshots, p_once, t_once, "snapshot")
    finally:
        b.close_windows(pebrel_windows, tmux_windows)


# --------------------------------------------------------------------------- 8. fan-out


def _all_past(seen: list[list[tuple[float, int]]], base: int) -> bool:
    """Every subscriber has seen a revision after ``base``."""
    return all(any(r > base for _, r in events) for events in seen)


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
                await changed.wait_for(functools.partial(_all_past, seen, base))
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
