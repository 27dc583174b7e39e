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


def summarise(reps: list[list[float]], higher_is_better: bool) -> Summary | None:
    rep_medians = [statistics.median(rep) for rep in reps if rep]
    pooled = [value for rep in reps for value in rep]
    if not rep_medians:
        return None
    # The tail is the bad end: p95 of a cost, p5 of a throughput.
    tail = percentile(pooled, 5.0 if higher_is_better else 95.0)
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
    pebrel: list[list[float]] = field(default_factory=list)
    other: list[list[float]] = field(default_factory=list)
    error: str | None = None
    note: str = ""

    def start_rep(self) -> None:
        self.pebrel.append([])
        self.other.append([])

    def add(self, side: str, value: float) -> None:
        if not self.pebrel:
            self.start_rep()
        (self.pebrel if side == "pebrel" else self.other)[-1].append(value)

    def fail(self, reason: str) -> None:
        if self.error is None:
            self.error = reason

    @property
    def failed(self) -> bool:
        return self.error is not None

    def summary(self, side: str) -> Summary | None:
        return summarise(self.pebrel if side == "pebrel" else self.other, self.higher_is_better)

    def ratios(self) -> list[float]:
        """Pebrel / comparator of each repetition's medians (both sides present)."""
        out = []
        for mine, theirs in zip(self.pebrel, self.other, strict=False):
            if mine and theirs:
                denominator = statistics.median(theirs)
                if denominator > 0:
                    out.append(statistics.median(mine) / denominator)
        return out
