"""The Program Status Protocol (OSC 7501) and ConEmu's progress report (OSC 9;4), as read
from a pane's output (#20). Pure: no I/O; ``workers/status_records.py`` applies it to a pane.

A program reports what it is doing with ``ESC ] 7501 ; key=value:key=value ST`` (ST is
``ESC \\`` or BEL). What is read, per the protocol:

- Pairs are ``key=value`` joined by ``:``. A key is ``[a-z]+`` of at most 16 bytes (a longer
  one discards the report), a value ``[A-Za-z0-9_.,+/=-]*``; a malformed pair is skipped, an
  unknown key ignored, and of a repeated key the last wins.
- ``state`` (required): ``idle``, ``working``, ``blocked``, ``done``, ``error``, or ``clear``
  (removes the addressed record and those below it; without ``id``, every record).
- ``id``: the record, a path of 1-8 segments ``[A-Za-z0-9_.+-]{1,32}`` joined by ``/``, at
  most 128 bytes; absent means the root record. One outside the grammar ignores the report.
- ``kind`` (with ``blocked`` only): ``permission``, ``question`` or ``auth``.
- ``progress`` (with ``working`` or ``blocked`` only): an integer 0-100; anything else is as
  if absent.
- ``app``: ``[A-Za-z0-9_.+-]{1,32}``; a record without one shows its nearest ancestor's.
- ``title`` and ``msg``: base64 of UTF-8 text, at most 256/192 and 2,732/2,048 bytes (encoded/
  decoded). Base64 that does not decode, text that is not UTF-8 or holds a control character,
  or any limit broken discards the whole report.
- The whole sequence is at most 4,096 bytes from ``ESC ]`` to a two-byte ST.
- ``ESC ] 7501 ; ? ST`` asks whether the terminal reads the protocol; a terminal that does
  answers with the same bytes (programs such as Claude Code report only after that answer).

Each report replaces its record whole. The table keeps ``MAX_RECORDS`` records; past that, the
one updated least recently goes.

OSC 9;4 (ConEmu, Windows Terminal): ``ESC ] 9 ; 4 ; st ; pr ST`` with ``st`` 0 (remove), 1
(progress ``pr``), 2 (error), 3 (indeterminate), 4 (paused); other OSC 9 forms (notifications)
are not progress and are ignored.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

OSC_PROGRAM_STATUS = 7501
OSC_CONEMU = 9
#: The answer to the protocol's query: the same bytes.
QUERY_REPLY = b"\x1b]7501;?\x1b\\"

STATES = ("idle", "working", "blocked", "done", "error")
KINDS = ("permission", "question", "auth")
SEQUENCE_MAX_BYTES = 4096
_FRAME_BYTES = len("\x1b]7501;") + 2  # the introducer and a two-byte ST
KEY_MAX_BYTES = 16
ID_MAX_BYTES = 128
ID_MAX_DEPTH = 8
MSG_MAX_ENCODED, MSG_MAX_DECODED = 2732, 2048
TITLE_MAX_ENCODED, TITLE_MAX_DECODED = 256, 192
#: Records one pane keeps (the protocol asks for at least 64).
MAX_RECORDS = 64

_KEY = re.compile(r"[a-z]+")
_VALUE = re.compile(r"[A-Za-z0-9_.,+/=-]*")
_SEGMENT = re.compile(r"[A-Za-z0-9_.+-]{1,32}")
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_PROGRESS = re.compile(r"[0-9]{1,3}")
#: C0, DEL and C1 controls: refused in decoded text.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True, slots=True)
class Record:
    """One record a program reported (``id`` "" is the root)."""

    id: str
    state: str
    kind: str | None = None
    progress: int | None = None
    app: str | None = None
    title: str | None = None
    msg: str | None = None


@dataclass(frozen=True, slots=True)
class Query:
    """``OSC 7501 ; ?``: the program asks whether the terminal reads the protocol."""


@dataclass(frozen=True, slots=True)
class Clear:
    """``state=clear``: remove the record ``id`` and those below it ("" : every record)."""

    id: str


@dataclass(frozen=True, slots=True)
class Progress:
    """An OSC 9;4 report: ``state`` "working" or "error" (None: the progress was removed)."""

    state: str | None
    progress: int | None


def parse(payload: str) -> Record | Clear | Query | None:
    """One OSC 7501 body (after ``7501;``); None when it is to be ignored."""
    if len(payload.encode("utf-8", "surrogatepass")) + _FRAME_BYTES > SEQUENCE_MAX_BYTES:
        return None
    if payload.startswith("?"):
        return Query()
    pairs: dict[str, str] = {}
    texts: dict[str, str] = {}
    for raw in payload.split(":"):
        key, sep, value = raw.partition("=")
        if not sep:
            continue
        if len(key.encode("utf-8", "surrogatepass")) > KEY_MAX_BYTES:
            return None
        if not _KEY.fullmatch(key) or not _VALUE.fullmatch(value):
            continue
        if not _within_limits(key, value):
            return None
        if key in ("msg", "title"):
            text = _text(value, MSG_MAX_DECODED if key == "msg" else TITLE_MAX_DECODED)
            if text is None:
                return None
            texts[key] = text
        pairs[key] = value
    state = pairs.get("state")
    if state is None or (state != "clear" and state not in STATES):
        return None
    record_id = pairs.get("id", "")
    if "id" in pairs and not all(_SEGMENT.fullmatch(s) for s in record_id.split("/")):
        return None
    if state == "clear":
        return Clear(record_id)
    kind = pairs.get("kind") if state == "blocked" else None
    progress = pairs.get("progress") if state in ("working", "blocked") else None
    app = pairs.get("app")
    return Record(
        id=record_id,
        state=state,
        kind=kind if kind in KINDS else None,
        progress=int(progress)
        if progress is not None and _PROGRESS.fullmatch(progress) and int(progress) <= 100
        else None,
        app=app if app is not None and _SEGMENT.fullmatch(app) else None,
        title=texts.get("title"),
        msg=texts.get("msg"),
    )


def _within_limits(key: str, value: str) -> bool:
    if key == "msg":
        return len(value) <= MSG_MAX_ENCODED
    if key == "title":
        return len(value) <= TITLE_MAX_ENCODED
    if key == "app":
        return len(value) <= 32
    if key == "id":
        segments = value.split("/")
        return (
            len(value) <= ID_MAX_BYTES
            and len(segments) <= ID_MAX_DEPTH
            and all(len(s) <= 32 for s in segments)
        )
    return True


def _text(value: str, max_bytes: int) -> str | None:
    """Base64 of UTF-8 text without control characters, within ``max_bytes``; else None."""
    if not _BASE64.fullmatch(value):
        return None
    stripped = value.rstrip("=")
    if len(stripped) % 4 == 1 or (len(value) != len(stripped) and len(value) % 4):
        return None
    try:
        raw = base64.b64decode(stripped + "=" * (-len(stripped) % 4), validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    if len(raw) > max_bytes or _CONTROL.search(text):
        return None
    return text


def parse_progress(payload: str) -> Progress | None:
    """An OSC 9 body (after ``9;``) if it is a ``4;st;pr`` progress report, else None."""
    fields = payload.split(";")
    if fields[0] != "4" or len(fields) < 2 or len(fields) > 3:
        return None
    state_code = fields[1]
    value = fields[2] if len(fields) == 3 else ""
    progress = int(value) if _PROGRESS.fullmatch(value) and int(value) <= 100 else None
    if state_code == "0":
        return Progress(None, None)
    if state_code in ("1", "4"):
        return Progress("working", progress)
    if state_code == "3":
        return Progress("working", None)
    if state_code == "2":
        return Progress("error", progress)
    return None


class StatusTable:
    """The records one pane's programs reported, the least recently updated first."""

    def __init__(self, capacity: int = MAX_RECORDS) -> None:
        self.capacity = capacity
        self.records: OrderedDict[str, Record] = OrderedDict()

    def apply(self, report: Record | Clear) -> bool:
        """Apply one report; True when the records changed."""
        if isinstance(report, Clear):
            prefix = report.id + "/"
            return self.drop(
                lambda r: report.id == "" or r.id == report.id or r.id.startswith(prefix)
            )
        if self.records.get(report.id) == report:
            self.records.move_to_end(report.id)
            return False
        self.records.pop(report.id, None)
        while len(self.records) >= self.capacity:
            self.records.popitem(last=False)
        self.records[report.id] = report
        return True

    def drop(self, predicate: Callable[[Record], bool]) -> bool:
        gone = [key for key, record in self.records.items() if predicate(record)]
        for key in gone:
            del self.records[key]
        return bool(gone)

    def app_of(self, record: Record) -> str | None:
        """The record's ``app``, or its nearest ancestor's."""
        at = record.id
        while True:
            found = self.records.get(at)
            if found is not None and found.app is not None:
                return found.app
            if at == "":
                return None
            at = at.rpartition("/")[0]
