"""Rows of the results table and the statistics over their interleaved repetitions."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    pos = (len(ordered) - 1) * q / 100.0
    low = math.floor(pos)
    high = math.ceil(pos)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


@dataclass
class Summary:
    """One side of a row: median of the per-repetition medians, tail percentile, spread."""

    median: float
    tail: float
    low: float
    high: float
    samples: int
    reps: int


def summarise(reps: list[list[float]], tail_q: float) -> Summary | None:
    rep_medians = [statistics.median(rep) for rep in reps if rep]
    pooled = [value for rep in reps for value in rep]
    if not rep_medians:
        return None
    tail = percentile(pooled, tail_q)
    return Summary(
        median=statistics.median(rep_medians),
        tail=tail,
        low=min(rep_medians),
        high=max(rep_medians),
        samples=len(pooled),
        reps=len(rep_medians),
    )


@dataclass
class Row:
    """One line of the table: a Pebrel figure next to its comparator (or alone)."""

    key: str
    what: str
    unit: str
    comparator: str | None
    higher_is_better: bool = False
    #: The percentile shown as the bad tail; None: p95 of a cost, p5 of a throughput.
    tail_percentile: float | None = None
    #: Compare the tails (e.g. p99 / p99) instead of the medians.
    ratio_of_tails: bool = False
    pebrel: list[list[float]] = field(default_factory=list)
    other: list[list[float]] = field(default_factory=list)
    #: Requests tried and failed per side ("pebrel" / "other"), for rows that count failures
    #: instead of ending at the first one.
    attempts: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    note: str = ""

    @property
    def tail_q(self) -> float:
        if self.tail_percentile is not None:
            return self.tail_percentile
        return 5.0 if self.higher_is_better else 95.0

    def start_rep(self) -> None:
        self.pebrel.append([])
        self.other.append([])

    def add(self, side: str, value: float) -> None:
        if not self.pebrel:
            self.start_rep()
        (self.pebrel if side == "pebrel" else self.other)[-1].append(value)

    def count(self, side: str, failed: bool) -> None:
        """Count one request of `side`; a failed one is reported, it does not end the row."""
        self.attempts[side] = self.attempts.get(side, 0) + 1
        self.failures[side] = self.failures.get(side, 0) + int(failed)

    def fail(self, reason: str) -> None:
        if self.error is None:
            self.error = reason

    @property
    def failed(self) -> bool:
        return self.error is not None

    def summary(self, side: str) -> Summary | None:
        return summarise(self.pebrel if side == "pebrel" else self.other, self.tail_q)

    def ratios(self) -> list[float]:
        """Pebrel / comparator of each repetition's medians (or tails), both sides present."""
        out = []
        for mine, theirs in zip(self.pebrel, self.other, strict=False):
            if mine and theirs:
                if self.ratio_of_tails:
                    numerator = percentile(mine, self.tail_q)
                    denominator = percentile(theirs, self.tail_q)
                else:
                    numerator = statistics.median(mine)
                    denominator = statistics.median(theirs)
                if denominator > 0:
                    out.append(numerator / denominator)
        return out
