"""`python -m bench fuzz [--minutes N] [--seed S] [-k EXPR]`: the fuzz tests for a time budget.

Runs tests/fuzz (the stateless protocol fuzz and the stateful state machine) with the `long`
hypothesis profile (tests/fuzz/conftest.py) in rounds, each with a freshly drawn seed, until
``--minutes`` (default 10) have passed; the round still running then is interrupted (SIGINT:
pytest stops its runtimes) and whatever of the runtimes it started is left is killed. A failing
round prints hypothesis's falsifying example and the command that replays the round's seed.
Exit status: 0 when every round passed (or was cut by the deadline), 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from bench.run import log

ROOT = Path(__file__).resolve().parent.parent
#: How long an interrupted round may take to stop its runtimes after each SIGINT (a second
#: one ends a teardown the first one interrupted), before it is killed.
STOP_GRACE_S = 45.0
INTERRUPTS = 2
#: pytest's exit status for a run interrupted by SIGINT.
INTERRUPTED = 2


def pytest_command(seed: int, basetemp: Path, select: str) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "pytest",
        "tests/fuzz",
        "-q",
        "-s",  # the stateful test's summary of answers
        "-p",
        "no:cacheprovider",
        f"--hypothesis-seed={seed}",
        f"--basetemp={basetemp}",
    ]
    return [*command, "-k", select] if select else command


def reproduce_line(seed: int, select: str) -> str:
    tail = f" -k '{select}'" if select else ""
    return (
        f"PEBREL_FUZZ_PROFILE=long python -m pytest tests/fuzz -p no:cacheprovider "
        f"--hypothesis-seed={seed}{tail}"
    )


def leftovers(basetemp: Path) -> list[psutil.Process]:
    """Processes of runtimes whose data dir is under ``basetemp`` (this round's)."""
    marker = f"PEBREL_DATA_DIR={basetemp}".encode()
    found = []
    for proc in psutil.process_iter(["pid"]):
        with (
            contextlib.suppress(OSError, psutil.Error),
            open(f"/proc/{proc.pid}/environ", "rb") as handle,
        ):
            if any(entry.startswith(marker) for entry in handle.read().split(b"\0")):
                found.append(proc)
    return found


def run_round(seed: int, basetemp: Path, select: str, deadline: float) -> int | None:
    """One pytest run; its exit status, or None when the deadline interrupted it."""
    env = {**os.environ, "PEBREL_FUZZ_PROFILE": "long"}
    # A child inherits an ignored SIGINT (a job started in the background by a
    # non-interactive shell has one), and then cannot be interrupted into its teardown:
    # handled here, it is the default again in the child.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    proc = subprocess.Popen(pytest_command(seed, basetemp, select), cwd=ROOT, env=env)
    try:
        return proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
    except subprocess.TimeoutExpired:
        log("time budget spent: interrupting the round")
        for _ in range(INTERRUPTS):
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=STOP_GRACE_S)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            log("the round did not stop: killed (its runtimes' processes are killed next)")
            proc.kill()
            proc.wait()
        return None
    finally:
        for left in leftovers(basetemp):
            with contextlib.suppress(psutil.Error):
                left.kill()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench fuzz",
        description="Run the fuzz tests (stateless + stateful) with the long profile.",
    )
    parser.add_argument("--minutes", type=float, default=10.0, help="time budget (default 10)")
    parser.add_argument("--seed", type=int, default=None, help="the first round's seed")
    parser.add_argument("-k", dest="select", default="", help="pytest -k expression")
    args = parser.parse_args(argv)
    if args.minutes <= 0:
        parser.error("--minutes must be positive")
    started = time.monotonic()
    deadline = started + args.minutes * 60
    failed: list[int] = []
    rounds = 0
    seed = args.seed if args.seed is not None else random.getrandbits(32)
    with tempfile.TemporaryDirectory(prefix="pebrel-fuzz-") as tmp:
        while time.monotonic() < deadline:
            rounds += 1
            log(f"round {rounds}, seed {seed}")
            status = run_round(seed, Path(tmp) / f"round-{rounds}", args.select, deadline)
            if status not in (0, None, INTERRUPTED):
                failed.append(seed)
                replay = reproduce_line(seed, args.select)
                log(f"round {rounds} FAILED (exit {status}); replay: {replay}")
            seed = random.getrandbits(32)
    log(f"{rounds} round(s) in {time.monotonic() - started:.0f} s; {len(failed)} failed")
    for bad in failed:
        log(f"  replay: {reproduce_line(bad, args.select)}")
    return 1 if failed else 0
