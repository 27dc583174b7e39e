"""The pane's screen: pyte state plus compact scrollback, soft-wrap flags and logical lines.

pyte's ``HistoryScreen`` is far too slow and too large for real scrollback, so
:class:`_TrackedScreen` extends the plain ``pyte.Screen`` through its event methods: a row
that scrolls off the top of the main screen is stored once as a plain string with a soft-wrap
flag, pyte's silent autowrap is recorded per visible row, and the alternate screen (modes 47,
1047, 1049), which pyte ignores, is implemented by swapping buffers. :class:`PaneScreen` feeds
raw bytes (OSC 133/7 already cut out by ``workers.osc``) and answers reads with logical lines.
"""

from __future__ import annotations

import copy
import itertools
from collections import defaultdict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pyte
from pyte.screens import Char, Cursor, StaticDefaultDict

_DECCKM = 1 << 5
_BRACKETED_PASTE = 2004 << 5
_ALT_MODES = frozenset({47, 1047, 1049})
_SAVE_CURSOR_MODE = 1048

Row = StaticDefaultDict[int, Char]
Buffer = dict[int, Row]


@dataclass(frozen=True, slots=True)
class ReadResult:
    """The answer to :meth:`PaneScreen.read`."""

    lines: list[str]
    history_available: int
    truncated: bool


def _row_text(row: Row | None, cols: int, trim: bool) -> str:
    """Render one buffer row as text; right-trimmed unless it continues on the next row."""
    if not row:
        return ""
    last = min(max(row), cols - 1)
    text = "".join([row[x].data for x in range(last + 1)])
    return text.rstrip() if trim else text


@dataclass(slots=True)
class _MainSaved:
    """The main screen while the alternate screen is shown."""

    buffer: Buffer
    wrapped: list[bool]
    cursor: Cursor | None


class _TrackedScreen(pyte.Screen):
    """``pyte.Screen`` that records scrollback, soft wraps and the alternate screen."""

    def __init__(
        self,
        cols: int,
        rows: int,
        scrollback_lines: int,
        write_back: Callable[[bytes], None] | None,
    ) -> None:
        self.history: deque[tuple[str, bool]] = deque(maxlen=scrollback_lines)
        self.scrolled_total = 0
        self.wrapped: list[bool] = [False] * rows
        self.main_saved: _MainSaved | None = None
        self._in_draw = False
        self._write_back = write_back
        super().__init__(cols, rows)

    # -- soft wraps ---------------------------------------------------------------------------
    def draw(self, data: str) -> None:
        # pyte wraps by calling carriage_return() + linefeed() from inside draw().
        self._in_draw = True
        try:
            super().draw(data)
        finally:
            self._in_draw = False

    def linefeed(self) -> None:
        if self._in_draw:
            self.wrapped[self.cursor.y] = True
        super().linefeed()

    # -- scrolling ----------------------------------------------------------------------------
    def index(self) -> None:
        top, bottom = self.margins or (0, self.lines - 1)
        if self.cursor.y == bottom:
            wrapped = self.wrapped
            if top == 0 and self.main_saved is None:
                self.push_history(self.buffer.get(0), wrapped[0])
            del wrapped[top]
            wrapped.insert(bottom, False)
        super().index()

    def reverse_index(self) -> None:
        top, bottom = self.margins or (0, self.lines - 1)
        if self.cursor.y == top:
            del self.wrapped[bottom]
            self.wrapped.insert(top, False)
        super().reverse_index()

    def push_history(self, row: Row | None, wrapped: bool) -> None:
        self.history.append((_row_text(row, self.columns, not wrapped), wrapped))
        self.scrolled_total += 1

    def insert_lines(self, count: int | None = None) -> None:
        count = count or 1
        top, bottom = self.margins or (0, self.lines - 1)
        y = self.cursor.y
        if top <= y <= bottom:
            span = self.wrapped[y : bottom + 1]
            self.wrapped[y : bottom + 1] = ([False] * count + span)[: len(span)]
        super().insert_lines(count)

    def delete_lines(self, count: int | None = None) -> None:
        count = count or 1
        top, bottom = self.margins or (0, self.lines - 1)
        y = self.cursor.y
        if top <= y <= bottom:
            span = self.wrapped[y : bottom + 1]
            self.wrapped[y : bottom + 1] = (span[count:] + [False] * count)[: len(span)]
        super().delete_lines(count)

    # -- erasing ------------------------------------------------------------------------------
    def erase_in_line(self, how: int = 0, private: bool = False) -> None:
        if how in (0, 2):
            self.wrapped[self.cursor.y] = False
        super().erase_in_line(how, private)

    def erase_in_display(self, how: int = 0, *args: Any, **kwargs: Any) -> None:
        if how == 0:
            self.wrapped[self.cursor.y + 1 :] = [False] * (self.lines - self.cursor.y - 1)
        elif how == 1:
            self.wrapped[: self.cursor.y] = [False] * self.cursor.y
        elif how in (2, 3):
            self.wrapped = [False] * self.lines
        if how == 3 and self.main_saved is None:
            self.history.clear()  # ED 3 erases the saved lines, as in xterm
        super().erase_in_display(how, *args, **kwargs)

    def reset(self) -> None:
        self.main_saved = None
        super().reset()
        self.wrapped = [False] * self.lines

    # -- modes: alternate screen --------------------------------------------------------------
    def set_mode(self, *modes_: int, **kwargs: Any) -> None:
        if kwargs.get("private"):
            for mode in modes_:
                if mode in _ALT_MODES:
                    self._enter_alt(save_cursor=mode == 1049)
                elif mode == _SAVE_CURSOR_MODE:
                    self.save_cursor()
        super().set_mode(*modes_, **kwargs)

    def reset_mode(self, *modes_: int, **kwargs: Any) -> None:
        if kwargs.get("private"):
            for mode in modes_:
                if mode in _ALT_MODES:
                    self._leave_alt()
                elif mode == _SAVE_CURSOR_MODE:
                    self.restore_cursor()
        super().reset_mode(*modes_, **kwargs)

    def _enter_alt(self, save_cursor: bool) -> None:
        if self.main_saved is not None:
            return
        saved_cursor = copy.copy(self.cursor) if save_cursor else None
        self.main_saved = _MainSaved(self.buffer, self.wrapped, saved_cursor)
        self.buffer = defaultdict(lambda: StaticDefaultDict[int, Char](self.default_char))
        self.wrapped = [False] * self.lines
        self.dirty.update(range(self.lines))

    def _leave_alt(self) -> None:
        saved = self.main_saved
        if saved is None:
            return
        self.main_saved = None
        self.buffer = saved.buffer
        self.wrapped = saved.wrapped
        if saved.cursor is not None:
            self.cursor = saved.cursor
            self.ensure_hbounds()
            self.ensure_vbounds()
        self.dirty.update(range(self.lines))

    # -- replies to the program ---------------------------------------------------------------
    def report_device_status(self, mode: int) -> None:
        if mode == 6 and self.cursor.x >= self.columns:
            # Pending autowrap: the cursor is still on the last column.
            x = self.cursor.x
            self.cursor.x = self.columns - 1
            try:
                super().report_device_status(mode)
            finally:
                self.cursor.x = x
            return
        super().report_device_status(mode)

    def write_process_input(self, data: str) -> None:
        if self._write_back is not None:
            self._write_back(data.encode("utf-8"))

    # -- resize -------------------------------------------------------------------------------
    def resize(self, lines: int | None = None, columns: int | None = None) -> None:
        """Resize; rows cut off at the top of the main screen go to scrollback, flags clear."""
        lines = lines or self.lines
        columns = columns or self.columns
        if lines == self.lines and columns == self.columns:
            return
        old_columns = self.columns
        if lines < self.lines:
            saved = self.main_saved
            if saved is not None:
                main_y = saved.cursor.y if saved.cursor is not None else self.cursor.y
                main_y = self._shrink_rows(saved.buffer, saved.wrapped, main_y, lines, True)
                if saved.cursor is not None:
                    saved.cursor.y = main_y
            self.cursor.y = self._shrink_rows(
                self.buffer, self.wrapped, self.cursor.y, lines, saved is None
            )
            self.lines = lines
            self.margins = None
            self.dirty.update(range(lines))
        super().resize(lines, columns)
        if self.main_saved is not None and columns < old_columns:
            for row in self.main_saved.buffer.values():
                for x in range(columns, old_columns):
                    row.pop(x, None)
        if columns > old_columns:
            self.tabstops.update(range(old_columns - old_columns % 8 + 8, columns, 8))
        self.cursor.x = min(self.cursor.x, self.columns)
        self.wrapped = [False] * self.lines
        if self.main_saved is not None:
            self.main_saved.wrapped = [False] * self.lines

    def _shrink_rows(
        self, buffer: Buffer, wrapped: list[bool], cursor_y: int, lines: int, to_history: bool
    ) -> int:
        """Keep ``lines`` rows ending at the cursor (or the top rows); return the new cursor row."""
        cut = max(0, cursor_y - (lines - 1))
        for y in range(cut):
            if to_history:
                self.push_history(buffer.get(y), wrapped[y])
        kept = {y - cut: row for y, row in buffer.items() if cut <= y < cut + lines}
        buffer.clear()
        buffer.update(kept)
        return cursor_y - cut


class PaneScreen:
    """A pane's terminal state: feed raw PTY bytes, read logical lines.

    Reads are anchored at the bottom and side-effect free. While the alternate screen is shown,
    a read returns only the alternate screen's visible rows (``history_available`` is 0): the
    main screen and its scrollback come back once the program leaves the alternate screen.
    """

    def __init__(
        self,
        cols: int,
        rows: int,
        scrollback_lines: int = 10_000,
        write_back: Callable[[bytes], None] | None = None,
    ) -> None:
        self._screen = _TrackedScreen(cols, rows, scrollback_lines, write_back)
        self._stream = pyte.ByteStream(self._screen)

    def feed(self, data: bytes) -> None:
        """Apply raw PTY output; UTF-8 is decoded incrementally (invalid bytes become U+FFFD)."""
        self._stream.feed(data)

    def resize(self, cols: int, rows: int) -> None:
        """Change the screen size; rows pushed off the top go to scrollback."""
        self._screen.resize(rows, cols)

    @property
    def title(self) -> str:
        """The window title last set through OSC 0 or 2."""
        return str(self._screen.title)

    @property
    def cursor_row_absolute(self) -> int:
        """Rows ever pushed into scrollback (not capped) plus the cursor row: a mark's position."""
        return self._screen.scrolled_total + self._screen.cursor.y

    @property
    def bracketed_paste(self) -> bool:
        return _BRACKETED_PASTE in self._screen.mode

    @property
    def app_cursor_keys(self) -> bool:
        return _DECCKM in self._screen.mode

    @property
    def alt_screen(self) -> bool:
        return self._screen.main_saved is not None

    def visible_text(self) -> str:
        """The visible rows (no scrollback) joined by "\\n", without trailing blank rows."""
        return "\n".join(text for text, _ in self._visible_rows())

    def read(self, lines: int, max_bytes: int = 1 << 20) -> ReadResult:
        """Return the last ``lines`` logical lines of scrollback plus screen, oldest first.

        Rows joined by soft wraps form one logical line. Empty rows below both the cursor row
        and the last non-empty row are not content, nor is an empty cursor row at the end.
        If the lines would exceed ``max_bytes`` (UTF-8, joined by newlines), the oldest are
        dropped and ``truncated`` is set.
        """
        screen = self._screen
        alt = screen.main_saved is not None
        visible = self._visible_rows()
        rows: Iterable[tuple[str, bool]] = reversed(visible)
        if not alt:
            rows = itertools.chain(rows, reversed(screen.history))
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
        size = -1
        for index, line in enumerate(newest_first):
            size += len(line.encode("utf-8")) + 1
            if size > max_bytes:
                del newest_first[index:]
                truncated = True
                break
        newest_first.reverse()
        history_available = 0 if alt else _count_logical(screen.history)
        return ReadResult(newest_first, history_available, truncated)

    def _visible_rows(self) -> list[tuple[str, bool]]:
        screen = self._screen
        cols = screen.columns
        buffer = screen.buffer
        wrapped = screen.wrapped
        rows = [
            (_row_text(buffer.get(y), cols, not wrapped[y]), wrapped[y])
            for y in range(screen.lines)
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


def _count_logical(history: deque[tuple[str, bool]]) -> int:
    """Count logical lines starting in scrollback (the oldest row always starts one)."""
    if not history:
        return 0
    continuing = sum(1 for _, wrapped in history if wrapped)
    # Every row that follows a wrapped row continues a line, except past the newest row.
    return len(history) - continuing + (1 if history[-1][1] else 0)
