"""The soak's arithmetic and its summary: least-squares slopes after a warm-up, the verdict
against the targets (no error, memory growth under 1 MiB/hour per process, fd count flat),
the per-minute line, and the markdown summary. Pure functions of the recorded samples, so the
unit tests can check them without a runtime (tests/unit/test_soak_report.py)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

#: The targets of issue 15 item 3.
MEMORY_LIMIT_MIB_PER_HOUR = 1.0
#: "fd count flat": the fitted growth over the measured window stays under this many fds.
FD_GROWTH_LIMIT = 2.0
MIB = 1024 * 1024


def slope(points: Sequence[tuple[float, float]]) -> float | None:
    """Least-squares slope of (x, y) points; None with fewer than 2 distinct x values."""
    if len(points) < 2:
        return None
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    sxx = sum((x - mean_x) ** 2 for x, _ in points)
    if sxx == 0:
        return None
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in points)
    return sxy / sxx


def warmup_s(duration_s: float, warmup_minutes: float | None = None) -> float:
    """The part of a run left out of the slopes: given, else 5 min or 20 % of a short run."""
    if warmup_minutes is not None:
        return warmup_minutes * 60
    return min(300.0, 0.2 * duration_s)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), nearest rank; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass
class Series:
    """One quantity over time: (seconds since the start, value)."""

    name: str
    unit: str
    points: list[tuple[float, float]] = field(default_factory=list)

    def add(self, t: float, value: float) -> None:
        self.points.append((t, value))

    def after(self, start_s: float) -> list[tuple[float, float]]:
        return [(t, v) for t, v in self.points if t >= start_s]

    def per_hour(self, start_s: float) -> float | None:
        """Slope in unit/hour over the samples at or after start_s."""
        return slope([(t / 3600, v) for t, v in self.after(start_s)])


@dataclass
class Check:
    """One line of the verdict."""

    what: str
    value: str
    target: str
    passed: bool | None  # None: not enough samples to tell


def _fitted(series: Sequence[Series], start_s: float) -> list[tuple[float, Series]]:
    """(slope per hour, series) of every series with enough samples after start_s."""
    out = []
    for one in series:
        rate = one.per_hour(start_s)
        if rate is not None:
            out.append((rate, one))
    return out


def memory_check(name: str, series: Sequence[Series], start_s: float) -> Check:
    """The worst memory slope among `series` (one per process of a kind) against the limit."""
    target = f"< {MEMORY_LIMIT_MIB_PER_HOUR:g} MiB/h"
    fitted = _fitted(series, start_s)
    if not fitted:
        return Check(name, "n/a", target, None)
    worst, which = max(fitted, key=lambda pair: pair[0])
    value = f"{worst:+.2f} MiB/h"
    if len(fitted) > 1:
        mean = sum(rate for rate, _ in fitted) / len(fitted)
        value += f" (worst of {len(fitted)}: {which.name}; mean {mean:+.2f})"
    return Check(name, value, target, worst < MEMORY_LIMIT_MIB_PER_HOUR)


def fd_check(name: str, series: Sequence[Series], start_s: float) -> Check:
    """The worst fitted fd growth over the measured window among `series`."""
    target = f"flat (fitted growth < {FD_GROWTH_LIMIT:g})"
    grown: list[tuple[float, float, Series]] = []
    for rate, one in _fitted(series, start_s):
        window = one.after(start_s)
        grown.append((rate * (window[-1][0] - window[0][0]) / 3600, rate, one))
    if not grown:
        return Check(name, "n/a", target, None)
    growth, rate, which = max(grown, key=lambda triple: triple[0])
    values = [v for _, v in which.after(start_s)]
    value = f"{rate:+.1f} fd/h ({min(values):.0f}..{max(values):.0f}, fitted {growth:+.1f})"
    if len(grown) > 1:
        value += f", worst of {len(grown)}: {which.name}"
    return Check(name, value, target, growth < FD_GROWTH_LIMIT)


def verdict(
    errors: int,
    memory: Mapping[str, Sequence[Series]],
    fds: Mapping[str, Sequence[Series]],
    start_s: float,
) -> list[Check]:
    """Errors, then one memory check per entry of `memory` and one fd check per entry of `fds`
    (name -> the series of each process of that kind)."""
    checks = [Check("errors", str(errors), "0", errors == 0)]
    checks.extend(memory_check(name, group, start_s) for name, group in memory.items())
    checks.extend(fd_check(name, group, start_s) for name, group in fds.items())
    return checks


def passed(checks: Sequence[Check]) -> bool:
    """Every check passed; a check without enough samples fails the run."""
    return all(check.passed is True for check in checks)


def _mark(check: Check) -> str:
    return {True: "pass", False: "**FAIL**", None: "n/a"}[check.passed]


def minute_line(
    minute: int, rps: float, errors: int, p99: Mapping[str, float], kinds: Mapping[str, str]
) -> str:
    """The one-line progress report of a minute (stderr)."""
    slowest = sorted(p99.items(), key=lambda kv: -kv[1])[:3]
    tail = ", ".join(f"{m} {ms:.0f}" for m, ms in slowest)
    mem = "; ".join(f"{k} {v}" for k, v in kinds.items())
    return f"minute {minute}: {rps:.1f} req/s, errors {errors}, p99 ms {tail} | {mem}"


@dataclass
class Summary:
    """What the markdown summary is made of."""

    header: str
    duration_s: float
    warmup_s: float
    requests: int
    errors: int
    methods: Mapping[str, tuple[int, float, float]]  # count, p50 ms, p99 ms
    checks: Sequence[Check]
    first_errors: Sequence[str]
    notes: Sequence[str]
    last_sample: Mapping[str, str]


def markdown(summary: Summary) -> str:
    verdict_word = "PASS" if passed(summary.checks) else "FAIL"
    rate = summary.requests / summary.duration_s if summary.duration_s > 0 else 0.0
    lines = [
        "## Soak",
        "",
        summary.header,
        "",
        f"**{verdict_word}**: {summary.duration_s / 60:.1f} min, {summary.requests} requests "
        f"({rate:.1f}/s), {summary.errors} errors; slopes fitted after a "
        f"{summary.warmup_s / 60:.1f} min warm-up.",
        "",
        "| check | measured | target | result |",
        "|---|---|---|---|",
    ]
    lines.extend(f"| {c.what} | {c.value} | {c.target} | {_mark(c)} |" for c in summary.checks)
    lines += ["", "| method | requests | p50 ms | p99 ms |", "|---|---|---|---|"]
    for method, (count, p50, p99) in sorted(summary.methods.items()):
        lines.append(f"| {method} | {count} | {p50:.1f} | {p99:.1f} |")
    if summary.last_sample:
        lines += ["", "Last sample (RSS / USS MiB, fds, threads):", ""]
        lines.extend(f"- {kind}: {text}" for kind, text in summary.last_sample.items())
    if summary.first_errors:
        lines += ["", "First errors:", ""]
        lines.extend(f"- {text}" for text in summary.first_errors)
    if summary.notes:
        lines += ["", "Notes:", ""]
        lines.extend(f"- {text}" for text in summary.notes)
    return "\n".join(lines) + "\n"
