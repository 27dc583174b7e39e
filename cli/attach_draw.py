"""What `pebrel attach` writes to the user's terminal: a pane's styled screen (pane.screen)
as escape sequences, clipped to the terminal, with a status line at the bottom (#21).

Pure functions: `cli/attach_cmd.py` does the talking. The pane is shown at its own size
(the attach does not resize it: other panes share its tab); a terminal smaller than the pane
shows its top-left part, one larger shows blank space around it.
"""

from __future__ import annotations

from typing import Any

from wcwidth import wcwidth

_BASE = {
    "black": 0,
    "red": 1,
    "green": 2,
    "yellow": 3,
    "blue": 4,
    "magenta": 5,
    "cyan": 6,
    "white": 7,
}
_ATTRIBUTES = (
    ("bold", "1"),
    ("italic", "3"),
    ("underline", "4"),
    ("blink", "5"),
    ("inverse", "7"),
    ("strikethrough", "9"),
)


def colour_codes(value: str | None, background: bool) -> list[str]:
    """SGR parameters for one wire colour (null, a name, or #rrggbb)."""
    if value is None:
        return []
    if value.startswith("#") and len(value) == 7:
        red, green, blue = (int(value[i : i + 2], 16) for i in (1, 3, 5))
        return ["48" if background else "38", "2", str(red), str(green), str(blue)]
    bright = value.startswith("bright")
    index = _BASE.get(value[6:] if bright else value)
    if index is None:
        return []
    return [str((100 if bright else 40) + index if background else (90 if bright else 30) + index)]


def sgr(style: dict[str, Any]) -> str:
    """The escape sequence that sets one wire style (from the default look)."""
    params = ["0"]
    params += [code for name, code in _ATTRIBUTES if style.get(name)]
    params += colour_codes(style.get("fg"), False)
    params += colour_codes(style.get("bg"), True)
    return "\x1b[" + ";".join(params) + "m"


def clip_runs(runs: list[list[Any]], width: int) -> list[tuple[str, int]]:
    """A row's runs cut to `width` columns (a wide character that would straddle the edge
    is left out)."""
    out: list[tuple[str, int]] = []
    used = 0
    for text, style in runs:
        kept = []
        for char in text:
            cells = max(wcwidth(char), 1)
            if used + cells > width:
                break
            kept.append(char)
            used += cells
        if kept:
            out.append(("".join(kept), int(style)))
        if used >= width:
            break
    return out


def frame(screen: dict[str, Any], cols: int, rows: int, status: str) -> str:
    """The whole terminal: the pane's rows (as many as fit above the status line), the status
    line in inverse video, then the pane's cursor where it is (hidden when off screen)."""
    styles: list[dict[str, Any]] = screen["styles"]
    codes = [sgr(style) for style in styles]
    body_rows = max(rows - 1, 0)
    parts = ["\x1b[?25l\x1b[H"]
    lines: list[list[list[Any]]] = screen["lines"]
    for row in range(body_rows):
        parts.append(f"\x1b[{row + 1};1H\x1b[0m")
        if row < len(lines):
            for text, style in clip_runs(lines[row], cols):
                parts.append(codes[style] if style < len(codes) else "\x1b[0m")
                parts.append(text)
            parts.append("\x1b[0m")
        parts.append("\x1b[K")
    bar = status[: max(cols, 0)]
    parts.append(f"\x1b[{rows};1H\x1b[0;7m{bar}\x1b[K\x1b[0m")
    cursor = screen["cursor"]
    if cursor["visible"] and cursor["row"] < body_rows and cursor["col"] < cols:
        parts.append(f"\x1b[{cursor['row'] + 1};{cursor['col'] + 1}H\x1b[?25h")
    return "".join(parts)
