"""The soak's arithmetic (bench/soak_report.py): slopes, warm-up, percentiles and the verdict.

`bench` lives in the clone, which the tests keep off sys.path (tests/__init__.py); its
soak_report module uses the standard library only, so it is loaded from its file.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest


def _load() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "bench" / "soak_report.py"
    spec = importlib.util.spec_from_file_location("bench_soak_report", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


if TYPE_CHECKING:
    from bench import soak_report
else:
    soak_report = _load()
Series = soak_report.Series

pytestmark = pytest.mark.timeout(10)


def line(name: str, per_hour: float, start: float = 10.0, noise: float = 0.0) -> Series:
    """A series sampled every 10 s for an hour, growing by `per_hour`, +-noise alternately."""
    series = Series(name, "MiB")
    for i in range(361):
        t = i * 10.0
        series.add(t, start + per_hour * t / 3600 + (noise if i % 2 else -noise))
    return series


def test_slope_is_least_squares() -> None:
    assert soak_report.slope([(0, 1), (1, 3), (2, 5)]) == pytest.approx(2.0)
    assert soak_report.slope([(0, 0), (1, 1), (2, 0), (3, 1)]) == pytest.approx(0.2)
    assert soak_report.slope([(1, 5)]) is None
    assert soak_report.slope([(1, 5), (1, 6)]) is None  # no spread in x


def test_per_hour_ignores_the_warm_up() -> None:
    series = Series("router USS", "MiB")
    for i in range(61):  # a 10 MiB ramp in the first 5 min, then flat
        t = i * 60.0
        series.add(t, 20 + min(t, 300) / 30)
    ramped = series.per_hour(0)
    assert ramped is not None and ramped > 1  # the ramp drags the slope up
    assert series.per_hour(300) == pytest.approx(0.0)


def test_warmup_default() -> None:
    assert soak_report.warmup_s(3600) == 300  # 5 min of an hour
    assert soak_report.warmup_s(120) == pytest.approx(24)  # 20 % of a short run
    assert soak_report.warmup_s(3600, warmup_minutes=2) == 120


def test_percentile_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert soak_report.percentile(values, 99) == 99
    assert soak_report.percentile(values, 50) == 50
    assert soak_report.percentile([7.0], 99) == 7
    assert math.isnan(soak_report.percentile([], 99))


def test_memory_check_takes_the_worst_process() -> None:
    flat, leaking = line("worker 1", 0.2, noise=0.3), line("worker 2", 1.5)
    check = soak_report.memory_check("pane worker USS", [flat, leaking], 300)
    assert check.passed is False
    assert check.value.startswith("+1.50 MiB/h") and "worker 2" in check.value
    assert soak_report.memory_check("router USS", [flat], 300).passed is True
    assert soak_report.memory_check("spare USS", [Series("spare", "MiB")], 300).passed is None


def test_fd_check_is_fitted_growth_over_the_window() -> None:
    # +1 fd/h over the 55 min after warm-up fits under the limit of 2; +3 fd/h does not.
    assert soak_report.fd_check("router fds", [line("router", 1.0, 40)], 300).passed is True
    assert soak_report.fd_check("router fds", [line("router", 3.0, 40)], 300).passed is False
    # Churn noise of +-3 fds around a flat count is still flat.
    assert soak_report.fd_check("router fds", [line("r", 0.0, 40, noise=3)], 300).passed


def test_verdict_and_summary() -> None:
    memory = {"router USS": [line("router", 0.1)]}
    fds = {"router fds": [line("router", 0.0, 40)]}
    checks = soak_report.verdict(0, memory, fds, 300)
    assert [c.what for c in checks] == ["errors", "router USS", "router fds"]
    assert soak_report.passed(checks)
    assert not soak_report.passed(soak_report.verdict(1, memory, fds, 300))
    assert not soak_report.passed(soak_report.verdict(0, {"spare USS": []}, {}, 300))
    summary = soak_report.Summary(
        "header",
        3600,
        300,
        1000,
        0,
        {"pane.read": (1000, 2.0, 9.5)},
        checks,
        [],
        ["a note"],
        {"router": "30/20 MiB"},
    )
    text = soak_report.markdown(summary)
    assert text.startswith("## Soak\n")
    assert "**PASS**: 60.0 min, 1000 requests (0.3/s), 0 errors" in text
    assert "| pane.read | 1000 | 2.0 | 9.5 |" in text
    assert "| errors | 0 | 0 | pass |" in text
    assert "- a note" in text
