"""What `pebrel attach` writes to the user's terminal (#21): styles as SGR, rows clipped to
the terminal, the status line, the cursor, and no control character from a pane's title."""

from __future__ import annotations

from typing import Any

from pebrel.cli.attach_cmd import printable
from pebrel.cli.attach_draw import clip_runs, colour_codes, frame, sgr
from tests.e2e.test_pane_screen import DEFAULT_STYLE

DEFAULT = DEFAULT_STYLE


def test_styles_become_sgr() -> None:
    assert sgr(DEFAULT) == "\x1b[0m"
    red_bold = {**DEFAULT, "fg": "red", "bold": True}
    assert sgr(red_bold) == "\x1b[0;1;31m"
    assert sgr({**DEFAULT, "bg": "brightblue", "inverse": True}) == "\x1b[0;7;104m"
    assert colour_codes("#0a0b0c", False) == ["38", "2", "10", "11", "12"]
    assert colour_codes("brightred", False) == ["91"]
    assert colour_codes("nonsense", True) == []


def test_rows_are_clipped_to_the_terminal_wide_characters_whole() -> None:
    assert clip_runs([["abc", 0], ["def", 1]], 4) == [("abc", 0), ("d", 1)]
    assert clip_runs([["a中", 0]], 2) == [("a", 0)]  # the wide character would straddle
    assert clip_runs([["a中", 0]], 3) == [("a中", 0)]


def screen(cursor_row: int = 0, cursor_col: int = 1, visible: bool = True) -> dict[str, Any]:
    return {
        "lines": [[["hi", 1]], []],
        "styles": [DEFAULT, {**DEFAULT, "fg": "green"}],
        "cursor": {"row": cursor_row, "col": cursor_col, "visible": visible},
    }


def test_a_frame_draws_rows_status_and_cursor() -> None:
    drawn = frame(screen(), 10, 4, "status line that is long")
    assert "\x1b[1;1H\x1b[0m\x1b[0;32mhi\x1b[0m\x1b[K" in drawn
    assert "\x1b[4;1H\x1b[0;7mstatus lin\x1b[K\x1b[0m" in drawn  # cut to 10 columns
    assert drawn.endswith("\x1b[1;2H\x1b[?25h")


def test_a_cursor_off_the_terminal_stays_hidden() -> None:
    assert not frame(screen(cursor_row=3), 10, 4, "s").endswith("\x1b[?25h")
    assert not frame(screen(visible=False), 10, 4, "s").endswith("\x1b[?25h")


def test_a_title_cannot_send_sequences_to_the_terminal() -> None:
    assert printable("ti\x1b[6ntle\x07\x9b1m\x7f") == "ti [6ntle  1m "
