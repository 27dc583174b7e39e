"""The measurements: each phase sets up its panes on both sides, then runs its rows A/B
interleaved for every repetition (the side that goes first alternates sample by sample). The
phases live in bench/memory_ingest.py, bench/latency.py and bench/scale.py (the under-load phase
in bench/load.py); this module lists them in their run order (`PHASES`) and re-exports what
`python -m bench` takes from it."""

from __future__ import annotations

from collections.abc import Callable

from bench.latency import creation, reads, round_trip
from bench.memory_ingest import ingestion, memory
from bench.run import Config, Run, log
from bench.scale import concurrent_exec, fanout, snapshot

__all__ = ["PHASES", "Config", "Run", "log"]


PHASES: list[tuple[str, str, Callable[[Run], None]]] = [
    ("memory", "memory per pane", memory),
    ("ingest", "ingestion", ingestion),
    ("create", "pane creation", creation),
    ("read", "read latency", reads),
    ("roundtrip", "prompt-and-wait round trip", round_trip),
    ("exec", "concurrent exec", concurrent_exec),
    ("snapshot", "snapshot with 64 panes", snapshot),
    ("fanout", "event fan-out", fanout),
]
