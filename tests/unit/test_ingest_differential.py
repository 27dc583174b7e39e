"""Differential test of the fast ingestion path against plain pyte (issue 6 item 2, R4.4).

Every case runs the pane worker's byte pipeline (``OscScanner`` then ``PaneScreen.feed``, with
OSC marks recorded at ``cursor_row_absolute`` as the worker does) twice: through the fast path
and through plain pyte (``PaneScreen(fast=False)``). The visible screen (characters and
attributes of every cell), cursor, modes, margins, title, charsets, saved cursors, the
alternate screen, soft-wrap flags, history, mark rows, replies to the program and reads taken
along the way must be identical.

The corpus: real PTY captures in ``tests/data/vt`` (regenerate with
``python tests/data/vt/capture.py``), generated floods, and random mixes of text and control
sequences, all split at random chunk boundaries, with reads and resizes interleaved.

Unseen inputs: ``PEBREL_VT_CORPUS=<dir>`` adds every ``*.bin`` file in that directory to the
corpus, ``PEBREL_VT_SEED=<n>`` changes the random cases and ``PEBREL_VT_MIXES=<n>`` sets how
many random mixes run (default 300).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pebrel.workers.osc import OscEvent, OscScanner
from pebrel.workers.screen import PaneScreen

pytestmark = pytest.mark.timeout(300)

CORPUS = Path(__file__).resolve().parents[1] / "data" / "vt"
SEED = int(os.environ.get("PEBREL_VT_SEED", "0"))
MIXES = int(os.environ.get("PEBREL_VT_MIXES", "300"))

Op = tuple[str, Any]


@dataclass
class Run:
    screen: PaneScreen
    scanner: OscScanner = field(default_factory=OscScanner)
    replies: list[bytes] = field(default_factory=list)
    seen: list[Any] = field(default_factory=list)


def _new_run(cols: int, rows: int, scrollback: int, fast: bool, compact: int | None) -> Run:
    replies: list[bytes] = []
    screen = PaneScreen(cols, rows, scrollback, write_back=replies.append, fast=fast)
    if compact is not None and screen._ingest is not None:
        screen._ingest.compact_bytes = compact
    return Run(screen, replies=replies)


def _apply(run: Run, op: Op) -> None:
    kind, arg = op
    screen = run.screen
    if kind == "feed":
        for part in run.scanner.feed(arg):
            if isinstance(part, OscEvent):
                run.seen.append(("mark", part.code, part.payload, screen.cursor_row_absolute))
            else:
                screen.feed(part)
    elif kind == "read":
        run.seen.append(("read", screen.read(arg)))
    elif kind == "resize":
        screen.resize(*arg)
    else:
        raise AssertionError(kind)


def _observe(run: Run) -> dict[str, Any]:
    pane = run.screen
    pane.settle()
    screen = pane._screen
    default = screen.default_char

    def cells(buffer: Any) -> list[list[Any]]:
        out = []
        for y in range(screen.lines):
            row = buffer.get(y) or {}
            out.append([row.get(x, default) for x in range(screen.columns)])
        return out

    saved = screen.main_saved
    # The scrollback's running count of wrapped rows (what reads report from) is exact.
    assert screen.history.wrapped == sum(flag for _, flag in screen.history)
    return {
        "size": (screen.columns, screen.lines),
        "cells": cells(screen.buffer),
        "cursor": (screen.cursor.x, screen.cursor.y, screen.cursor.attrs, screen.cursor.hidden),
        "mode": sorted(screen.mode),
        "margins": screen.margins,
        "title": (screen.title, screen.icon_name),
        "charset": (screen.charset, screen.g0_charset, screen.g1_charset),
        "savepoints": [
            (s.cursor.x, s.cursor.y, s.cursor.attrs, s.g0_charset, s.g1_charset, s.charset)
            for s in screen.savepoints
        ],
        "tabstops": sorted(screen.tabstops),
        "wrapped": list(screen.wrapped),
        "history": list(screen.history),
        "scrolled_total": screen.scrolled_total,
        "alt": None
        if saved is None
        else (
            cells(saved.buffer),
            list(saved.wrapped),
            None if saved.cursor is None else (saved.cursor.x, saved.cursor.y, saved.cursor.attrs),
        ),
        "read": pane.read(100_000),
        "visible_text": pane.visible_text(),
        "modes_api": (pane.bracketed_paste, pane.app_cursor_keys, pane.alt_screen),
        "seen": run.seen,
        "replies": run.replies,
    }


def assert_same(
    ops: list[Op],
    cols: int = 80,
    rows: int = 24,
    scrollback: int = 10_000,
    compact: int | None = None,
    label: str = "",
) -> None:
    fast = _new_run(cols, rows, scrollback, True, compact)
    slow = _new_run(cols, rows, scrollback, False, None)
    for op in ops:
        _apply(fast, op)
        _apply(slow, op)
    got, want = _observe(fast), _observe(slow)
    for key in want:
        assert got[key] == want[key], f"{label}: {key} differs ({cols}x{rows})"


def chunked(data: bytes, rng: random.Random, max_chunk: int = 4096) -> list[Op]:
    """Split ``data`` at random boundaries (often tiny, sometimes large) into feed ops."""
    ops: list[Op] = []
    pos = 0
    while pos < len(data):
        size = rng.choice((1, 2, 3, rng.randint(1, 64), rng.randint(1, max_chunk)))
        ops.append(("feed", data[pos : pos + size]))
        pos += size
    return ops


def with_reads(ops: list[Op], rng: random.Random, every: int = 7) -> list[Op]:
    out: list[Op] = []
    for op in ops:
        out.append(op)
        if rng.randrange(every) == 0:
            out.append(("read", rng.choice((1, 5, 30, 1000))))
    return out


def captures() -> list[Path]:
    found = sorted(CORPUS.glob("*.bin"))
    extra = os.environ.get("PEBREL_VT_CORPUS")
    if extra:
        found += sorted(Path(extra).glob("*.bin"))
    return found


# -- generated floods -------------------------------------------------------------------------
_WORDS = ["build", "ok", "FAILED", "tests/test_a.py::test_b", "warning:", "src/lib.rs:12:5", "∑"]


def flood(rng: random.Random, lines: int, sgr: bool, unicode: bool = False) -> bytes:
    out: list[str] = []
    for n in range(lines):
        vocabulary = _WORDS if unicode else _WORDS[:-1]
        words = [rng.choice(vocabulary) for _ in range(rng.randint(0, 18))]
        if sgr:
            words = [
                f"\x1b[{rng.choice(['1', '32', '1;31', '38;5;208', '0;2', ''])}m{w}\x1b[0m"
                if rng.random() < 0.4
                else w
                for w in words
            ]
        line = f"{n:05d} " + " ".join(words) + " " * rng.choice((0, 0, 0, 3))
        if rng.random() < 0.05:
            line = "x" * rng.choice((79, 80, 81, 159, 160, 161, 250))
        if rng.random() < 0.03:
            line += "\r" + "y" * rng.randint(0, 100)  # overwritten from column 0
        if rng.random() < 0.02:
            line = ""
        out.append(line)
    return ("\r\n".join(out) + "\r\n").encode()


def progress(rng: random.Random, frames: int) -> bytes:
    parts = []
    for i in range(frames):
        width = rng.choice((20, 40, 40, 40, 79, 80))
        done = i * width // max(frames, 1)
        colour = rng.choice(("", "\x1b[33m", "\x1b[1;32m"))
        parts.append(f"\r{colour}[{'#' * done}{' ' * (width - done)}]\x1b[0m {i}")
    return ("".join(parts) + "\r\n").encode()


# -- random mixes -----------------------------------------------------------------------------
_CONTROLS = [
    b"\r\n",
    b"\r\n",
    b"\r\n",
    b"\r\n",
    b"\r",
    b"\n",
    b"\t",
    b"\x08",
    b"\x07",
    b"\x0e",
    b"\x0f",
    b"\x1b[0m",
    b"\x1b[m",
    b"\x1b[1;31m",
    b"\x1b[38;5;196m",
    b"\x1b[48;2;1;2;3m",
    b"\x1b[;4m",
    b"\x1b[38;5m",
    b"\x1b[99999m",
    b"\x1b[7m",
    b"\x1b[0;1;4;5;7;9m",
    b"\x1b[38:5:1m",
    b"\x1b[K",
    b"\x1b[1K",
    b"\x1b[2K",
    b"\x1b[J",
    b"\x1b[1J",
    b"\x1b[2J",
    b"\x1b[3J",
    b"\x1b[H",
    b"\x1b[5;10H",
    b"\x1b[A",
    b"\x1b[3B",
    b"\x1b[C",
    b"\x1b[2D",
    b"\x1b[3G",
    b"\x1b[2L",
    b"\x1b[M",
    b"\x1b[3P",
    b"\x1b[2@",
    b"\x1b[X",
    b"\x1b[S",
    b"\x1b[T",
    b"\x1b[2;5r",
    b"\x1b[r",
    b"\x1b[?7l",
    b"\x1b[?7h",
    b"\x1b[4h",
    b"\x1b[4l",
    b"\x1b[20h",
    b"\x1b[20l",
    b"\x1b[?1049h",
    b"\x1b[?1049l",
    b"\x1b[?47h",
    b"\x1b[?47l",
    b"\x1b[?1047h",
    b"\x1b[?1048h",
    b"\x1b[?1048l",
    b"\x1b[?1h",
    b"\x1b[?1l",
    b"\x1b[?2004h",
    b"\x1b[?2004l",
    b"\x1b[?6h",
    b"\x1b[?6l",
    b"\x1b[?25l",
    b"\x1b[?25h",
    b"\x1b7",
    b"\x1b8",
    b"\x1bD",
    b"\x1bM",
    b"\x1bE",
    b"\x1bH",
    b"\x1b[g",
    b"\x1b[3g",
    b"\x1bc",
    b"\x1b(0",
    b"\x1b(B",
    b"\x1b%@",
    b"\x1b%G",
    b"\x1b[6n",
    b"\x1b[5n",
    b"\x1b[c",
    b"\x1b]0;a title\x07",
    b"\x1b]2;other\x1b\\",
    b"\x1b]133;A\x07",
    b"\x1b]133;D;1\x07",
    b"\x1b]7;file://h/x\x07",
    b"\x1b#8",
    b"\x1b[",
    b"\x1b",
    b"\x1b[12",
    b"\x7f",
    b"\x00",
    "漢字".encode(),
    "é".encode(),
    "e\u0301".encode(),
    "\U0001f600".encode(),
    b"\xff",
    "漢".encode()[:2],
]


def mix(rng: random.Random, tokens: int) -> bytes:
    out = bytearray()
    for _ in range(tokens):
        roll = rng.random()
        if roll < 0.45:
            out += bytes(rng.randint(0x20, 0x7E) for _ in range(rng.randint(1, 120)))
        elif roll < 0.6:
            out += flood(rng, rng.randint(1, 60), sgr=rng.random() < 0.5)
        else:
            out += rng.choice(_CONTROLS)
    return bytes(out)


SIZES = [(80, 24), (40, 10), (132, 50), (10, 3), (1, 1), (2, 1)]


# -- tests ------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", captures(), ids=lambda p: p.stem)
def test_real_captures(path: Path) -> None:
    data = path.read_bytes()
    rng = random.Random(f"{SEED}:{path.name}")
    assert_same([("feed", data)], label=path.name)
    for cols, rows in SIZES[:4]:
        for compact in (None, 64):
            ops = with_reads(chunked(data, rng), rng)
            assert_same(ops, cols, rows, compact=compact, label=path.name)


@pytest.mark.parametrize("sgr", [False, True], ids=["plain", "sgr"])
def test_floods(sgr: bool) -> None:
    rng = random.Random(f"{SEED}:flood:{sgr}")
    data = flood(rng, 3000, sgr)
    assert_same([("feed", data)], label="flood")
    assert_same(chunked(data, rng), label="flood chunked")
    assert_same(with_reads(chunked(data, rng), rng, every=40), label="flood with reads")
    assert_same(chunked(data, rng), 40, 10, scrollback=100, compact=512, label="flood small")


def test_progress_bars() -> None:
    rng = random.Random(f"{SEED}:progress")
    data = b"".join(progress(rng, rng.randint(50, 400)) for _ in range(6))
    assert_same([("feed", data)], label="progress")
    assert_same(chunked(data, rng), compact=256, label="progress chunked")
    assert_same(with_reads(chunked(data, rng), rng), 30, 5, compact=256, label="progress narrow")


def test_unicode_flood_goes_to_pyte_intact() -> None:
    rng = random.Random(f"{SEED}:unicode")
    data = flood(rng, 800, sgr=True, unicode=True)
    assert_same(chunked(data, rng), compact=512, label="unicode flood")


def test_flood_then_full_screen_program_then_flood() -> None:
    rng = random.Random(f"{SEED}:fullscreen")
    vim = (CORPUS / "vim_start.bin").read_bytes()
    data = flood(rng, 500, True) + vim + flood(rng, 500, False)
    data += b"\x1b[2;10r" + flood(rng, 50, False)
    assert_same(chunked(data, rng), compact=1024, label="flood+vim+flood")


def test_resizes_between_floods() -> None:
    rng = random.Random(f"{SEED}:resize")
    ops: list[Op] = []
    for cols, rows in [(80, 24), (60, 20), (100, 30), (20, 5), (80, 24)]:
        ops += chunked(flood(rng, 300, rng.random() < 0.5), rng)
        ops.append(("resize", (cols, rows)))
    assert_same(ops, compact=700, label="resizes")


@pytest.mark.parametrize("case", range(MIXES))
def test_random_mixes(case: int) -> None:
    rng = random.Random(f"{SEED}:mix:{case}")
    cols, rows = rng.choice(SIZES)
    ops = with_reads(chunked(mix(rng, rng.randint(5, 80)), rng), rng)
    if rng.random() < 0.2:
        ops.insert(rng.randrange(len(ops)), ("resize", (rng.randint(1, 100), rng.randint(1, 40))))
    assert_same(
        ops,
        cols,
        rows,
        scrollback=rng.choice((5, 100, 10_000)),
        compact=rng.choice((None, 1, 64, 512)),
        label=f"mix {case}",
    )


def test_very_long_lines_are_not_held_back_without_bound() -> None:
    """A line with no LF cannot be compacted: it goes to pyte once enough is held."""
    rng = random.Random(f"{SEED}:long")
    data = b"".join(
        bytes(rng.randint(0x20, 0x7E) for _ in range(rng.randint(2000, 9000))) + b"\r\n"
        for _ in range(4)
    )
    assert_same(chunked(data, rng), compact=256, label="long lines")
    fast = PaneScreen(80, 24)
    assert fast._ingest is not None
    fast._ingest.compact_bytes = 256
    for start in range(0, 1900, 100):
        fast.feed(data[start : start + 100])
        assert fast._ingest.pending_size <= 2 * 256 + 100


def test_one_row_screen_drawn_on_after_a_compaction_left_nothing_held() -> None:
    """A one-row screen can end a compaction with no held bytes; pyte drawing on it next must
    not be mistaken for the blank screen the compaction left."""
    ops: list[Op] = [
        ("feed", b"aaa\r\n"),
        ("feed", b"\x1b[Kxy"),
        ("feed", b"zz\r\nqq\r\nrr"),
    ]
    assert_same(ops, 10, 1, compact=1, label="one row")
    assert_same([*ops, ("resize", (10, 3)), ("feed", b"\r\nss\r\n")], 10, 1, compact=1)


def test_bare_lf_ending_the_lines_that_go_to_history() -> None:
    """The last line end of the rows pushed to history may be an LF without a CR (it keeps its
    column); only pyte can draw that, however the lines are split."""
    data = b"l1\r\nl2\r\nl3\r\nlong line four\nl5\r\nl6\r\n"
    assert_same([("feed", data)], 20, 3, compact=1, label="bare LF at the cut")
    assert_same([("feed", data * 5)], 20, 3, compact=1, label="bare LF at the cut, repeated")
