"""Event cursors: the opaque position a consumer ACKs (I2.2, I2.3; #17).

A cursor names one event of one group: its group id and its sequence. On the wire it is
base64url (no padding) of ``pebrel.cursor.v1:<group_id>:<sequence>``. Clients treat it as an
opaque string; the version prefix lets a later format be told apart. Anything that does not
decode to exactly that shape is `INVALID_EVENT_CURSOR`.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Final

from pebrel.errors import CollabCode, CollabError

PREFIX: Final = "pebrel.cursor.v1"
#: The longest cursor text accepted (a group id is short; this bounds the work of a bad one).
MAX_CHARS: Final = 256
_SHAPE: Final = re.compile(r"pebrel\.cursor\.v1:([A-Za-z0-9_.-]{1,100}):([1-9][0-9]{0,17})")
_TEXT: Final = re.compile(r"[A-Za-z0-9_-]+")


def encode(group_id: str, sequence: int) -> str:
    """The cursor of event ``sequence`` of group ``group_id``."""
    raw = f"{PREFIX}:{group_id}:{sequence}".encode("ascii")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def invalid(text: object, reason: str) -> CollabError:
    shown = text[:MAX_CHARS] if isinstance(text, str) else None
    return CollabError(
        CollabCode.INVALID_EVENT_CURSOR,
        f"not an event cursor of this service: {reason}",
        {"cursor": shown},
    )


def decode(text: object) -> tuple[str, int]:
    """``(group_id, sequence)`` of a cursor made by `encode`; INVALID_EVENT_CURSOR otherwise."""
    if not isinstance(text, str) or not 0 < len(text) <= MAX_CHARS or not _TEXT.fullmatch(text):
        raise invalid(text, "a cursor is a base64url string as the stream sent it")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode("ascii")
    except (binascii.Error, ValueError) as exc:
        raise invalid(text, "it does not decode") from exc
    found = _SHAPE.fullmatch(raw)
    if found is None or encode(found[1], int(found[2])) != text:
        raise invalid(text, "unknown format or version")
    return found[1], int(found[2])
