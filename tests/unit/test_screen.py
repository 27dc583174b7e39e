"""The pane screen keeps compact scrollback and answers reads with logical lines (R4.4)."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from pebrel.envelope import dump_value
from pebrel.workers.screen import PaneScreen, ReadResult

pytestmark = pytest.mark.timeout(60)


def numbered(first: int, last: int) -> bytes:
    return b"".join(b"%d\r\n" % n for n in range(first, last + 1))


def test_read_tail_of_3000_lines() -> None:
    """R4.4: the tail is anchored at the bottom; the empty cursor row is not a line."""
    screen = PaneScreen(80, 24)
    screen.feed(numbered(1, 3000))
    result = screen.read(2000)
    assert result.lines == [str(n) for n in range(1001, 3001)]
    assert result.truncated is True
    assert result.history_available == 3000 - 23


def test_read_more_than_available_is_not_truncated() -> None:
    screen = PaneScreen(80, 24)
    screen.feed(numbered(1, 3000))
    result = screen.read(5000)
    assert result.lines == [str(n) for n in range(1, 3001)]
    assert result.truncated is False


def test_small_screen_read_exact_count() -> None:
    screen = PaneScreen(80, 24)
    screen.feed(b"one\r\ntwo\r\n$ ")
    assert screen.read(3) == ReadResult(["one", "two", "$"], 0, False)
    assert screen.read(2) == ReadResult(["two", "$"], 0, True)


def test_soft_wrapped_line_is_one_logical_line() -> None:
    screen = PaneScreen(200, 50)
    line = "".join(chr(ord("a") + i % 26) for i in range(300))
    screen.feed(line.encode() + b"\r\nnext\r\n")
    assert screen.read(10).lines == [line, "next"]


def test_space_at_wrap_boundary_is_kept() -> None:
    screen = PaneScreen(10, 5)
    screen.feed(b"abcdefghi wrapped\r\n")
    assert screen.read(5).lines == ["abcdefghi wrapped"]


def test_soft_wrapped_line_crossing_into_scrollback() -> None:
    screen = PaneScreen(20, 5)
    long_line = "L" * 20 + "M" * 20 + "N" * 7
    screen.feed(b"first\r\n" + long_line.encode() + b"\r\n" + numbered(1, 3))
    # Rows: first, L.., M.., N.., 1, 2, 3, cursor row -> 3 rows scrolled into history.
    result = screen.read(100)
    assert result.lines == ["first", long_line, "1", "2", "3"]
    assert result.history_available == 2
    assert screen.read(4).lines == [long_line, "1", "2", "3"]
    assert screen.read(4).truncated is True


def test_hard_newline_at_column_boundary_is_not_joined() -> None:
    screen = PaneScreen(200, 50)
    screen.feed(b"x" * 200 + b"\r\nnext\r\n")
    assert screen.read(10).lines == ["x" * 200, "next"]


def test_scrollback_cap_keeps_newest() -> None:
    screen = PaneScreen(80, 24, scrollback_lines=100)
    screen.feed(numbered(1, 1000))
    result = screen.read(2000)
    assert result.lines == [str(n) for n in range(1000 - 123 + 1, 1001)]
    assert result.history_available == 100
    assert result.truncated is False
    assert screen.cursor_row_absolute == 1000  # not capped: 977 rows scrolled + row 23


def test_blank_lines_above_cursor_are_content() -> None:
    screen = PaneScreen(80, 24)
    screen.feed(b"a\r\n\r\n\r\n")
    assert screen.read(10).lines == ["a", "", ""]


def test_alt_screen_restores_main_and_keeps_history_clean() -> None:
    screen = PaneScreen(40, 10)
    screen.feed(numbered(1, 30) + b"$ ls")
    before = screen.read(100)
    cursor_before = screen.cursor_row_absolute
    screen.feed(b"\x1b[?1049h\x1b[H")
    assert screen.alt_screen is True
    screen.feed(b"".join(b"full screen %d\r\n" % n for n in range(50)) + b"status")
    during = screen.read(100)
    assert during.lines == [f"full screen {n}" for n in range(41, 50)] + ["status"]
    assert during.history_available == 0
    screen.feed(b"\x1b[?1049l")
    assert screen.alt_screen is False
    assert screen.read(100) == before
    assert screen.cursor_row_absolute == cursor_before
    screen.feed(b"!")
    assert screen.read(1).lines == ["$ ls!"]


@pytest.mark.parametrize("mode", [47, 1047])
def test_alt_screen_legacy_modes(mode: int) -> None:
    screen = PaneScreen(40, 10)
    screen.feed(b"main\r\n")
    screen.feed(b"\x1b[?%dh" % mode + b"alt")
    assert screen.read(10).lines == ["", "alt"]  # the cursor stays on row 1
    screen.feed(b"\x1b[?%dl" % mode)
    assert screen.read(10).lines[0] == "main"


def test_device_attribute_and_cursor_position_replies() -> None:
    replies: list[bytes] = []
    screen = PaneScreen(80, 24, write_back=replies.append)
    screen.feed(b"\x1b[c")
    screen.feed(b"\r\n\r\nabc\x1b[6n")
    screen.feed(b"\x1b[0c\x1b[5n")
    assert replies == [b"\x1b[?6c", b"\x1b[3;4R", b"\x1b[?6c", b"\x1b[0n"]


def test_cursor_position_reply_with_pending_wrap() -> None:
    replies: list[bytes] = []
    screen = PaneScreen(10, 5, write_back=replies.append)
    screen.feed(b"x" * 10 + b"\x1b[6n")
    assert replies == [b"\x1b[1;10R"]


def test_utf8_split_across_feeds_and_invalid_bytes() -> None:
    screen = PaneScreen(80, 24)
    data = "héllo ✓ 😀".encode()
    for i in range(len(data)):
        screen.feed(data[i : i + 1])
    screen.feed(b"\r\nbad\xff\xfeend")
    assert screen.read(2).lines == ["héllo ✓ 😀", "bad\ufffd\ufffdend"]


def test_read_is_side_effect_free() -> None:
    screen = PaneScreen(30, 6)
    screen.feed(numbered(1, 40) + b"y" * 45 + b"\x1b[2;3H")
    internal = screen._screen
    buffer_rows = sorted(internal.buffer)
    cursor = (internal.cursor.x, internal.cursor.y)
    history = list(internal.history)
    first = screen.read(100)
    assert screen.read(100) == first
    assert sorted(internal.buffer) == buffer_rows
    assert (internal.cursor.x, internal.cursor.y) == cursor
    assert list(internal.history) == history


def encoded_size(lines: list[str]) -> int:
    """What lines take in a read answer: the `lines` array plus the `text` string."""
    return len(dump_value(lines)) + len(dump_value("\n".join(lines)))


def test_max_bytes_drops_oldest_lines() -> None:
    """R4.4: the lines count twice against max_bytes, encoded as the answer carries them."""
    screen = PaneScreen(80, 24)
    screen.feed(numbered(1, 100))
    size = encoded_size(["97", "98", "99", "100"])
    assert screen.read(50, max_bytes=size) == ReadResult(["97", "98", "99", "100"], 77, True)
    assert screen.read(50, max_bytes=size - 1) == ReadResult(["98", "99", "100"], 77, True)
    assert screen.read(4, max_bytes=size).lines == ["97", "98", "99", "100"]


@pytest.mark.parametrize("line", ['say "hi" \\ bye', "é中👍 ok", "zwj\u200dx", "plain"])
def test_max_bytes_counts_json_escapes(line: str) -> None:
    """R4.4: quotes, backslashes and non-ASCII characters count as encoded."""
    screen = PaneScreen(200, 5)
    screen.feed(b"\r\n".join([line.encode()] * 3) + b"\r\n")
    lines = [line] * 3
    assert screen.read(3).lines == lines
    assert screen.read(3, max_bytes=encoded_size(lines)).lines == lines
    assert screen.read(3, max_bytes=encoded_size(lines) - 1).lines == lines[1:]


def test_title_from_osc() -> None:
    screen = PaneScreen(80, 24)
    screen.feed(b"\x1b]2;build: make\x07")
    assert screen.title == "build: make"
    screen.feed(b"\x1b]0;other\x1b\\text")
    assert screen.title == "other"
    assert screen.read(1).lines == ["text"]


class ModeCase(NamedTuple):
    id: str
    on: bytes
    off: bytes
    attribute: str


MODE_CASES = [
    ModeCase("bracketed_paste", b"\x1b[?2004h", b"\x1b[?2004l", "bracketed_paste"),
    ModeCase("app_cursor_keys", b"\x1b[?1h", b"\x1b[?1l", "app_cursor_keys"),
    ModeCase("alt_screen", b"\x1b[?1049h", b"\x1b[?1049l", "alt_screen"),
]


@pytest.mark.parametrize("case", MODE_CASES, ids=[c.id for c in MODE_CASES])
def test_mode_flags(case: ModeCase) -> None:
    screen = PaneScreen(80, 24)
    assert getattr(screen, case.attribute) is False
    screen.feed(case.on)
    assert getattr(screen, case.attribute) is True
    screen.feed(case.off)
    assert getattr(screen, case.attribute) is False


def test_erase_display_clears_wrap_flags() -> None:
    screen = PaneScreen(10, 5)
    screen.feed(b"a" * 15 + b"\x1b[2J\x1b[Hone\r\ntwo")
    assert screen.read(10).lines == ["one", "two"]


def test_erase_saved_lines_clears_history() -> None:
    screen = PaneScreen(10, 5)
    screen.feed(numbered(1, 20) + b"\x1b[H\x1b[2J\x1b[3J$ ")
    assert screen.read(10) == ReadResult(["$"], 0, False)


def test_scroll_region_does_not_feed_history() -> None:
    screen = PaneScreen(20, 6)
    screen.feed(b"\x1b[2;5r\x1b[5;1H" + numbered(1, 10))
    assert screen.read(100).history_available == 0


def test_wrap_flags_follow_delete_and_insert_lines() -> None:
    screen = PaneScreen(10, 6)
    screen.feed(b"top\r\n" + b"w" * 15 + b"\r\nend")
    screen.feed(b"\x1b[1;1H\x1b[M")  # delete "top": the wrapped pair moves up
    assert screen.read(10).lines == ["w" * 15, "end"]
    screen.feed(b"\x1b[1;1H\x1b[L")  # insert a blank row above it again
    assert screen.read(10).lines == ["", "w" * 15, "end"]


def test_reverse_index_shifts_wrap_flags() -> None:
    screen = PaneScreen(10, 4)
    screen.feed(b"w" * 15 + b"\x1b[H\x1bM")
    assert screen.read(10).lines == ["", "w" * 15]


def test_resize_pushes_rows_above_cursor_into_history() -> None:
    screen = PaneScreen(20, 10)
    screen.feed(numbered(1, 9) + b"$ ")
    screen.resize(20, 5)
    result = screen.read(100)
    assert result.lines == [str(n) for n in range(1, 10)] + ["$"]
    assert result.history_available == 5
    assert screen.cursor_row_absolute == 9


def test_resize_with_cursor_near_top_drops_blank_rows_below() -> None:
    screen = PaneScreen(20, 10)
    screen.feed(b"$ ")
    screen.resize(15, 4)
    screen.feed(b"x")
    assert screen.read(10) == ReadResult(["$ x"], 0, False)


def test_erase_to_end_of_line_ends_the_continuation() -> None:
    screen = PaneScreen(10, 5)
    screen.feed(b"a" * 15 + b"\x1b[1;5H\x1b[K\x1b[2;6H")
    assert screen.read(10).lines == ["aaaa", "aaaaa"]


def test_repeated_read_is_cached_until_output_or_resize() -> None:
    """A read repeated with nothing in between is answered from a cache; output invalidates."""
    screen = PaneScreen(80, 24)
    screen.feed(b"one\r\ntwo\r\n")
    first = screen.read(5)
    assert screen.read(5) is first
    assert screen.read(1) == ReadResult(["two"], 0, True)
    screen.feed(b"three\r\n")
    assert screen.read(5).lines == ["one", "two", "three"]
    screen.resize(40, 2)
    assert screen.read(5).history_available == 2
