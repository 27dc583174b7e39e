"""Screens as they are (R4.4): no text lost to zero-width characters, the visible grid cell by
cell, soft wraps only where text really wrapped; plain text compared with tmux's screen."""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import NamedTuple

import pytest
from wcwidth import wcwidth

from pebrel.workers.celldraw import MAX_CELL_CHARS
from pebrel.workers.screen import PaneScreen
from tests.tmux_oracle import capture, needs_tmux


class Text(NamedTuple):
    case_id: str
    text: str


#: Each must read back exactly as written (R4.4).
TEXTS = [
    Text("vs16-warning", "⚠️  3 tests failed: test_a"),
    Text("zwj-between-letters", "A\u200dB|end"),
    Text("zwj-family", "family: 👨\u200d👩\u200d👧\u200d👦 done"),
    Text("zwj-profession", "dev 🧑\u200d💻 and 🏳️\u200d🌈 flag"),
    Text("skin-tones", "ok 👍🏽👋🏿 bye"),
    Text("vs16-heart", "❤️ love ✔️ check"),
    Text("flags", "flags 🇺🇸🇯🇵🇩🇪 end"),
    Text("keycaps", "keys 1️⃣ #️⃣ *️⃣ end"),
    Text("combining-acute", "cafe\u0301 and e\u0301"),
    Text("combining-stack", "Z\u0351\u0352\u0353algo a\u0300\u0301\u0302 end"),
    Text("cjk", "中文字符 and 日本語 テスト"),
    Text("hangul-jamo", "\u1100\u1161\u11a8 hangul"),
    Text("zero-width-space", "a\u200bb\u2060c end"),
    Text("mixed", "✅ passed 中 e\u0301 👩\u200d🔬 ⚠️ end"),
]


def feed(text: str, cols: int = 80, rows: int = 6) -> PaneScreen:
    screen = PaneScreen(cols, rows)
    screen.feed(text.encode())
    return screen


@pytest.mark.parametrize("case", TEXTS, ids=lambda c: c.case_id)
@pytest.mark.parametrize("cols", [80, 7])
def test_text_reads_back_whole(case: Text, cols: int) -> None:
    """R4.4: nothing after a joiner, a variation selector or a combining mark is lost, and
    nothing is normalised (e + U+0301 stays two code points), wrapped or not."""
    screen = feed(case.text + "\r\n", cols=cols, rows=30)
    assert screen.read(10).lines == [case.text]
    assert screen.visible_text().replace("\n", "") == case.text


@pytest.mark.parametrize("case", TEXTS, ids=lambda c: c.case_id)
def test_grid_cells_follow_wcwidth(case: Text) -> None:
    """R4.4: each character takes wcwidth cells (a wide one's second cell is ""), a
    zero-width one rides on the cell before it; rows are `cols` cells."""
    grid = feed(case.text).grid()
    assert len(grid.cells) == 6
    assert all(len(row) == 80 for row in grid.cells)
    used = sum(max(wcwidth(char), 0) for char in case.text)
    row = grid.cells[0]
    assert "".join(row[:used]) == case.text
    assert row[used:] == [" "] * (80 - used)
    for x, cell in enumerate(row[:used]):
        if cell:
            assert wcwidth(cell[0]) in (1, 2), (x, cell)
            assert all(wcwidth(char) == 0 for char in cell[1:]), (x, cell)
            if wcwidth(cell[0]) == 2:
                assert row[x + 1] == ""
    assert (grid.cursor_row, grid.cursor_col) == (0, used)


def test_combining_mark_is_not_normalised() -> None:
    """R4.4: the program wrote e + U+0301; that is what reads back (not U+00E9)."""
    line = feed("e\u0301\r\n").read(5).lines[0]
    assert line == "e\u0301"
    assert line != unicodedata.normalize("NFC", line)


def test_zero_width_at_a_pending_wrap_stays_on_its_row() -> None:
    """R4.4: a mark after a full row attaches to its last cell; no wrap happens for it."""
    screen = feed("abcd\u0301", cols=4)
    grid = screen.grid()
    assert grid.cells[0] == ["a", "b", "c", "d\u0301"]
    assert grid.wrapped[0] is False
    screen.feed(b"e")
    grid = screen.grid()
    assert grid.cells[1][0] == "e"
    assert grid.wrapped[0] is True
    assert screen.read(5).lines == ["abcd\u0301e"]


def test_zero_width_after_a_wide_character_joins_it() -> None:
    """R4.4: a joiner after a wide character goes to that character, not its second cell."""
    grid = feed("👨\u200d👩").grid()
    assert grid.cells[0][:4] == ["👨\u200d", "", "👩", ""]


def test_zero_width_flood_is_bounded_per_cell() -> None:
    """A cell keeps at most MAX_CELL_CHARS code points; text after the flood is kept."""
    screen = feed("a" + "\u0301" * 1000 + "b|end")
    row = screen.grid().cells[0]
    assert row[0] == "a" + "\u0301" * (MAX_CELL_CHARS - 1)
    assert "".join(row[1:6]) == "b|end"


def test_wide_character_wraps_instead_of_hanging_off_the_last_column() -> None:
    """R4.4: a wide character reaching the last column goes to the next row, as in tmux."""
    screen = feed("abc中", cols=4)
    grid = screen.grid()
    assert grid.cells[0] == ["a", "b", "c", " "]
    assert grid.cells[1][:2] == ["中", ""]
    assert screen.read(5).lines == ["abc中"]


def test_overwriting_half_a_wide_character_blanks_the_other_half() -> None:
    """R4.4: no orphan half remains (the grid stays `cols` cells of real text)."""
    screen = feed("中文\rx")
    assert screen.grid().cells[0][:4] == ["x", " ", "文", ""]
    screen.feed(b"\x1b[4Gy")
    assert screen.grid().cells[0][:4] == ["x", " ", " ", "y"]


# -- soft wraps ---------------------------------------------------------------------------------
LESS_NUDGE = b"2" * 20 + b" \b\x1b[3mg.txt\x1b[23m\x1b[K\r\x1b[K"


def test_prompt_after_less_is_not_joined_onto_the_last_row() -> None:
    """R4.4: less nudges a full row to wrap with " \\b", prints its prompt on the next row
    and erases it on quit; the shell prompt drawn there is a line of its own."""
    screen = PaneScreen(20, 5)
    screen.feed(LESS_NUDGE + b"$ echo hi\r\nhi\r\n$ ")
    assert screen.read(10).lines == ["2" * 20, "$ echo hi", "hi", "$"]
    assert screen.grid().wrapped == [False] * 5


class Wrap(NamedTuple):
    case_id: str
    data: bytes
    lines: list[str]


WRAPS = [
    Wrap("drawn-past-the-edge", b"2" * 20 + b"3", ["2" * 20 + "3"]),
    Wrap("only-reached-the-edge", b"2" * 20 + b"\r\n3", ["2" * 20, "3"]),
    Wrap("backspace-after-real-wrap", b"2" * 20 + b" \bX", ["2" * 20 + "X"]),
    Wrap("erase-line-at-pending-wrap", b"2" * 20 + b"\x1b[K3", ["2" * 20 + "3"]),
    Wrap("next-row-erased-from-col-0", b"2" * 20 + b" XY\r\x1b[KZ", ["2" * 20, "Z"]),
    Wrap("next-row-erased-whole", b"2" * 20 + b" XY\x1b[2KZ", ["2" * 20, "   Z"]),
    Wrap("next-row-erased-to-cursor", b"2" * 20 + b" XY\x1b[1KZ", ["2" * 20 + "   Z"]),
    Wrap("screen-erased-from-col-0", b"2" * 20 + b" XY\r\x1b[JZ", ["2" * 20, "Z"]),
]


@pytest.mark.parametrize("case", WRAPS, ids=lambda c: c.case_id)
def test_soft_wraps_join_only_really_wrapped_rows(case: Wrap) -> None:
    """R4.4: logical lines join a row with the next only if text really wrapped (tmux -J)."""
    screen = PaneScreen(20, 5)
    screen.feed(case.data)
    assert screen.read(10).lines == case.lines


# -- tmux, the oracle for plain text ------------------------------------------------------------
PLAIN = [
    Text("ascii-rows", "hello\r\nworld\r\n"),
    Text("ascii-wrap", "x" * 45 + "\r\nend"),
    Text("cjk-wrap", "中文" * 12 + "\r\nend"),
    Text("cjk-odd-edge", "a" + "漢字" * 10 + "b"),
    Text("cjk-overwrite-first-half", "中文字\rx"),
    Text("less-nudge", LESS_NUDGE.decode() + "$ "),
    Text("erase-whole-next-row", "y" * 20 + " XY\x1b[2KZ"),
    Text("cursor-moves", "abc\x1b[2;5Hdef\x1b[1;2Hq"),
]


@needs_tmux
@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", PLAIN, ids=lambda c: c.case_id)
@pytest.mark.parametrize("cols", [20, 9])
def test_plain_text_matches_tmux(case: Text, cols: int, tmp_path: Path) -> None:
    """R4.4: rows and logical lines of plain text are what tmux shows for the same bytes."""
    screen = PaneScreen(cols, 8)
    screen.feed(case.text.encode())
    rows = ["".join(row).rstrip(" ") for row in screen.grid().cells]
    while rows and not rows[-1]:
        rows.pop()
    assert rows == capture(case.text.encode(), cols, 8, tmp_path)
    joined = capture(case.text.encode(), cols, 8, tmp_path, join=True)
    assert [line.rstrip() for line in screen.read(20).lines] == joined
