"""Router -> pane worker: commands, each answered by a Reply (pebrel/messages/replies.py),
and notices."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pebrel.messages.base import Message


@dataclass(frozen=True, slots=True)
class WriteInput(Message):
    type: ClassVar[str] = "write_input"
    request_id: int
    data: bytes


@dataclass(frozen=True, slots=True)
class WriteAtPrompt(Message):
    """Write ``data`` once the shell's prompt has been drawn (``workers/promptwrites.py``), after
    the prompt's marks have been sent: at once if it is at its prompt. Answered like a
    WriteInput, or with ``written=0`` and NOT_AT_PROMPT once cancelled unwritten."""

    type: ClassVar[str] = "write_at_prompt"
    request_id: int
    data: bytes


@dataclass(frozen=True, slots=True)
class CancelAtPrompt(Message):
    """Drop a WriteAtPrompt not written yet (its answer says so); a no-op once written."""

    type: ClassVar[str] = "cancel_at_prompt"
    request_id: int


@dataclass(frozen=True, slots=True)
class ReadStyled(Message):
    """Read the visible screen with each cell's look (pane.screen); answered by a
    StyledRead."""

    type: ClassVar[str] = "read_styled"
    request_id: int


@dataclass(frozen=True, slots=True)
class ReadGrid(Message):
    """Read the visible screen cell by cell (pane.read with ``screen``); answered by a
    GridRead. Never kept: every such read comes to the worker."""

    type: ClassVar[str] = "read_grid"
    request_id: int


@dataclass(frozen=True, slots=True)
class ReadScreen(Message):
    """Read the last ``lines`` logical lines of the screen (a read the worker's published
    screen does not answer)."""

    type: ClassVar[str] = "read_screen"
    request_id: int
    lines: int
    max_bytes: int


@dataclass(frozen=True, slots=True)
class ResizePty(Message):
    type: ClassVar[str] = "resize_pty"
    request_id: int
    cols: int
    rows: int


@dataclass(frozen=True, slots=True)
class ClosePane(Message):
    """Kill the pane's whole process tree and exit the worker."""

    type: ClassVar[str] = "close_pane"
    request_id: int


@dataclass(frozen=True, slots=True)
class SendKey(Message):
    """Encode a named key for the terminal's current mode and write it (R4.3)."""

    type: ClassVar[str] = "send_key"
    request_id: int
    key: str
    control: bool
    alt: bool
    shift: bool
    repeat: int


@dataclass(frozen=True, slots=True)
class PasteText(Message):
    """Bracketed paste of `data`, only if the terminal has bracketed paste on (R4.2)."""

    type: ClassVar[str] = "paste_text"
    request_id: int
    data: bytes


MESSAGES: tuple[type[Message], ...] = (
    WriteInput,
    WriteAtPrompt,
    CancelAtPrompt,
    ReadScreen,
    ReadGrid,
    ReadStyled,
    ResizePty,
    ClosePane,
    SendKey,
    PasteText,
)
