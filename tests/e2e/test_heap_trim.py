"""Pane workers and the router hand their free heap pages back after busy spells, and idle
ones do nothing (#15).

The trimming itself (``pebrel/heaptrim.py``) is pinned in tests/unit/test_heaptrim.py; this
proves a real worker and the router run it: with tests/inject/counted_heap_trims.py (a 0.2 s
interval, each trim noted in the data dir) a pane that prints trims, and a quiet pane stops
trimming; the router trims after requests, and stops once no request or worker fact comes.
"""

from __future__ import annotations

import platform
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.conftest import (
    Runtime,
    assert_never,
    at_prompt,
    base_env,
    inject_env,
    started_runtime,
    wait_for,
)
from tests.inject.counted_heap_trims import LOG_NAME

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's"),
]


@pytest.fixture
def trim_runtime(tmp_path: Path) -> Iterator[Runtime]:
    with started_runtime({**base_env(tmp_path), **inject_env("counted_heap_trims")}) as rt:
        yield rt


def _trims(rt: Runtime, pid: int) -> int:
    log = rt.data_dir / LOG_NAME
    if not log.exists():
        return 0
    return sum(1 for line in log.read_text().split() if int(line) == pid)


def _quiet(rt: Runtime, pid: int, what: str) -> None:
    """Wait until ``pid``'s trim count holds for 0.5 s (2.5 intervals), then check that it
    holds for ten intervals more."""
    seen = [-1]

    def unchanged() -> bool:
        now = _trims(rt, pid)
        same, seen[0] = now == seen[0], now
        return same

    wait_for(unchanged, 10, f"the trims to stop once {what} is quiet", interval_s=0.5)
    assert_never(lambda: _trims(rt, pid) > seen[0], 2.0, f"a quiet {what}: ten intervals, no trim")


def test_a_pane_worker_trims_after_output_and_not_while_quiet(trim_runtime: Runtime) -> None:
    rt = trim_runtime
    at_prompt(rt)
    worker = psutil.Process(rt.pane(1)["pid"]).ppid()
    before = _trims(rt, worker)
    rt.run(1, "seq 50000")
    wait_for(lambda: _trims(rt, worker) > before, 10, "a trim after the pane's output")
    # The prompt after the run (output, a mark, the shell back in the foreground) may still
    # make the worker busy; once a count holds the pane is quiet.
    _quiet(rt, worker, "pane")


def test_the_router_trims_after_requests_and_not_while_idle(trim_runtime: Runtime) -> None:
    rt = trim_runtime
    at_prompt(rt)
    router = rt.pid
    _quiet(rt, router, "router")  # the start's own work is done
    before = _trims(rt, router)
    rt.run(1, "true")  # a request, and the worker's facts of the command
    wait_for(lambda: _trims(rt, router) > before, 10, "a trim of the router after a request")
    _quiet(rt, router, "router")
