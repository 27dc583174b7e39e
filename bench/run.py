"""What every phase runs on: the run's sizes and repetitions (`Config`, full or --quick), the
run itself (`Run`: the bench, the rows, and how a sample is taken under a deadline, paired A/B
and recovered from), the progress log, and small helpers the phases share."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.common import BenchError, MeasurementTimeout, deadline
from bench.harness import Bench
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
    # Many readers (bench/load_many.py): `many_clients` client processes for `many_measure_s`.
    many_reps: int = 3
    many_clients: int = 4
    many_lead_s: float = 2.0
    many_measure_s: float = 15.0

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
                many_reps=reps or 1,
                many_measure_s=5.0,
            )
        return Config(reps=reps or 7, load_reps=reps or 4, many_reps=reps or 3)


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

    def pair(
        self, index: int, a: Callable[[], None], b: Callable[[], None], settle_s: float = 0.0
    ) -> None:
        """Run the two sides of one sample, alternating which goes first; ``settle_s``: a
        pause after each side, so what it set off (a process exiting, a spare being forked)
        is not timed against the other."""
        for step in (a, b) if index % 2 == 0 else (b, a):
            step()
            if settle_s:
                time.sleep(settle_s)

    def sample_pairs(
        self,
        row: Row,
        count: int,
        pebrel: Callable[[], float],
        other: Callable[[], float],
        what: str,
    ) -> None:
        """Every repetition: `count` paired samples of `row`, then a progress line."""
        for rep in range(self.config.reps):
            row.start_rep()
            for i in range(count):
                self.pair(
                    rep + i,
                    lambda: self.sample(row, "pebrel", pebrel),
                    lambda: self.sample(row, "other", other),
                )
            log(f"  {what} rep {rep + 1}/{self.config.reps}")

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


def poll_text(read: Callable[[], str], needle: str, timeout_s: float = 60.0) -> None:
    end = time.monotonic() + timeout_s
    while needle not in read():
        if time.monotonic() > end:
            raise BenchError(f"{needle!r} not seen within {timeout_s:g} s")
        time.sleep(POLL_S)
