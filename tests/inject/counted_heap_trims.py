"""Injection: pane workers and the router trim their heap every 0.2 s while busy, and note
each trim (#15).

Only the interval changes, and each trim of the production path also appends the process's
pid to ``heap-trims.log`` in the data dir, so a test sees a real worker's or the router's
trimming in a test-sized time.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from pebrel import heaptrim
from pebrel.injection import FORKSERVER, ROUTER

LOG_NAME = "heap-trims.log"


def install(process: str) -> None:
    if process not in (FORKSERVER, ROUTER):
        return
    heaptrim.TRIM_INTERVAL_S = 0.2
    log = Path(os.environ["PEBREL_DATA_DIR"]) / LOG_NAME
    real = heaptrim.malloc_trim

    def counted() -> Callable[[], None] | None:
        trim = real()
        if trim is None:
            return None

        def trim_and_note() -> None:
            trim()
            with log.open("a") as handle:
                handle.write(f"{os.getpid()}\n")

        return trim_and_note

    heaptrim.malloc_trim = counted
