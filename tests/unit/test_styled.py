"""workers/styled.py: runs of styled cells from a real PaneScreen (pane.screen, #21)."""

from __future__ import annotations

import pytest

from pebrel.workers import styled as styled_module
from pebrel.workers.screen import PaneScreen
from pebrel.workers.styled import colour

pytestmark = pytest.mark.timeout(30)


def test_colours_as_the_wire_gives_them() -> None:
    assert colour("default") is None
    assert colour("red") == "red"
    assert colour("brown") == "yellow" and colour("brightbrown") == "brightyellow"
    assert colour("00FF7f") == "#00ff7f"


def test_runs_wide_characters_and_trailing_blanks() -> None:
    screen = PaneScreen(20, 3)
    screen.feed("a\x1b[32mgr\x1b[0m中b   \r\n".encode())
    shown = screen.styled()
    assert [[text for text, _ in runs] for runs in shown.rows] == [["a", "gr", "中b"], [], []]
    assert shown.styles[shown.rows[0][1][1]]["fg"] == "green"
    assert (shown.cursor_row, shown.cursor_col, shown.styles_cut) == (1, 0, False)


def test_past_the_style_limit_cells_take_the_default_look(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(styled_module, "MAX_STYLES", 3)
    screen = PaneScreen(20, 2)
    screen.feed(b"\x1b[31mr\x1b[32mg\x1b[33my\x1b[34mb")
    shown = screen.styled()
    assert len(shown.styles) == 3 and shown.styles_cut
    assert shown.rows[0] == [["r", 1], ["g", 2], ["yb", 0]]
