"""The pane's screen: a tracked pyte screen plus logical-line reads.

:class:`PaneScreen` feeds raw bytes (OSC 133/7 already cut out by ``workers.osc``) through the
fast ingestion path of ``workers.ingest`` into ``workers.vt.TrackedScreen`` (pyte with compact
scrollback, soft-wrap flags and the alternate screen) and answers reads with logical lines.
Every read first settles output the ingestion path still holds back.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pebrel.envelope import dump_value
from pebrel.workers.ingest import FastIngest
from pebrel.workers.styled import StyledScreen, styled
from pebrel.workers.vt import BRACKETED_PASTE, DECCKM, TrackedScreen, Utf8Stream, row_text


@dataclass(frozen=True, slots=True)
class ReadResult:
    """The answer to :meth:`PaneScreen.read`."""

    lines: list[str]
    history_available: int
    truncated: bool


@dataclass(frozen=True, slots=True)
class Grid:
    """The visible screen cell by cell (:meth:`PaneScreen.grid`).

    ``cells``: one list per row, ``cols`` cell texts each: a character with whatever
    zero-width characters were written after it, ``" "`` for a blank cell, ``""`` for the second
    cell of a wide character. ``wrapped``: the row's text continues on the next row (a soft
    wrap). The cursor is where the next character goes (a pending wrap shows it on the last
    column).
    """

    cells: list[list[str]]
    wrapped: list[bool]
    cursor_row: int
    cursor_col: int
    cursor_visible: bool
    alt_screen: bool
    history_available: int


class PaneScreen:
    """A pane's terminal state: feed raw PTY bytes, read logical lines.

    Reads are anchored at the bottom and side-effect free. While the alternate screen is shown,
    a read returns only the alternate screen's visible rows (``history_available`` is 0): the
    main screen and its scrollback come back once the program leaves the alternate screen.
    ``fast=False`` feeds everything straight to pyte (the reference the fast path is tested
    against).
    """

    def __init__(
        self,
        cols: int,
        rows: int,
        scrollback_lines: int = 10_000,
        write_back: Callable[[bytes], None] | None = None,
        fast: bool = True,
    ) -> None:
        self._screen = TrackedScreen(cols, rows, scrollback_lines, write_back, fast_draw=fast)
        self._stream = Utf8Stream(self._screen)
        self._ingest = FastIngest(self._screen, self._stream) if fast else None
        # The last read's answer, valid until the next feed or resize.
        self._read_cache: tuple[int, int, ReadResult] | None = None

    def feed(self, data: bytes) -> None:
        """Apply raw PTY output; UTF-8 is decoded incrementally (invalid bytes become U+FFFD)."""
        self._read_cache = None
        if self._ingest is not None:
            self._ingest.feed(data)
        else:
            self._stream.feed(data)

    def settle(self) -> None:
        """Apply output the fast path still holds back (done by every read)."""
        if self._ingest is not None:
            self._ingest.flush()

    def resize(self, cols: int, rows: int) -> None:
        """Change the screen size; rows pushed off the top go to scrollback."""
        self._read_cache = None
        self.settle()
        self._screen.resize(rows, cols)

    def size(self) -> tuple[int, int]:
        """The screen's size: columns, rows."""
        return self._screen.columns, self._screen.lines

    @property
    def title(self) -> str:
        """The window title last set through OSC 0 or 2."""
        return str(self._screen.title)

    @property
    def cursor_row_absolute(self) -> int:
        """Rows ever pushed into scrollback (not capped) plus the cursor row: a mark's position."""
        self.settle()
        return self._screen.scrolled_total + self._screen.cursor.y

    @property
    def bracketed_paste(self) -> bool:
        return BRACKETED_PASTE in self._screen.mode

    @property
    def app_cursor_keys(self) -> bool:
        return DECCKM in self._screen.mode

    @property
    def alt_screen(self) -> bool:
        return self._screen.main_saved is not None

    def visible_text(self) -> str:
        """The visible rows (no scrollback) joined by "\\n", without trailing blank rows."""
        self.settle()
        return "\n".join(text for text, _ in self._visible_rows())

    def grid(self) -> Grid:
        """The visible rows exactly as shown, cell by cell (side-effect free)."""
        self.settle()
        screen = self._screen
        cols = screen.columns
        buffer = screen.buffer
        blank = [" "] * cols
        cells: list[list[str]] = []
        for y in range(screen.lines):
            row = buffer.get(y)
            cells.append([row[x].data for x in range(cols)] if row else blank.copy())
        cursor = screen.cursor
        alt = screen.main_saved is not None
        return Grid(
            cells=cells,
            wrapped=list(screen.wrapped),
            cursor_row=cursor.y,
            cursor_col=min(cursor.x, cols - 1),
            cursor_visible=not cursor.hidden,
            alt_screen=alt,
            history_available=0 if alt else screen.history.logical_lines(),
        )

    def styled(self) -> StyledScreen:
        """The visible rows with how each cell looks (side-effect free)."""
        self.settle()
        return styled(self._screen)

    def read(self, lines: int, max_bytes: int = 1 << 20) -> ReadResult:
        """Return the last ``lines`` logical lines of scrollback plus screen, oldest first.

        Rows joined by soft wraps form one logical line. Empty rows below both the cursor row
        and the last non-empty row are not content, nor is an empty cursor row at the end.
        An answer carries the lines twice, as a JSON array and joined by newlines in one JSON
        string: if the two would take more than ``max_bytes`` encoded, the oldest lines are
        dropped and ``truncated`` is set. Repeating a read with nothing fed in between answers
        from a cache (the result must not be modified).
        """
        cached = self._read_cache
        if cached is not None and cached[0] == lines and cached[1] == max_bytes:
            return cached[2]
        result = self._read(lines, max_bytes)
        self._read_cache = (lines, max_bytes, result)
        return result

    def _read(self, lines: int, max_bytes: int) -> ReadResult:
        screen = self._screen
        held = self._ingest.held_rows() if self._ingest is not None else None
        if held is not None:
            return self._read_held(held, lines, max_bytes)
        self.settle()
        alt = screen.main_saved is not None
        visible = self._visible_rows()
        rows: Iterable[tuple[str, bool]] = reversed(visible)
        if not alt:
            rows = itertools.chain(rows, reversed(screen.history))
        return _logical_read(rows, lines, max_bytes, 0 if alt else screen.history.logical_lines())

    def _read_held(self, held: list[tuple[str, bool]], lines: int, max_bytes: int) -> ReadResult:
        """A read of held rows over a blank screen, as if they had been applied: the last
        screenful is visible (the cursor on its last row), the rest joins the history."""
        screen = self._screen
        history = screen.history
        split = len(held) - screen.lines
        gained, visible = held[:split], held[split:]
        if not visible[-1][0]:
            visible.pop()  # an empty cursor row at the end is not content
        kept = min(len(history) + len(gained), history.maxlen or 0)
        older = itertools.islice(itertools.chain(reversed(gained), reversed(history)), kept)
        rows = itertools.chain(reversed(visible), older)
        return _logical_read(rows, lines, max_bytes, history.logical_lines_after(gained))

    def _visible_rows(self) -> list[tuple[str, bool]]:
        screen = self._screen
        cols = screen.columns
        buffer = screen.buffer
        wrapped = screen.wrapped
        rows = [
            (row_text(buffer.get(y), cols, not wrapped[y]), wrapped[y]) for y in range(screen.lines)
        ]
        cursor_y = screen.cursor.y
        # Blank rows above the cursor are content; an empty cursor row at the end is not.
        last = cursor_y if rows[cursor_y][0] else cursor_y - 1
        for y in range(len(rows) - 1, last, -1):
            if rows[y][0]:
                last = y
                break
        del rows[last + 1 :]
        return rows


def _logical_read(
    rows: Iterable[tuple[str, bool]], lines: int, max_bytes: int, history_available: int
) -> ReadResult:
    """The last ``lines`` logical lines of ``rows`` (newest first), oldest first."""
    newest_first: list[str] = []
    pending: list[str] = []
    for text, wrapped in rows:
        if pending and not wrapped:
            newest_first.append("".join(reversed(pending)).rstrip())
            pending = []
            if len(newest_first) > lines:
                break
        pending.append(text)
    if pending and len(newest_first) <= lines:
        newest_first.append("".join(reversed(pending)).rstrip())
    truncated = len(newest_first) > lines
    del newest_first[max(lines, 0) :]
    # Each character takes at most 6 bytes in JSON (\\uXXXX), twice, plus quotes and commas:
    # when even that fits, nothing is cut and no line needs measuring.
    if 12 * sum(map(len, newest_first)) + 6 * len(newest_first) + 1 <= max_bytes:
        newest_first.reverse()
        return ReadResult(newest_first, history_available, truncated)
    size = 1
    for index, line in enumerate(newest_first):
        size += 2 * json_size(line) + 1
        if size > max_bytes:
            del newest_first[index:]
            truncated = True
            break
    newest_first.reverse()
    return ReadResult(newest_first, history_available, truncated)


def json_size(text: str) -> int:
    """The bytes ``text`` takes as a JSON string in an answer (quotes and escapes included)."""
    if text.isprintable() and '"' not in text and "\\" not in text:
        return (len(text) if text.isascii() else len(text.encode("utf-8"))) + 2
    return len(dump_value(text))
