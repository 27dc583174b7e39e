"""Pane worker -> router: what a worker saw about its pane, reported unasked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

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
class ProgramRecords(PaneFact):
    """What the pane's foreground program reports of itself with OSC 7501 and OSC 9;4, all of
    it as it stands (``workers/status_records.py``): sent at once when a record's state or
    kind changes, else at most twice a second."""

    type: ClassVar[str] = "program_records"
    #: Every record, by id (the root, id "", first): id, state, kind, progress, app (its own
    #: or its nearest ancestor's), title, msg.
    records: list[dict[str, Any]]
    #: The last OSC 9;4 report: {"state": "working" | "error", "progress": int | None}.
    progress: dict[str, Any] | None
    #: The records ended because the group that reported them left the terminal's foreground.
    left: bool = False


@dataclass(frozen=True, slots=True)
class ScreenPublished(PaneFact):
    """The pane's screen as its worker has it now: the last ``PUBLISH_LINES`` logical lines
    (``workers/publisher.py``). Sent whenever the screen changes, at most every few tens of
    milliseconds while output goes on, and before any other message about the output that
    changed it. The router answers reads from the newest one.
    """

    type: ClassVar[str] = "screen_published"
    lines: list[str]
    history_available: int
    truncated: bool
    #: The screen's size when it was captured (a publication of another size than the
    #: worker was last told is older than the resize: the router does not answer from it).
    cols: int
    rows: int
    #: Unix time when the worker captured the screen.
    captured_at: float
    #: How many publications the worker has sent, this one too.
    reports: int = 0
    #: How many input writes the worker had reported done when output last came in before
    #: the capture: the screen shows whatever those inputs made the program print at once
    #: (an echo), as far as it printed it in time.
    inputs: int = 0


@dataclass(frozen=True, slots=True)
class ScreenPending(PaneFact):
    """The screen changed and its publication (number ``reports``) follows at once: until it
    arrives, the router's copy does not answer reads (they go to the worker). Sent instead of
    the publication itself before a message that can end a wait, so that reading the screen
    is not on that message's path (``workers/publisher.py``)."""

    type: ClassVar[str] = "screen_pending"
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


@dataclass(frozen=True, slots=True)
class SshPhase(PaneFact):
    """An SSH pane's connection moved to ``phase`` (R11.1): resolving, connecting,
    authenticating, opening_shell, ready or failed (then ``error`` says why)."""

    type: ClassVar[str] = "ssh_phase"
    phase: str
    error: str | None


MESSAGES: tuple[type[Message], ...] = (
    PaneStarted,
    PaneStartFailed,
    ShellMarked,
    CwdReported,
    TitleChanged,
    ForegroundChanged,
    ProgramStatus,
    ProgramRecords,
    ScreenPublished,
    ScreenPending,
    ScreenMatched,
    PaneExited,
    SshPhase,
)
