"""Incremental OSC scanner that runs on raw PTY bytes before pyte sees them.

pyte reads only one digit of an OSC code, so ``ESC ] 133;A`` would reach it as an icon-name
change to ``"3;A"``. The pane worker therefore passes every chunk read from the PTY through
:class:`OscScanner` first: OSC 0, 1 and 2 (title and icon name) stay in the byte stream for pyte,
every other OSC is cut out and reported as an :class:`OscEvent` at the exact position where it
occurred, so the worker can feed the bytes before a mark, read the cursor, then record the mark.

The scanner is a small state machine that copes with a sequence split across reads at any byte.
Only 7-bit introducers (``ESC ]``) are recognised: in a UTF-8 stream a raw 0x9d byte is a
continuation byte, and pyte decodes it as U+FFFD anyway.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum, auto

OSC_MAX_BYTES = 64 * 1024
"""An OSC whose body (the bytes after ``ESC ]``) grows beyond this is dropped."""

_ESC = 0x1B
_BEL = 0x07
_C1_ST = 0x9C
_BACKSLASH = 0x5C
_RIGHT_BRACKET = 0x5D
_OSC_INTRO = b"\x1b]"
_ST_C0 = b"\x1b\\"
_TITLE_CODES = frozenset({b"0", b"1", b"2"})
_TERMINATOR = re.compile(rb"[\x07\x1b\x9c]")
# A compiled search finds ESC ] about 3x faster than `in`/`find`, whose two-byte search is
# slow in CPython (every PTY chunk is scanned; a lone ESC is found with memchr first).
_OSC_INTRO_SEARCH = re.compile(re.escape(_OSC_INTRO)).search


@dataclass(frozen=True, slots=True)
class OscEvent:
    """One OSC sequence cut out of the stream, such as a shell-integration mark."""

    code: int
    payload: str


class _State(Enum):
    TEXT = auto()  # nothing pending
    ESC = auto()  # a lone ESC ended the previous chunk
    BODY = auto()  # inside an OSC body, collecting it in the buffer
    BODY_ESC = auto()  # inside an OSC body, and the previous chunk ended with ESC
    DISCARD = auto()  # inside a runaway OSC: bytes are dropped up to its terminator
    DISCARD_ESC = auto()  # inside a runaway OSC, previous chunk ended with ESC


def _continues_utf8(body: bytes | bytearray) -> bool:
    """Tell whether a 0x9c byte appended to ``body`` would continue a UTF-8 character.

    Walks back over at most three continuation bytes to the lead byte and checks that the
    character it starts still expects another continuation byte.
    """
    seen = 1  # the 0x9c itself
    for index in range(len(body) - 1, max(len(body) - 4, -1), -1):
        byte = body[index]
        if 0x80 <= byte <= 0xBF:
            seen += 1
            continue
        if 0xC2 <= byte <= 0xDF:
            return seen <= 1
        if 0xE0 <= byte <= 0xEF:
            return seen <= 2
        if 0xF0 <= byte <= 0xF4:
            return seen <= 3
        return False
    return False


class _Output:
    """Collects the scanner's result, merging adjacent byte segments."""

    __slots__ = ("_items", "_parts")

    def __init__(self) -> None:
        self._items: list[bytes | OscEvent] = []
        self._parts: list[bytes] = []

    def add_bytes(self, data: bytes) -> None:
        if data:
            self._parts.append(data)

    def add_event(self, event: OscEvent) -> None:
        self._flush()
        self._items.append(event)

    def result(self) -> list[bytes | OscEvent]:
        self._flush()
        return self._items

    def _flush(self) -> None:
        if self._parts:
            self._items.append(self._parts[0] if len(self._parts) == 1 else b"".join(self._parts))
            self._parts = []


class OscScanner:
    """Splits raw PTY bytes into byte segments for pyte and :class:`OscEvent` objects.

    ``feed`` returns, in stream order, byte segments (never empty, never two in a row) and
    events. An incomplete sequence at the end of a chunk is held back until the next call.
    """

    def __init__(self) -> None:
        self._state = _State.TEXT
        # In BODY states: the OSC so far, starting with ``ESC ]``. In DISCARD states: the last
        # few body bytes, enough to judge whether a 0x9c continues a UTF-8 character.
        self._body = bytearray()

    def feed(self, data: bytes) -> list[bytes | OscEvent]:
        """Scan one chunk and return what can be passed on now, in stream order."""
        if self._state is _State.TEXT and (
            b"\x1b" not in data or (_OSC_INTRO_SEARCH(data) is None and not data.endswith(b"\x1b"))
        ):
            return [data] if data else []
        out = _Output()
        pos = 0
        end = len(data)
        while pos < end:
            state = self._state
            if state is _State.TEXT:
                pos = self._scan_text(data, pos, out)
            elif state is _State.ESC:
                if data[pos] == _RIGHT_BRACKET:
                    self._start_body()
                    pos += 1
                else:
                    out.add_bytes(b"\x1b")
                    self._state = _State.TEXT
            elif state is _State.BODY_ESC or state is _State.DISCARD_ESC:
                pos = self._after_body_esc(data, pos, out)
            else:
                pos = self._scan_body(data, pos, out)
        return out.result()

    def _start_body(self) -> None:
        self._state = _State.BODY
        self._body = bytearray(_OSC_INTRO)

    def _scan_text(self, data: bytes, pos: int, out: _Output) -> int:
        found = _OSC_INTRO_SEARCH(data, pos)
        start = found.start() if found else -1
        if start >= 0:
            out.add_bytes(data[pos:start])
            self._start_body()
            return start + 2
        if data[-1] == _ESC:
            out.add_bytes(data[pos:-1])
            self._state = _State.ESC
        else:
            out.add_bytes(data[pos:] if pos else data)
        return len(data)

    def _scan_body(self, data: bytes, pos: int, out: _Output) -> int:
        discarding = self._state is _State.DISCARD
        match = _TERMINATOR.search(data, pos)
        if match is None:
            self._append_body(data[pos:], discarding)
            return len(data)
        stop = match.start()
        self._append_body(data[pos:stop], discarding)
        discarding = self._state is _State.DISCARD
        byte = data[stop]
        if byte == _BEL:
            self._finish(b"\x07", out)
            return stop + 1
        if byte == _C1_ST:
            if _continues_utf8(self._body):
                self._append_body(b"\x9c", discarding)
                return stop + 1
            # pyte does not see a raw 0x9c as ST in UTF-8 mode: hand it ESC \ instead.
            self._finish(_ST_C0, out)
            return stop + 1
        # ESC ends the body: ESC \ is ST, any other ESC aborts the OSC and starts a new sequence.
        self._state = _State.DISCARD_ESC if discarding else _State.BODY_ESC
        return stop + 1

    def _after_body_esc(self, data: bytes, pos: int, out: _Output) -> int:
        if data[pos] == _BACKSLASH:
            self._finish(_ST_C0, out)
            return pos + 1
        # The ESC aborts the OSC (pyte would need a real terminator) and is scanned again.
        self._finish(b"\x07", out)
        self._state = _State.ESC
        return pos

    def _append_body(self, chunk: bytes, discarding: bool) -> None:
        body = self._body
        body += chunk
        if discarding:
            del body[:-3]
        elif len(body) - len(_OSC_INTRO) > OSC_MAX_BYTES:
            del body[:-3]
            self._state = _State.DISCARD

    def _finish(self, terminator: bytes, out: _Output) -> None:
        """Complete the OSC held in the buffer: pass a title on, report anything else."""
        body = self._body
        dropped = self._state in (_State.DISCARD, _State.DISCARD_ESC)
        self._state = _State.TEXT
        self._body = bytearray()
        if dropped:
            return
        code, sep, payload = bytes(body[len(_OSC_INTRO) :]).partition(b";")
        if code in _TITLE_CODES:
            out.add_bytes(bytes(body) + terminator)
        elif code.isdigit():
            out.add_event(OscEvent(int(code), payload.decode("utf-8", "replace") if sep else ""))
