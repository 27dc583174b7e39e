"""What the two sides and every phase share: the pane geometry (80x24) and history size both
sides get, the two exceptions of a measurement (it timed out; it could not be taken),
`deadline()`, the SIGALRM limit that every sample, setup and request of the run goes under,
`poll()`, a wait on a predicate, and `run_command()`, how both sides run their command line."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

COLS = 80
ROWS = 24
HISTORY_LINES = 10_000


class MeasurementTimeout(Exception):
    """A measurement ran past its deadline."""


class BenchError(Exception):
    """A measurement could not be taken; the message says why."""


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise MeasurementTimeout("timed out")


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise MeasurementTimeout in the main thread once `seconds` have passed (SIGALRM)."""
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def poll(predicate: Any, timeout_s: float, what: str, interval_s: float = 0.01) -> Any:
    end = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < end:
        last = predicate()
        if last:
            return last
        time.sleep(interval_s)
    raise BenchError(f"timed out after {timeout_s:g}s waiting for {what}")


def run_command(
    argv: list[str], env: dict[str, str], cwd: Path, timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run a side's command line to the end: no stdin, output captured as text."""
    return subprocess.run(
        argv,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
