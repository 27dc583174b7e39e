"""Pane worker -> router: what a worker saw about its pane, reported unasked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pebrel.messages.base import Message, PaneFact


@dataclass(frozen=True, slots=True)
class PaneStarted(PaneFact):
    type: ClassVar[str] = "pane_started"
    worker_pid: int
    shell_pid: int
    integrated: bool


@dataclass(frozen=True, slots=True)
class PaneStartFailed(PaneFact):
    type: ClassVar[str] = "pane_start_failed"
    reason: str


@dataclass(frozen=True, slots=True)
class ShellMarked(PaneFact):
    """An OSC 133 mark seen in the pane's output; `row` is its absolute cursor row."""

    type: ClassVar[str] = "shell_marked"
    mark: str
    exit_code: int | None
    row: int


@dataclass(frozen=True, slots=True)
class CwdReported(PaneFact):
    type: ClassVar[str] = "cwd_reported"
    cwd: str


@dataclass(frozen=True, slots=True)
class TitleChanged(PaneFact):
    type: ClassVar[str] = "title_changed"
    title: str


@dataclass(frozen=True, slots=True)
class ForegroundChanged(PaneFact):
    """The PTY's foreground program changed: its process group, and the AI CLI kind it is.

    `agent_kind` is one of pebrel.agentkinds.KINDS when the foreground program is a known AI
    CLI (matched on argv[0] or an interpreter's script, never a substring), else None.
    `program` is the foreground program's display name ("" when the shell has it back).
    """

    type: ClassVar[str] = "foreground_changed"
    shell_in_foreground: bool
    foreground_pgid: int
    agent_kind: str | None
    program: str


@dataclass(frozen=True, slots=True)
class ProgramStatus(PaneFact):
    """An AI CLI reported its own state with an escape sequence (OSC 1337 SetUserVar, OSC 26).

    `state` is a task state (idle, running, completed, failed, attention, waiting_input) or
    "end" (the session is over); `origin` names the sequence it came from.
    """

    type: ClassVar[str] = "program_status"
    state: str
    session_id: str | None
    kind: str | None
    origin: str


@dataclass(frozen=True, slots=True)
class ScreenChanged(PaneFact):
    """The screen changed after the worker's last kept ScreenRead: answers the router kept are
    stale.

    Sent once per read-then-change (at the first output or resize after a read) once the
    read's watch has lapsed (while it lasts, ScreenUpdated is sent instead), before any message
    about the output that changed it.
    """

    type: ClassVar[str] = "screen_changed"
    #: How many change reports (ScreenChanged, ScreenUpdated) the worker has sent, this one too.
    reports: int = 0


@dataclass(frozen=True, slots=True)
class ScreenUpdated(PaneFact):
    """The screen changed after the worker's last kept read; this is that read's new answer
    (``read_lines`` lines). It replaces every answer the router kept for the pane.

    Sent while the read is watched (see ``workers/readwatch.py``), at most every few
    milliseconds while the output goes on, and before any other message about the output
    that changed the screen.
    """

    type: ClassVar[str] = "screen_updated"
    read_lines: int
    lines: list[str]
    history_available: int
    truncated: bool
    #: How many change reports (ScreenChanged, ScreenUpdated) the worker has sent, this one too.
    reports: int = 0


@dataclass(frozen=True, slots=True)
class ScreenMatched(PaneFact):
    """The screen rule matching the visible screen changed (None: no rule matches now)."""

    type: ClassVar[str] = "screen_matched"
    rule_id: str | None
    state: str | None


@dataclass(frozen=True, slots=True)
class PaneExited(PaneFact):
    type: ClassVar[str] = "pane_exited"
    exit_code: int | None
    signal: int | None
    reason: str


MESSAGES: tuple[type[Message], ...] = (
    PaneStarted,
    PaneStartFailed,
    ShellMarked,
    CwdReported,
    TitleChanged,
    ForegroundChanged,
    ProgramStatus,
    ScreenChanged,
    ScreenUpdated,
    ScreenMatched,
    PaneExited,
)
