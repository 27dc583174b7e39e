"""The visible screen with how each cell looks (pane.screen; #21): what a view for people
renders, and what a program can compare colours on.

Each row is a list of runs ``[text, style]``: consecutive cells of one style, ``style`` an index
into ``styles`` (0 is the default look: default colours, no attributes). The second cell of a
wide character has no text of its own (the run's text holds the character once: it covers two
columns), and blanks of the default style at the end of a row are left out. A style is
``{fg, bg, bold, italic, underline, strikethrough, inverse, blink}``; a colour is ``null`` (the
terminal's default), one of the 16 names (``black``, ``red``, ``green``, ``yellow``, ``blue``,
``magenta``, ``cyan``, ``white`` and their ``bright`` forms), or ``#rrggbb`` (256-colour and
true-colour cells). A screen has at most ``MAX_STYLES`` styles: cells past that many are given
the default look (``styles_cut``), which keeps an answer within bounds whatever was printed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyte.screens import Char

#: pyte's names for the ANSI colours, where they differ from the usual ones.
_NAMES = {"brown": "yellow", "brightbrown": "brightyellow"}
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")

Runs = list[list[Any]]  # [[text, style index], ...]
MAX_STYLES = 1024


@dataclass(frozen=True, slots=True)
class StyledScreen:
    rows: list[Runs]
    styles: list[dict[str, Any]]
    cursor_row: int
    cursor_col: int
    cursor_visible: bool
    alt_screen: bool
    styles_cut: bool


def colour(value: str) -> str | None:
    """A pyte colour as the wire gives it."""
    if value == "default":
        return None
    if len(value) == 6 and _HEX_DIGITS.issuperset(value):
        return "#" + value.lower()
    return _NAMES.get(value, value)


def style_of(char: Char) -> dict[str, Any]:
    return {
        "fg": colour(char.fg),
        "bg": colour(char.bg),
        "bold": char.bold,
        "italic": char.italics,
        "underline": char.underscore,
        "strikethrough": char.strikethrough,
        "inverse": char.reverse,
        "blink": char.blink,
    }


def styled_rows(
    buffer: Any, cols: int, rows: int, default: Char
) -> tuple[list[Runs], list[Any], bool]:
    """The runs of each of ``rows`` rows of pyte's ``buffer``, the style keys they index
    (``default``'s look first), and whether some cells lost their look to ``MAX_STYLES``."""
    keys: dict[tuple[Any, ...], int] = {tuple(default[1:]): 0}
    cut = False
    out: list[Runs] = []
    for y in range(rows):
        line = buffer.get(y)
        runs: Runs = []
        if line:
            text: list[str] = []
            current = -1
            for x in range(cols):
                char = line[x]
                if char.data == "" and x > 0:
                    continue  # the second cell of a wide character
                key = tuple(char[1:])
                index = keys.get(key)
                if index is None:
                    if len(keys) < MAX_STYLES:
                        index = keys[key] = len(keys)
                    else:
                        index, cut = 0, True
                if index != current:
                    if text:
                        runs.append(["".join(text), current])
                    text, current = [], index
                text.append(char.data or " ")
            if text:
                runs.append(["".join(text), current])
            if runs and runs[-1][1] == 0:
                trimmed = runs[-1][0].rstrip(" ")
                if trimmed:
                    runs[-1][0] = trimmed
                else:
                    runs.pop()
        out.append(runs)
    return out, list(keys), cut


def styled(screen: Any) -> StyledScreen:
    """The visible screen of a pyte ``screen`` (side-effect free)."""
    default = screen.default_char
    rows, keys, cut = styled_rows(screen.buffer, screen.columns, screen.lines, default)
    styles = [style_of(Char(" ", *key)) for key in keys]
    cursor = screen.cursor
    return StyledScreen(
        rows=rows,
        styles=styles,
        cursor_row=cursor.y,
        cursor_col=min(cursor.x, screen.columns - 1),
        cursor_visible=not cursor.hidden,
        alt_screen=screen.main_saved is not None,
        styles_cut=cut,
    )
