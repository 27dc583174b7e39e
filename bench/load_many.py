"""Many readers under load: 16 panes flood while 4 clients at once read random flooded panes.

Each side takes its own turn (never both at once: the machine may have two cores), as in the
under-load phase (bench/load.py), whose flood it reuses: a turn opens 16 windows of 80x24, types
`while :; do cat FILE; done` into each (FILE: the same 50 MB of plain text), waits until every
pane shows it and 16 `cat`s run at once, plus a lead-in of 2 s. Then 4 client processes, each on
its own connection, start together and for 15 s alternate a read of a random one of the 16
flooded panes and the runtime-wide listing (bench/many_clients.py). Pebrel: `pane.read lines=24`
and `runtime.snapshot` over persistent connections. tmux: `capture-pane -p` and `list-panes -a`,
once as a new client process per request and once over 4 persistent `tmux -C` control clients
(two measuring windows of the same turn, their order alternating across repetitions). The turn
then closes its windows and waits until the flood is gone and the side idle. The side that goes
first alternates across repetitions.

A read fails on an error, a lost connection, no answer within 10 s, or a screen without the
flood's text; a listing fails on an error or when a flooded pane is missing from it. Every
request enters the latencies, a timed-out one at its deadline. The age of the screen each
Pebrel `pane.read` answered with (from its `screen_captured_at` to the answer's arrival) goes to
the notes as p50 and p99.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import queue
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.queues import Queue
from pathlib import Path
from typing import Any

import psutil

from bench import data
from bench.common import BenchError, deadline
from bench.harness import Bench
from bench.load import SETUP_TIMEOUT_S, Stopwatch, _end_turn
from bench.load_flood import (
    FLOOD_NEEDLE,
    _cats,
    _flood_tmux,
    _loop_command,
    _tmux_processes,
    _wait_for_cats,
)
from bench.many_clients import Outcome, Spec, client_main
from bench.pebrel_side import PebrelPane
from bench.run import MB, Run, log, poll_text
from bench.stats import Row, percentile
from bench.view_page import ViewPage, open_view

#: How long the client processes may take to connect and say they are ready.
READY_TIMEOUT_S = 60.0


@dataclass
class Many:
    """The phase's state: its rows, the flood file, and what the turns saw."""

    run: Run
    read_new: Row
    read_ctl: Row
    snapshot: Row
    read_view: Row
    path: Path
    tmux_server: int = 0
    reasons: dict[str, Counter[str]] = field(default_factory=dict)  # by row key
    turns: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    ages: list[float] = field(default_factory=list)  # age of the screens Pebrel's reads showed
    ctl_lists: list[float] = field(default_factory=list)  # tmux -C list-panes -a, ms
    ctl_list_failures: Counter[str] = field(default_factory=Counter)
    #: Pebrel's CPU seconds per measuring window, without and with a view open (#21).
    cpu: dict[str, list[float]] = field(default_factory=dict)
    view_notes: list[str] = field(default_factory=list)

    @property
    def bench(self) -> Bench:
        return self.run.bench

    def rows(self) -> list[Row]:
        return [self.read_new, self.read_ctl, self.snapshot, self.read_view]

    def problem(self, text: str) -> None:
        self.problems.append(text)
        log(f"  {text}")


# --------------------------------------------------------------------------- the clients


def _run_clients(many: Many, specs: list[Spec]) -> tuple[list[Outcome], float]:
    """Start one process per client, let them go together, collect what each saw; return the
    outcomes and the machine's CPU busy % over the measuring window. Every process is ended."""
    ctx = multiprocessing.get_context("fork")
    results: Queue[Any] = ctx.Queue()
    go = ctx.Event()
    procs = [ctx.Process(target=client_main, args=(spec, results, go)) for spec in specs]
    outcomes: dict[int, Outcome] = {}
    try:
        for proc in procs:
            proc.start()
        ready = 0
        end = time.monotonic() + READY_TIMEOUT_S
        while ready < len(specs):
            index, status, payload = results.get(timeout=max(0.1, end - time.monotonic()))
            if status != "ready":
                raise BenchError(f"a client did not start: {payload}")
            ready += 1
        psutil.cpu_percent(None)
        go.set()
        spec = specs[0]
        end = time.monotonic() + spec.seconds + spec.timeout_s + 30.0
        while len(outcomes) < len(specs):
            index, status, payload = results.get(timeout=max(0.1, end - time.monotonic()))
            if status != "done":
                raise BenchError(f"a client failed: {payload}")
            outcomes[index] = payload
        busy = psutil.cpu_percent(None)
    except queue.Empty as exc:
        raise BenchError(f"{len(specs) - len(outcomes)} clients gave no answer in time") from exc
    finally:
        go.set()  # a client still waiting for the go ends after its window instead of hanging
        for proc in procs:
            proc.join(timeout=30.0 if outcomes else 0.5)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=5.0)
        results.close()
    return [outcomes[i] for i in sorted(outcomes)], busy


def _keep(
    many: Many, rows: list[Row], side: str, latencies: list[float], failed: list[str]
) -> None:
    """Add the latencies of one kind of request to the rows, with their failures counted."""
    for row in rows:
        for value in latencies:
            row.add(side, value)
        for index in range(len(latencies)):
            row.count(side, index < len(failed))
        counter = many.reasons.setdefault(row.key, Counter())
        counter.update(failed)


def _measure(
    many: Many, specs: list[Spec], reads: list[Row], lists: list[Row] | None, side: str
) -> str:
    """One measuring window of a side's clients; return a line for the turn's note. Lists
    go to ``lists``, to the notes when it is empty (tmux -C), nowhere when it is None."""
    outcomes, busy = _run_clients(many, specs)
    all_reads = [v for o in outcomes for v in o.reads]
    all_lists = [v for o in outcomes for v in o.lists]
    read_failed = [f for o in outcomes for f in o.read_failures]
    list_failed = [f for o in outcomes for f in o.list_failures]
    _keep(many, reads, side, all_reads, read_failed)
    if lists:
        _keep(many, lists, side, all_lists, list_failed)
    elif lists is not None:  # tmux -C list-panes: no row of its own, reported in the notes
        many.ctl_lists.extend(all_lists)
        many.ctl_list_failures.update(list_failed)
        many.ctl_list_failures["(requests)"] += len(all_lists)
    many.ages.extend(age for o in outcomes for age in o.ages)
    per_client = "/".join(str(len(o.reads) + len(o.lists)) for o in outcomes)
    return f"{specs[0].kind} clients: {per_client} requests, CPU {busy:.0f}% busy"


def _specs(many: Many, kind: str, **where: Any) -> list[Spec]:
    cfg = many.run.config
    return [
        Spec(
            kind=kind,
            index=index,
            seconds=cfg.many_measure_s,
            timeout_s=cfg.load_request_timeout_s,
            needle=FLOOD_NEEDLE,
            **where,
        )
        for index in range(cfg.many_clients)
    ]


# --------------------------------------------------------------------------- the two turns


def _flood_up(many: Many, who: str, watch: Stopwatch) -> int:
    cfg = many.run.config
    cats = _wait_for_cats(many, who, cfg.load_panes)
    time.sleep(cfg.many_lead_s)
    watch.lap("flood up")
    return cats


def _cpu_s(processes: list[psutil.Process]) -> float:
    total = 0.0
    for proc in processes:
        with contextlib.suppress(psutil.Error):
            times = proc.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
    return total


def _pebrel_turn(many: Many, rep: int, with_view: bool = False) -> None:
    b, cfg = many.bench, many.run.config
    windows: list[int] = []
    who = "Pebrel+view" if with_view else "Pebrel"
    watch = Stopwatch(who, rep)
    page: ViewPage | None = None
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
                b.pebrel.prompt(pane, _loop_command(many.path))
            for pane in flooded:
                poll_text(functools.partial(b.pebrel.read, pane, 5), FLOOD_NEEDLE)
        if with_view:
            page = open_view(b.pebrel)
        cats = _flood_up(many, who, watch)
        targets = [(pane.window_id, pane.pane_id) for pane in flooded]
        specs = _specs(
            many, "pebrel", pebrel_targets=targets, port=b.pebrel.port, token=b.pebrel.token
        )
        runtime = [p for p in b.pebrel.processes() if page is None or p.pid != page.proc.pid]
        cpu_before, view_before, frames_before = _cpu_s(runtime), 0.0, 0
        if page is not None:
            view_before, frames_before = page.cpu_s(), page.frames
        started = time.monotonic()
        if with_view:
            line = _measure(many, specs, [many.read_view], None, "pebrel")
        else:
            line = _measure(many, specs, [many.read_new, many.read_ctl], [many.snapshot], "pebrel")
        window_s = time.monotonic() - started
        many.cpu.setdefault(who, []).append(_cpu_s(runtime) - cpu_before)
        if page is not None:
            frames = page.frames - frames_before
            line += (
                f"; the view: {frames / window_s:.1f} frames/s to its page, "
                f"{page.cpu_s() - view_before:.1f} s CPU of its own"
            )
            many.view_notes.extend(page.errors)
        watch.lap("measure")
        many.turns.append(f"{who} turn {rep + 1}: {cats} `cat`s seen at once; {line}")
    finally:
        if page is not None:
            page.close()
        _end_turn(many, watch, who, b.pebrel.close_window, windows, b.pebrel.processes)


def _tmux_turn(many: Many, rep: int) -> None:
    b, cfg = many.bench, many.run.config
    windows: list[str] = []
    watch = Stopwatch("tmux", rep)
    try:
        with deadline(SETUP_TIMEOUT_S):
            flooded = _flood_tmux(b, cfg.load_panes, many.path, windows, lambda: watch.lap("open"))
        cats = _flood_up(many, "tmux", watch)
        where: dict[str, Any] = {
            "tmux_panes": [pane.pane_id for pane in flooded],
            "tmux_base": list(b.tmux.base),
            "tmux_env": dict(b.tmux.env),
        }
        lines = []
        for kind in ["tmux", "tmux-c"] if rep % 2 == 0 else ["tmux-c", "tmux"]:
            if kind == "tmux":
                reads, lists = [many.read_new, many.read_view], [many.snapshot]
            else:
                reads, lists = [many.read_ctl], []
            lines.append(_measure(many, _specs(many, kind, **where), reads, lists, "other"))
            watch.lap(f"measure {kind}")
        many.turns.append(f"tmux turn {rep + 1}: {cats} `cat`s seen at once; {'; '.join(lines)}")
    finally:
        _end_turn(many, watch, "tmux", b.tmux.kill_window, windows, lambda: _tmux_processes(many))


# --------------------------------------------------------------------------- the phase


def _rows(run: Run) -> Many:
    cfg = run.config
    scene = f"many readers ({cfg.load_panes} panes flood, {cfg.many_clients} clients, random pane)"
    clients = f"{cfg.many_clients} persistent control clients"
    table = [
        ("read_new", "`pane.read`", "tmux capture-pane (new client)"),
        ("read_ctl", "`pane.read`", f"tmux -C capture-pane ({clients})"),
        ("snapshot", "`runtime.snapshot`", "tmux list-panes -a (new client)"),
        ("read_view", "`pane.read` with `pebrel view` open", "tmux capture-pane (new client)"),
    ]
    rows = {
        name: run.row(
            f"many_{name}",
            f"{scene}: {what} vs {comparator}",
            "ms",
            comparator,
            tail_percentile=99.0,
            ratio_of_tails=True,
        )
        for name, what, comparator in table
    }
    return Many(
        run=run,
        read_new=rows["read_new"],
        read_ctl=rows["read_ctl"],
        snapshot=rows["snapshot"],
        read_view=rows["read_view"],
        path=run.bench.files / "flood.txt",
    )


def _tails(values: list[float]) -> str:
    if not values:
        return "-"
    return "/".join(f"{percentile(values, q):.1f}" for q in (50.0, 95.0, 99.0)) + " ms"


def _row_note(row: Row) -> str:
    mine = [v for rep in row.pebrel for v in rep]
    theirs = [v for rep in row.other for v in rep]
    parts = [f"p50/p95/p99 pooled: Pebrel {_tails(mine)}, comparator {_tails(theirs)}"]
    a, b = row.summary("pebrel"), row.summary("other")
    if a is not None and b is not None and b.median > 0:
        parts.append(f"ratio of the medians {a.median / b.median:.2f}x")
    return "; ".join(parts)


def _write_notes(many: Many) -> None:
    cfg = many.run.config
    flood = (
        f"{cfg.many_reps} repetitions; each turn floods {cfg.load_panes} new 80x24 windows with "
        f"`while :; do cat FILE; done` (FILE: {many.path.stat().st_size / MB:.1f} MB of plain "
        f"text), {cfg.many_lead_s:g} s lead-in, then {cfg.many_clients} client processes for "
        f"{cfg.many_measure_s:g} s while the other side is idle"
    )
    for row in many.rows():
        row.note = _row_note(row)
    many.read_new.note = "; ".join([flood, many.read_new.note, *many.turns, *many.problems])
    plain, viewed = many.read_new.summary("pebrel"), many.read_view.summary("pebrel")
    if plain is not None and viewed is not None and plain.median > 0:
        many.read_view.note += (
            f"; Pebrel's p99 with the view open / without it (the same run's `pane.read` row): "
            f"{viewed.median / plain.median:.2f}x"
        )
    for who, seconds in sorted(many.cpu.items()):
        per_window = "/".join(f"{value:.1f}" for value in seconds)
        many.read_view.note += f"; {who}: runtime CPU per measuring window {per_window} s"
    many.read_view.note += "".join(f"; view stream: {error}" for error in many.view_notes)
    if many.ages:
        ages = (
            "age of the screens Pebrel's reads answered with (ms since `screen_captured_at`): "
            f"p50 {percentile(many.ages, 50.0):.0f}, p99 {percentile(many.ages, 99.0):.0f} "
            f"({len(many.ages)} reads)"
        )
        for row in (many.read_new, many.read_ctl):
            row.note += f"; {ages}"
    if many.ctl_lists:
        total = many.ctl_list_failures.pop("(requests)", 0)
        failed = sum(many.ctl_list_failures.values())
        many.snapshot.note += (
            f"; tmux -C list-panes -a ({cfg.many_clients} control clients, the same turns): "
            f"p50/p95/p99 {_tails(many.ctl_lists)}, failed {failed} of {total}"
        )
        many.reasons.setdefault(many.snapshot.key, Counter()).update(
            {f"tmux -C: {reason}": n for reason, n in many.ctl_list_failures.items()}
        )
    for row in many.rows():
        reasons = many.reasons.get(row.key, Counter()).most_common(8)
        if reasons:
            failed_text = "; ".join(f"{count} x {reason}" for reason, count in reasons)
            row.note += f"; failed requests: {failed_text}"


def many_readers(run: Run) -> None:
    b, cfg = run.bench, run.config
    many = _rows(run)

    def prepare() -> bool:
        many.path.write_bytes(data.plain_text(cfg.load_bytes))
        many.tmux_server = b.tmux.server_pid()
        return True

    try:
        if not run.setup(many.rows(), "flood file", prepare):
            return
        turns: list[tuple[str, Callable[[Many, int], None]]] = [
            ("Pebrel", _pebrel_turn),
            ("tmux", _tmux_turn),
            ("Pebrel+view", functools.partial(_pebrel_turn, with_view=True)),
        ]
        for rep in range(cfg.many_reps):
            for row in many.rows():
                row.start_rep()
            for who, turn in turns[rep % 3 :] + turns[: rep % 3]:
                try:
                    turn(many, rep)
                except Exception as exc:
                    reason = f"{who} turn {rep + 1}: {type(exc).__name__}: {exc}"
                    log(f"  {reason}")
                    for row in many.rows():
                        row.fail(reason)
                    run.recover()
            log(f"  many rep {rep + 1}/{cfg.many_reps}")
    finally:
        for proc in _cats(many.path):
            with contextlib.suppress(psutil.Error):
                proc.kill()
        if many.path.exists():
            _write_notes(many)
        many.path.unlink(missing_ok=True)
