"""pane.exec between router and worker: run argv without a shell, and its outcome (R6.3)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pebrel.messages.base import Message, Reply


@dataclass(frozen=True, slots=True)
class RunExec(Message):
    """Run argv without a shell as an independent non-TTY child of the worker (R6.3)."""

    type: ClassVar[str] = "run_exec"
    request_id: int
    argv: list[str]
    cwd: str | None
    timeout_ms: int
    max_output_bytes: int


@dataclass(frozen=True, slots=True)
class ExecFinished(Reply):
    """Outcome of a RunExec: the kept tail of each stream and how much was produced, or why
    the program could not be started."""

    type: ClassVar[str] = "exec_finished"
    exit_code: int | None
    signal: int | None
    stdout: bytes
    stderr: bytes
    stdout_total: int
    stderr_total: int
    timed_out: bool
    duration_ms: int
    cwd: str
    #: Why the program could not be started (None: it was), as in
    #: ``No such file or directory: 'x'``.
    error: str | None
    #: The errno of that failure by name (``ENOENT``), when it has one.
    errno_name: str | None


MESSAGES: tuple[type[Message], ...] = (
    RunExec,
    ExecFinished,
)
