"""Named keys to the bytes an xterm-compatible terminal sends for them (R4.3).

Pure: the worker passes the terminal's current DECCKM (application cursor keys) mode in.
Modified cursor, editing and function keys use xterm's parameter form (`CSI 1;<m>A`,
`CSI 5;<m>~`) with m = 1 + shift + 2*alt + 4*control. Single-byte keys take `alt` as an ESC
prefix; a modifier that such a key has no distinct encoding for (shift+enter, a letter
without control, ...) is refused with ValueError rather than silently dropped.
"""

from __future__ import annotations

from typing import Final

ESC: Final = b"\x1b"
CSI: Final = b"\x1b["
SS3: Final = b"\x1bO"

#: Cursor keys and home/end: final byte; SS3 instead of CSI in application cursor mode.
_CURSOR_FINALS: Final = {
    "up": b"A",
    "down": b"B",
    "right": b"C",
    "left": b"D",
    "home": b"H",
    "end": b"F",
}
#: Editing keys and f5-f12: `CSI <n> ~`.
_TILDE_CODES: Final = {
    "insert": 2,
    "delete": 3,
    "page_up": 5,
    "page_down": 6,
    "f5": 15,
    "f6": 17,
    "f7": 18,
    "f8": 19,
    "f9": 20,
    "f10": 21,
    "f11": 23,
    "f12": 24,
}
#: f1-f4: `SS3 <final>`, or `CSI 1;<m> <final>` when modified.
_SS3_FUNCTION_FINALS: Final = {"f1": b"P", "f2": b"Q", "f3": b"R", "f4": b"S"}

LETTERS: Final = frozenset("abcdefghijklmnopqrstuvwxyz")
#: Every key name `encode_key` knows (the schema's `$defs.key`).
KEY_NAMES: Final = frozenset(
    {"enter", "tab", "escape", "backspace", "space"}
    | set(_CURSOR_FINALS)
    | set(_TILDE_CODES)
    | set(_SS3_FUNCTION_FINALS)
    | LETTERS
)


def _modifier_param(control: bool, alt: bool, shift: bool) -> int:
    return 1 + int(shift) + 2 * int(alt) + 4 * int(control)


def _refuse(key: str, modifier: str) -> ValueError:
    return ValueError(f"key {key!r} has no encoding with {modifier}")


def _single_byte(key: str, control: bool, shift: bool) -> bytes:
    """The byte of a single-byte key (before the alt prefix); refuses modifiers it lacks."""
    if key in LETTERS:
        if not control:
            raise ValueError(
                f"letter key {key!r} needs modifiers.control; type text with pane.prompt"
            )
        if shift:
            raise _refuse(key, "shift")
        return bytes([ord(key) - ord("a") + 1])
    if key == "space":
        if shift:
            raise _refuse(key, "shift")
        return b"\x00" if control else b" "
    if key == "backspace":
        if shift:
            raise _refuse(key, "shift")
        return b"\x08" if control else b"\x7f"
    if key in ("enter", "escape", "tab"):
        if control:
            raise _refuse(key, "control")
        if shift:
            raise _refuse(key, "shift")
        return {"enter": b"\r", "escape": ESC, "tab": b"\t"}[key]
    raise ValueError(f"unknown key {key!r}")


def encode_key(key: str, control: bool, alt: bool, shift: bool, app_cursor: bool) -> bytes:
    """The bytes for one press of `key`; ValueError when the combination has no encoding."""
    modified = control or alt or shift
    param = _modifier_param(control, alt, shift)
    if key in _CURSOR_FINALS:
        final = _CURSOR_FINALS[key]
        if modified:
            return CSI + f"1;{param}".encode() + final
        return (SS3 if app_cursor else CSI) + final
    if key in _TILDE_CODES:
        code = _TILDE_CODES[key]
        suffix = f";{param}" if modified else ""
        return CSI + f"{code}{suffix}~".encode()
    if key in _SS3_FUNCTION_FINALS:
        final = _SS3_FUNCTION_FINALS[key]
        if modified:
            return CSI + f"1;{param}".encode() + final
        return SS3 + final
    if key == "tab" and shift:
        if control:
            raise _refuse(key, "control")
        return (ESC if alt else b"") + CSI + b"Z"
    data = _single_byte(key, control, shift)
    return ESC + data if alt else data
