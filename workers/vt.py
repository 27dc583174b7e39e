"""pyte's ``Screen`` extended with compact scrollback, soft-wrap flags and the alternate screen.

pyte's ``HistoryScreen`` is far too slow and too large for real scrollback, so
:class:`TrackedScreen` extends the plain ``pyte.Screen`` through its event methods: a row that
scrolls off the top of the main screen is stored once as a plain string with a soft-wrap flag,
pyte's silent autowrap is recorded per visible row, and the alternate screen (modes 47, 1047,
1049), which pyte ignores, is implemented by swapping buffers. ``draw`` has a fast route for
printable ASCII that writes whole row slices with shared cell objects; anything else (wide or
zero-width characters, insert mode, no autowrap, a translated charset) goes through
``workers.celldraw`` (pyte's own ``draw`` drops text after a zero-width joiner).

A row's soft-wrap flag says that its text continues on the next row: it is set when a
character is drawn past the last column (not when the cursor merely reaches it), and cleared
when the row is erased to its end, or when the next row is erased from column 0 to its end
(what ``less`` does to its prompt row after nudging a full row to wrap with " \\b"), as in
tmux.
"""

from __future__ import annotations

import copy
import functools
import inspect
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyte
from pyte import charsets, modes
from pyte.screens import Char, Cursor, StaticDefaultDict

from pebrel.workers.celldraw import draw_chars, unsplit
from pebrel.workers.history import History

DECCKM = 1 << 5
BRACKETED_PASTE = 2004 << 5
_ALT_MODES = frozenset({47, 1047, 1049})
_SAVE_CURSOR_MODE = 1048

Row = StaticDefaultDict[int, Char]
Buffer = dict[int, Row]


def row_text(row: Row | None, cols: int, trim: bool) -> str:
    """Render one buffer row as text; right-trimmed unless it continues on the next row."""
    if not row:
        return ""
    last = min(max(row), cols - 1)
    text = "".join([row[x].data for x in range(last + 1)])
    return text.rstrip() if trim else text


class _Glyphs(dict[str, Char]):
    """Cells for one set of attributes, made on first use and shared by every row."""

    __slots__ = ("attrs",)

    def __init__(self, attrs: Char) -> None:
        super().__init__()
        self.attrs = attrs

    def __missing__(self, char: str) -> Char:
        glyph = self[char] = self.attrs._replace(data=char)
        return glyph


_GLYPH_SETS_MAX = 256
_SGR_RESULTS_MAX = 1024


@dataclass(slots=True)
class _MainSaved:
    """The main screen while the alternate screen is shown."""

    buffer: Buffer
    wrapped: list[bool]
    cursor: Cursor | None


class TrackedScreen(pyte.Screen):
    """``pyte.Screen`` that records scrollback, soft wraps and the alternate screen."""

    def __init__(
        self,
        cols: int,
        rows: int,
        scrollback_lines: int,
        write_back: Callable[[bytes], None] | None,
        fast_draw: bool = True,
    ) -> None:
        self.history = History(scrollback_lines)
        self.scrolled_total = 0
        self.wrapped: list[bool] = [False] * rows
        self.main_saved: _MainSaved | None = None
        self._in_draw = False
        self._write_back = write_back
        self._fast_draw = fast_draw
        self._glyph_sets: dict[Char, _Glyphs] = {}
        self._sgr_results: dict[tuple[Char, tuple[int, ...], bool], Char] = {}
        super().__init__(cols, rows)

    # -- drawing and soft wraps ---------------------------------------------------------------
    def draw(self, data: str) -> None:
        # pyte wraps by calling carriage_return() + linefeed() from inside draw().
        self._in_draw = True
        try:
            if self._fast_draw and data.isascii() and data.isprintable() and self._plain():
                self._draw_ascii(data)
            else:
                draw_chars(self, data)
        finally:
            self._in_draw = False

    def _plain(self) -> bool:
        """Whether printable ASCII draws one cell per character, replacing, with autowrap."""
        mode = self.mode
        charset = self.g1_charset if self.charset else self.g0_charset
        return (
            modes.DECAWM in mode
            and modes.IRM not in mode
            and charset == charsets.LAT1_MAP
            and self.cursor.x <= self.columns
        )

    def _draw_ascii(self, data: str) -> None:
        """pyte's ``draw`` for width-1 characters, a row slice at a time."""
        cursor = self.cursor
        cols = self.columns
        glyphs = self._glyphs(cursor.attrs)
        pos = 0
        end = len(data)
        while pos < end:
            if cursor.x == cols:
                self.dirty.add(cursor.y)
                self.carriage_return()
                self.linefeed()
            x = cursor.x
            count = min(cols - x, end - pos)
            row = self.buffer[cursor.y]
            unsplit(row, x, x + count)
            row.update(
                zip(
                    range(x, x + count),
                    map(glyphs.__getitem__, data[pos : pos + count]),
                    strict=True,
                )
            )
            cursor.x = x + count
            pos += count
        self.dirty.add(cursor.y)

    def select_graphic_rendition(self, *attrs: int) -> None:
        # The result depends only on the current attributes, the parameters and DECSCNM (the
        # default cell's reverse flag): logs repeat a handful of colour changes endlessly.
        if not self._fast_draw:
            super().select_graphic_rendition(*attrs)
            return
        key = (self.cursor.attrs, attrs, modes.DECSCNM in self.mode)
        after = self._sgr_results.get(key)
        if after is None:
            super().select_graphic_rendition(*attrs)
            if len(self._sgr_results) >= _SGR_RESULTS_MAX:
                self._sgr_results.clear()
            self._sgr_results[key] = self.cursor.attrs
        else:
            self.cursor.attrs = after

    def _glyphs(self, attrs: Char) -> _Glyphs:
        glyphs = self._glyph_sets.get(attrs)
        if glyphs is None:
            if len(self._glyph_sets) >= _GLYPH_SETS_MAX:
                self._glyph_sets.clear()
            glyphs = self._glyph_sets[attrs] = _Glyphs(attrs)
        return glyphs

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
        self.history.append((row_text(row, self.columns, not wrapped), wrapped))
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
        if how not in (0, 1, 2):
            return  # pyte fails on other values; xterm ignores them
        if how in (0, 2):
            self._erased_to_end(whole=how == 2 or self.cursor.x == 0)
        super().erase_in_line(how, private)

    def _erased_to_end(self, whole: bool) -> None:
        """The cursor row is erased to its end (``whole``: from column 0): it no longer
        continues on the next row, and (``whole``) the row above no longer continues on it."""
        y = self.cursor.y
        self.wrapped[y] = False
        if whole and y > 0:
            self.wrapped[y - 1] = False

    def erase_in_display(self, how: int = 0, *args: Any, **kwargs: Any) -> None:
        if how not in (0, 1, 2, 3):
            return  # pyte fails on other values; xterm ignores them
        if how == 0:
            self.wrapped[self.cursor.y + 1 :] = [False] * (self.lines - self.cursor.y - 1)
            self._erased_to_end(whole=self.cursor.x == 0)
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
        if mode != 6:
            super().report_device_status(mode)
            return
        # Pending autowrap: the cursor is still on the last column. Origin mode without
        # margins counts from the top row (pyte asserts there are margins).
        x = min(self.cursor.x, self.columns - 1) + 1
        y = self.cursor.y + 1
        if modes.DECOM in self.mode and self.margins is not None:
            y -= self.margins.top
        self.write_process_input(f"\x1b[{y};{x}R")

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


class Utf8Stream(pyte.ByteStream):
    """pyte's byte stream, always decoding UTF-8.

    pyte decodes a whole chunk before parsing it, so ``ESC % @`` (leave UTF-8) would change how
    the bytes after it decode depending on where the PTY read happened to end. Panes are UTF-8
    (``LANG``/``LC_CTYPE`` point there), so the switch is ignored, as tmux does.
    """

    def select_other_charset(self, code: str) -> None:
        return


def _tolerant(impl: Callable[..., None]) -> Callable[..., None]:
    """Wrap a CSI handler so odd parameters cannot raise out of pyte's parser.

    pyte calls a CSI handler with every parameter it parsed and ``private=True`` after ``?``;
    most handlers accept neither extra parameters nor ``private`` and raise ``TypeError``
    (vim sends ``CSI ? 4 m`` at start-up), which aborts the rest of the chunk. As xterm does,
    extra parameters are ignored, and so is a private form the handler does not know.
    """
    signature = inspect.signature(impl)
    positional = [
        p
        for p in list(signature.parameters.values())[1:]
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "private"
    ]
    variadic = any(p.kind is p.VAR_POSITIONAL for p in signature.parameters.values())
    knows_private = "private" in signature.parameters or any(
        p.kind is p.VAR_KEYWORD for p in signature.parameters.values()
    )
    arity = None if variadic else len(positional)

    @functools.wraps(impl)
    def handler(self: TrackedScreen, *params: int, private: bool = False) -> None:
        args = params if arity is None else params[:arity]
        if not private:
            impl(self, *args)
        elif knows_private:
            impl(self, *args, private=True)

    return handler


for _name in sorted(set(pyte.Stream.csi.values())):
    setattr(TrackedScreen, _name, _tolerant(getattr(TrackedScreen, _name)))
