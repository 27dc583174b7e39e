"""Pane worker -> router: answers to the router's commands, matched by ``request_id``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pebrel.messages.base import Message, Reply

#: The error of a WriteAtPrompt cancelled before its prompt came.
NOT_AT_PROMPT = "the shell did not reach its prompt"
#: The error of a write the worker did not make because the pane's shell has exited.
PANE_EXITED = "pane exited"


@dataclass(frozen=True, slots=True)
class InputWritten(Reply):
    type: ClassVar[str] = "input_written"
    written: int
    error: str | None


@dataclass(frozen=True, slots=True)
class PasteWritten(Reply):
    """Reply to PasteText; `bracketed` False means refused: the mode was off."""

    type: ClassVar[str] = "paste_written"
    written: int
    bracketed: bool
    error: str | None


@dataclass(frozen=True, slots=True)
class ScreenRead(Reply):
    """The screen as the worker had it; ``reports``: the publications it had sent before (a
    kept answer is stale if the router has seen a later one by the time it would keep it)."""

    type: ClassVar[str] = "screen_read"
    lines: list[str]
    history_available: int
    truncated: bool
    reports: int = 0
    #: Unix time when the worker read its screen.
    captured_at: float = 0.0


@dataclass(frozen=True, slots=True)
class GridRead(Reply):
    """The visible screen as the worker had it (``workers.screen.Grid``): ``cells`` has one
    list of ``cols`` cell texts per row."""

    type: ClassVar[str] = "grid_read"
    cells: list[list[str]]
    wrapped: list[bool]
    cursor_row: int
    cursor_col: int
    cursor_visible: bool
    alt_screen: bool
    history_available: int


@dataclass(frozen=True, slots=True)
class StyledRead(Reply):
    """The visible screen with how its cells look (``workers/styled.py``): per row, runs
    ``[text, style]`` indexing ``styles``."""

    type: ClassVar[str] = "styled_read"
    rows: list[list[list[Any]]]
    styles: list[dict[str, Any]]
    cols: int
    cursor_row: int
    cursor_col: int
    cursor_visible: bool
    alt_screen: bool
    captured_at: float
    styles_cut: bool = False


@dataclass(frozen=True, slots=True)
class PtyResized(Reply):
    type: ClassVar[str] = "pty_resized"
    cols: int
    rows: int


@dataclass(frozen=True, slots=True)
class PaneClosed(Reply):
    type: ClassVar[str] = "pane_closed"


MESSAGES: tuple[type[Message], ...] = (
    InputWritten,
    PasteWritten,
    ScreenRead,
    GridRead,
    StyledRead,
    PtyResized,
    PaneClosed,
)
