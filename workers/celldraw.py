"""Drawing text one character at a time into the pane's cells, as terminals do (R4.4).

pyte's own ``Screen.draw`` stops drawing at the first zero-width character that is not a
combining mark (U+200D ZERO WIDTH JOINER, U+FE0F VARIATION SELECTOR-16, ...): everything after
it up to the next control sequence was lost, so ``⚠️  3 tests failed`` read back as ``⚠``. It
also normalises a combining mark with its base to NFC (``e`` + U+0301 became U+00E9), lets a
wide character hang off the last column, and leaves half of a wide character behind when the
other half is overwritten. :func:`draw_chars` replaces it:

- widths follow ``wcwidth`` per code point, the rules pyte uses;
- a zero-width character (combining mark, joiner, variation selector, ...) is appended, as
  written, to the cell before the cursor (the wide character itself, not its second cell; at
  a pending wrap, the last column), and drawing goes on; a cell keeps at most
  ``MAX_CELL_CHARS`` code points (later ones are dropped, so no cell grows without bound);
- a wide character that does not fit in the last column wraps first (autowrap on) or is drawn
  in the last two columns (autowrap off), as in xterm and tmux;
- overwriting either half of a wide character blanks its other half;
- a character without a width (a C1 control that reached the text) is skipped, not the rest.

Each cell's ``data`` is its text: the character and what is attached to it; the second cell of
a wide character holds ``""``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyte import modes
from wcwidth import wcwidth

if TYPE_CHECKING:
    from pebrel.workers.vt import Row, TrackedScreen

#: Code points one cell keeps (a base character plus what is attached to it).
MAX_CELL_CHARS = 32


def draw_chars(screen: TrackedScreen, data: str) -> None:
    """Draw ``data`` (no control characters) at the cursor, as a terminal would."""
    data = data.translate(screen.g1_charset if screen.charset else screen.g0_charset)
    cursor = screen.cursor
    cols = screen.columns
    mode = screen.mode
    autowrap = modes.DECAWM in mode
    insert = modes.IRM in mode
    for char in data:
        width = wcwidth(char)
        if width == 0:
            attach(screen, char)
            continue
        if width < 0:
            continue
        if cursor.x + width > cols and cursor.x > 0:
            if autowrap:
                screen.dirty.add(cursor.y)
                screen.carriage_return()
                screen.linefeed()
            else:
                cursor.x = max(cols - width, 0)
        if insert:
            screen.insert_characters(width)
        row = screen.buffer[cursor.y]
        x = cursor.x
        unsplit(row, x, x + width)
        attrs = cursor.attrs
        row[x] = attrs._replace(data=char)
        if width == 2 and x + 1 < cols:
            row[x + 1] = attrs._replace(data="")
        cursor.x = min(x + width, cols)
    screen.dirty.add(cursor.y)


def unsplit(row: Row, start: int, end: int) -> None:
    """Columns ``start``..``end`` - 1 are about to be overwritten: blank the other half of a
    wide character cut at either edge."""
    if start > 0:
        first = row.get(start)
        if first is not None and first.data == "":
            row[start - 1] = row[start - 1]._replace(data=" ")
    after = row.get(end)
    if after is not None and after.data == "":
        row[end] = after._replace(data=" ")


def attach(screen: TrackedScreen, char: str) -> None:
    """Append a zero-width character to the cell before the cursor (or the last cell of the
    row this one continues); with no such cell (column 0 of a line's first row) it is dropped,
    as terminals do."""
    cursor = screen.cursor
    cols = screen.columns
    y = cursor.y
    if cursor.x > 0:
        x = min(cursor.x, cols) - 1
    elif y > 0 and screen.wrapped[y - 1]:
        y, x = y - 1, cols - 1
    else:
        return
    row = screen.buffer[y]
    cell = row[x]
    if cell.data == "" and x > 0:  # the second cell of a wide character: attach to it
        x -= 1
        cell = row[x]
    if len(cell.data) >= MAX_CELL_CHARS:
        return
    row[x] = cell._replace(data=cell.data + char)
    screen.dirty.add(y)
