"""The generated data both sides ingest: deterministic, so every run feeds the same bytes."""

from __future__ import annotations

import random
from pathlib import Path

from bench.common import COLS

_WORDS = [
    "request",
    "handled",
    "worker",
    "cache",
    "miss",
    "hit",
    "retry",
    "upstream",
    "latency",
    "queue",
    "flush",
    "commit",
    "session",
    "token",
    "user",
    "build",
    "step",
    "test",
    "passed",
    "failed",
    "skipped",
    "module",
    "import",
    "compile",
    "link",
]
_LEVELS = ("DEBUG", "INFO", "INFO", "INFO", "WARN", "ERROR")
_SGR_LEVEL = {"DEBUG": "2", "INFO": "32", "WARN": "1;33", "ERROR": "1;31"}


def _log_line(rng: random.Random, n: int) -> tuple[str, str, list[str]]:
    level = rng.choice(_LEVELS)
    stamp = (
        f"2025-01-{1 + n // 86400 % 28:02d}T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}"
    )
    words = [rng.choice(_WORDS) for _ in range(rng.randint(4, 16))]
    return stamp, level, words


def plain_text(size: int, seed: int = 1) -> bytes:
    """Log-like lines of 30-130 columns (some wrap at 80)."""
    rng = random.Random(seed)
    out: list[str] = []
    total = 0
    n = 0
    while total < size:
        stamp, level, words = _log_line(rng, n)
        line = (
            f"{stamp}.{rng.randint(0, 999):03d} {level:5} pid={rng.randint(100, 99999)} "
            + " ".join(words)
        )
        out.append(line)
        total += len(line) + 1
        n += 1
    return ("\n".join(out) + "\n").encode()


def sgr_text(size: int, seed: int = 2) -> bytes:
    """The same kind of lines with SGR colours: 16-colour levels, 256-colour and bold fields."""
    rng = random.Random(seed)
    out: list[str] = []
    total = 0
    n = 0
    while total < size:
        stamp, level, words = _log_line(rng, n)
        coloured = " ".join(
            f"\x1b[38;5;{rng.randint(16, 231)}m{word}\x1b[0m" if rng.random() < 0.3 else word
            for word in words
        )
        line = (
            f"\x1b[2m{stamp}\x1b[0m \x1b[{_SGR_LEVEL[level]}m{level:5}\x1b[0m "
            f"\x1b[1mpid\x1b[0m=\x1b[36m{rng.randint(100, 99999)}\x1b[0m {coloured}"
        )
        out.append(line)
        total += len(line) + 1
        n += 1
    return ("\n".join(out) + "\n").encode()


def progress_bar(size: int) -> bytes:
    """One line rewritten with CR: `[#####     ]  42%  n/N items` (no newline until the end)."""
    width = 40
    out: list[str] = []
    total = 0
    step = 0
    steps = max(1, size // 70)
    while total < size:
        done = step * width // steps
        pct = step * 100 // steps
        frame = f"\r[{'#' * done}{' ' * (width - done)}] {pct:3d}%  {step}/{steps} items"
        out.append(frame)
        total += len(frame)
        step += 1
    return ("".join(out) + "\n").encode()


def history_lines(count: int) -> bytes:
    """`count` lines of exactly 80 printable columns (fills `count` lines of history)."""
    rows = []
    for i in range(count):
        head = f"{i:06d} "
        rows.append(head + ("abcdefghijklmnopqrstuvwxyz0123456789" * 3)[: COLS - len(head)])
    return ("\n".join(rows) + "\n").encode()


def screenful() -> bytes:
    """23 lines of 80 columns: with the prompt below, a full 24x80 screen."""
    rows = [f"{i:02d} " + "x" * (COLS - 3) for i in range(ROWS_MINUS_PROMPT)]
    return ("\n".join(rows) + "\n").encode()


ROWS_MINUS_PROMPT = 23


def write_with_marker(directory: Path, name: str, body: bytes, marker: str) -> Path:
    """The body followed by a last line that is a unique marker (the timer stops on it)."""
    path = directory / name
    path.write_bytes(body + marker.encode() + b"\n")
    return path
