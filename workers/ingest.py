"""Fast ingestion: plain text floods go to scrollback without passing through pyte.

pyte is the VT parser of record, but it handles one character at a time. Most of a flood (a
build log, ``cat`` of a file, a test run) is printable ASCII, CR LF line ends and SGR colour
changes, and most of it scrolls off the screen before anyone looks. :class:`FastIngest` holds
such "safe" bytes back instead of parsing them, and when enough have piled up it works out
which lines must scroll off: their rows go straight into the screen's compact history (text
and soft-wrap flags, exactly as :class:`workers.vt.TrackedScreen` would have recorded them),
the SGR sequences that still matter are fed to pyte, the screen is cleared with the cursor at
the top, and only the last screenful of held bytes stays pending. Everything else (any other
control or escape sequence, non-ASCII text, a bare LF, modes other than plain autowrap, the
alternate screen) goes to pyte as before, after the held bytes.

Held bytes are applied (:meth:`FastIngest.flush`) before anything looks at the screen; state
that safe bytes cannot change (title, modes, alternate screen) may be read without a flush.
The differential test in ``tests/unit/test_ingest_differential.py`` feeds a corpus through
this path and through plain pyte and requires identical screens, cursors, modes and history.
"""

from __future__ import annotations

import re

import pyte
from pyte import modes

from pebrel.workers.vt import TrackedScreen

COMPACT_BYTES = 32 * 1024
"""Held bytes beyond this are compacted as they arrive."""

HELD_MAX_FACTOR = 2
"""Held bytes that compaction cannot shrink below this many times ``compact_bytes`` go to pyte."""

SQUASH_MIN_CRS = 16
"""A partial line with more carriage returns than this has its overwritten frames dropped."""

# Printable ASCII, CR, LF and complete SGR sequences with plain numeric parameters. The
# quantifiers are possessive (nothing here ever needs to give characters back): a quarter
# less work per byte on SGR-dense output.
_SAFE_RUN = re.compile(rb"[\x20-\x7e\r\n]*+(?:\x1b\[[0-9;]*+m[\x20-\x7e\r\n]*+)*+")
_SGR = re.compile(rb"\x1b\[[0-9;]*+m")
# What a chunk may end with while an SGR sequence is still being received.
_SGR_PREFIX = re.compile(rb"\x1b(?:\[[0-9;]*)?")
_SGR_RESETS = (b"\x1b[0m", b"\x1b[m")
_PLAIN = bytes(range(0x20, 0x7F)) + b"\r\n"  # a chunk of only these is safe as a whole
_SGR_SPLIT = re.compile(r"\x1b\[([0-9;]*+)m")  # text, params, text, params, ..., text
_CONTROL_SPLIT = re.compile(r"([\r\n])")


def text_rows(data: bytes, cols: int, whole_lines: bool) -> list[tuple[str, bool]] | None:
    """The rows (text, soft-wrapped) that CR LF separated lines of held bytes make when drawn
    from column 0 of blank rows; None if an LF comes without a CR (it keeps its column).

    ``whole_lines``: ``data`` ends with a line end (no row follows it); otherwise its last,
    unfinished line makes the last rows. This runs on every compaction of a flood, so it works
    line by line with string methods (a regular expression per row cost three times as much).
    """
    if b"\x1b" in data:
        data = _SGR.sub(b"", data)
    lines = data.decode("ascii").split("\r\n")
    rest = "".join(lines)  # what the line ends leave: a CR or LF here is not part of one
    if "\n" in rest:
        return None
    if whole_lines:
        lines.pop()
    if "\r" in rest:  # a CR inside a line: render row by row
        return [row for line in lines for row in render_rows(line, cols)]
    rows: list[tuple[str, bool]] = []
    append = rows.append
    twice = 2 * cols
    for line in lines:
        if len(line) <= cols:
            append((line.rstrip(), False))
        elif len(line) <= twice:
            append((line[:cols], True))
            append((line[cols:].rstrip(), False))
        else:
            last = (len(line) - 1) // cols * cols
            rows.extend([(line[x : x + cols], True) for x in range(0, last, cols)])
            append((line[last:].rstrip(), False))
    return rows


def render_rows(line: str, cols: int) -> list[tuple[str, bool]]:
    """The history rows of one printable-ASCII line drawn from column 0 of a blank row.

    ``line`` may contain CRs (each returns to column 0 of the current row); a line wider than
    ``cols`` wraps. Every row but the last is a full soft-wrapped row; the last is trimmed.
    """
    rows = [""]
    x = 0
    for index, segment in enumerate(line.split("\r")):
        if index:
            x = 0
        pos = 0
        while pos < len(segment):
            if x == cols:
                rows.append("")
                x = 0
            count = min(cols - x, len(segment) - pos)
            row = rows[-1]
            rows[-1] = row[:x] + segment[pos : pos + count] + row[x + count :]
            x += count
            pos += count
    last = rows.pop()
    return [(row, True) for row in rows] + [(last.rstrip(), False)]


def squash_overwrites(piece: bytes, cols: int) -> bytes:
    """Drop the frames of a CR-rewritten line that later frames cover completely.

    ``piece`` holds no LF. Frames after the first start at column 0; one no longer than some
    later frame is fully overwritten, so only its SGR sequences (which still change the
    attributes) are kept. Nothing is dropped if any later frame could wrap.
    """
    frames = piece.split(b"\r")
    later = frames[1:]
    coloured = b"\x1b" in piece
    widths = [len(_SGR.sub(b"", frame)) for frame in later] if coloured else [*map(len, later)]
    if not later or max(widths) > cols:
        return piece
    kept: list[bytes] = [later[-1]]
    best = widths[-1]
    dropped: list[bytes] = []
    for frame, width in zip(reversed(later[:-1]), reversed(widths[:-1]), strict=True):
        if width > best:
            kept.append(b"".join(reversed(dropped)) + b"\r")
            dropped = []
            kept.append(frame)
            best = width
        elif coloured:
            dropped.extend(reversed(_SGR.findall(frame)))
    kept.append(b"".join(reversed(dropped)) + b"\r")
    kept.append(frames[0])
    return b"".join(reversed(kept))


class FastIngest:
    """Feeds a :class:`TrackedScreen`, holding back and compacting safe bytes."""

    def __init__(self, screen: TrackedScreen, stream: pyte.ByteStream) -> None:
        self.screen = screen
        self.stream = stream
        self.pending: list[bytes] = []
        self.pending_size = 0
        self.compact_bytes = COMPACT_BYTES
        self.carry = b""  # an SGR sequence cut by the end of the last chunk
        # The screen was cleared by a compaction: blank, cursor at (0, 0), pending follows.
        self.blank_top = False

    # -- feeding ------------------------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        if self.carry:
            data = self.carry + data
            self.carry = b""
        pos = 0
        end = len(data)
        while pos < end:
            if not self.pending and not self._ready():
                pos = self._feed_slow(data, pos)
                continue
            if not pos and b"\x1b" not in data and not data.translate(None, _PLAIN):
                stop = end  # the usual flood chunk: a quarter of the regular expression's cost
            else:
                stop = _SAFE_RUN.match(data, pos).end()  # type: ignore[union-attr]
            if stop > pos:
                self.pending.append(data[pos:stop] if pos or stop < end else data)
                self.pending_size += stop - pos
                pos = stop
            if pos < end:
                if _SGR_PREFIX.fullmatch(data, pos):
                    self.carry = data[pos:]
                    break
                self.flush()
                pos = self._feed_slow(data, pos)
        if self.pending_size > self.compact_bytes:
            self._compact()
            if self.pending_size > HELD_MAX_FACTOR * self.compact_bytes:
                self._apply_pending()  # e.g. one very long line: nothing to compact

    def _feed_slow(self, data: bytes, pos: int) -> int:
        """Feed pyte up to the next LF (or the end); return where to go on."""
        newline = data.find(b"\n", pos)
        stop = len(data) if newline < 0 else newline + 1
        self.blank_top = False  # pyte draws on the screen: it is no longer known to be blank
        self.stream.feed(data[pos:stop])
        return stop

    def flush(self) -> None:
        """Apply everything held back, so the screen is exact."""
        if self.pending:
            if self.pending_size > self.screen.columns * self.screen.lines:
                self._compact()
            self._apply_pending()
        if self.carry:
            carry, self.carry = self.carry, b""
            self.stream.feed(carry)
        # Held bytes or not (a one-row screen can end a compaction with none), from here on
        # the screen is pyte's own, and may change under it (a resize, say).
        self.blank_top = False

    def held_rows(self) -> list[tuple[str, bool]] | None:
        """The rows the held bytes make, for a read that need not apply them; else None.

        Only once a compaction (done here if it can be) left the screen blank with the cursor
        at the top, so that applying would draw these rows from there: the last screenful
        stays visible and the rows above it go to history. Rows are (text, soft-wrapped), as
        history keeps them.
        """
        if not self.pending:
            return None
        screen = self.screen
        if not self.blank_top or self.pending_size > screen.columns * screen.lines:
            self._compact()
            if not self.blank_top or not self.pending:
                return None
        data = b"".join(self.pending)
        self.pending = [data]
        rows = text_rows(data, screen.columns, whole_lines=False)
        if rows is None:
            return None  # a bare LF keeps its column: only pyte knows
        return rows if len(rows) >= screen.lines else None

    def _apply_pending(self) -> None:
        """Apply the held bytes to the screen, calling its handlers as pyte's parser would.

        Held bytes are printable ASCII, CR, LF and complete SGR sequences, and the parser is
        in its ground state, so the parser's character-by-character walk (the slow part for
        escape sequences) can be skipped: text runs go to ``draw``, CR and LF to their
        handlers, and SGR parameters are parsed as pyte does (empty is 0, at most 9999).
        """
        data = b"".join(self.pending)
        self.pending = []
        self.pending_size = 0
        self.blank_top = False
        screen = self.screen
        draw, carriage_return, linefeed = screen.draw, screen.carriage_return, screen.linefeed
        sgr = screen.select_graphic_rendition
        for index, piece in enumerate(_SGR_SPLIT.split(data.decode("ascii"))):
            if index % 2:
                sgr(*[min(int(param or 0), 9999) for param in piece.split(";")])
                continue
            for token in _CONTROL_SPLIT.split(piece):
                if token == "\r":
                    carriage_return()
                elif token == "\n":
                    linefeed()
                elif token:
                    draw(token)

    def _ready(self) -> bool:
        """Whether pyte is where safe bytes could be held back: ground state, plain modes."""
        stream = self.stream
        screen = self.screen
        mode = screen.mode
        margins = screen.margins
        return bool(
            stream._taking_plain_text
            and stream.use_utf8
            and not stream.utf8_decoder.getstate()[0]
            and screen.main_saved is None
            and (margins is None or (margins.top == 0 and margins.bottom == screen.lines - 1))
            and modes.DECAWM in mode
            and modes.IRM not in mode
            and modes.LNM not in mode
            and screen.cursor.x <= screen.columns
        )

    # -- compaction ---------------------------------------------------------------------------
    def _compact(self) -> None:
        data = b"".join(self.pending)
        rows = self.screen.lines
        cut = len(data)
        for _ in range(rows):
            cut = data.rfind(b"\n", 0, cut)
            if cut < 0:
                break
        start: int | None = 0
        if cut >= 0 and not self.blank_top:
            start = self._reach_fresh_bottom(data, cut)
        if start is None:
            start = cut + 1
        elif cut >= 0 and start <= cut:
            head = data[start : cut + 1]
            if not self._to_history(head):
                self.stream.feed(head)  # a bare LF keeps its column: leave it to pyte
                self.blank_top = False
            start = cut + 1
        tail = data[start:]
        last_lf = tail.rfind(b"\n") + 1
        if tail.count(b"\r", last_lf) > SQUASH_MIN_CRS:
            tail = tail[:last_lf] + squash_overwrites(tail[last_lf:], self.screen.columns)
        self.pending = [tail] if tail else []
        self.pending_size = len(tail)

    def _reach_fresh_bottom(self, data: bytes, cut: int) -> int | None:
        """Feed whole lines to pyte until the cursor starts a blank bottom row.

        Returns how much of ``data`` was fed, or None if the lines up to ``cut`` ran out first
        (then everything up to ``cut`` has been fed).
        """
        screen = self.screen
        bottom = screen.lines - 1
        cursor = screen.cursor
        start = 0
        while not (
            cursor.y == bottom
            and cursor.x == 0
            and not screen.buffer.get(bottom)
            and not screen.wrapped[bottom]
        ):
            if start > cut:
                return None
            newline = data.find(b"\n", start)
            self.stream.feed(data[start : newline + 1])
            start = newline + 1
            cursor = screen.cursor
        return start

    def _to_history(self, head: bytes) -> bool:
        """Push the rows of ``head`` (whole lines) and the screen above them into history.

        Returns False, changing nothing, if ``head`` has an LF without a CR before it.
        """
        rows = text_rows(head, self.screen.columns, whole_lines=True)
        if rows is None:
            return False
        screen = self.screen
        if not self.blank_top:
            for y in range(screen.lines - 1):
                screen.push_history(screen.buffer.get(y), screen.wrapped[y])
        screen.history.extend(rows)
        pushed = len(rows)
        screen.scrolled_total += pushed
        if b"\x1b" in head:
            reset = max(head.rfind(marker) for marker in _SGR_RESETS)
            attributes = _SGR.findall(head, max(reset, 0))
            if attributes:
                self.stream.feed(b"".join(attributes))
        screen.buffer.clear()
        screen.wrapped = [False] * screen.lines
        screen.cursor.x = 0
        screen.cursor.y = 0
        screen.dirty.update(range(screen.lines))
        self.blank_top = True
        return True
