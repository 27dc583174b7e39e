"""Validation of text a client asks Pebrel to type into a pane (R4.1) or to show (R3.3)."""

from __future__ import annotations

import unicodedata

from pebrel.errors import ErrorCode, PebrelError
from pebrel.model import MAX_PROMPT_BYTES


def check_prompt_text(text: str, field: str = "text") -> bytes:
    """One line of plain text: no newline, ESC or other C0/C1 control, at most 32 KiB."""
    data = text.encode("utf-8", errors="surrogatepass")
    if len(data) > MAX_PROMPT_BYTES:
        raise PebrelError(
            ErrorCode.INVALID_PARAMS,
            f"{field} is {len(data)} bytes; the limit is {MAX_PROMPT_BYTES}",
            {"field": field, "bytes": len(data), "limit": MAX_PROMPT_BYTES},
        )
    check_no_controls(text, field, "; use pane.send_key for keys")
    return data


def check_no_controls(text: str, field: str, hint: str = "") -> None:
    """No C0/C1 control character (newline, ESC, tab, DEL...) and no lone surrogate."""
    for index, char in enumerate(text):
        if unicodedata.category(char) in ("Cc", "Cs"):
            raise PebrelError(
                ErrorCode.INVALID_PARAMS,
                f"{field} contains control character U+{ord(char):04X} at {index}{hint}",
                {"field": field, "index": index, "codepoint": ord(char)},
            )
