"""Every msgpack actor message between frontend, router and pane workers.

Each message is a small frozen record with an explicit `type`. Commands are imperative,
events past tense. Nothing else in Pebrel calls msgpack.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

import msgpack


@dataclass(frozen=True, slots=True)
class Message:
    type: ClassVar[str] = ""


# ---- frontend <-> router -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FrontendStarted(Message):
    type: ClassVar[str] = "frontend_started"
    port: int


@dataclass(frozen=True, slots=True)
class HandleRequest(Message):
    """A client's request, stamped by the frontend with its connection and principal."""

    type: ClassVar[str] = "handle_request"
    connection_id: int
    principal: str
    request_id: Any
    method: str
    params: dict[str, Any]
    #: Non-zero: the frontend would keep a reusable answer under this slot (echoed back).
    cache_slot: int = 0


@dataclass(frozen=True, slots=True)
class RequestAnswered(Message):
    type: ClassVar[str] = "request_answered"
    connection_id: int
    request_id: Any
    ok: bool
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    #: Instead of ``result``: its JSON, encoded ahead by the router (envelope.EncodedResult).
    result_json: bytes | None = None
    #: The request's ``cache_slot``, echoed.
    cache_slot: int = 0
    #: The frontend may answer the same request again with ``result_json`` until the router
    #: sends AnswersStale (a pane.read the router keeps, the snapshot of a revision).
    reusable: bool = False


@dataclass(frozen=True, slots=True)
class AnswersStale(Message):
    """Reusable answers the frontend kept no longer hold: every one (``pane_id`` 0: the state
    changed), or the reads that may be of this pane (its screen changed). Sent before the
    answer to any request that made the change."""

    type: ClassVar[str] = "answers_stale"
    window_id: int = 0
    pane_id: int = 0


@dataclass(frozen=True, slots=True)
class AnswersRenewed(Message):
    """A pane's screen changed and the router has its new answer to ``pane.read`` of ``lines``
    lines (``result_json``): it replaces the kept reads that may be of this pane and ask for
    that many lines; the pane's other kept reads are stale."""

    type: ClassVar[str] = "answers_renewed"
    window_id: int
    pane_id: int
    lines: int
    result_json: bytes


@dataclass(frozen=True, slots=True)
class AnswerUsed(Message):
    """frontend -> router: a kept answer to this request is being given (sent at most every
    few hundred ms per request), so the router can keep it current."""

    type: ClassVar[str] = "answer_used"
    method: str
    params: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ConnectionClosed(Message):
    type: ClassVar[str] = "connection_closed"
    connection_id: int


@dataclass(frozen=True, slots=True)
class StopFrontend(Message):
    type: ClassVar[str] = "stop_frontend"


@dataclass(frozen=True, slots=True)
class SnapshotChanged(Message):
    """A revision to stream: to every subscriber (connection_id 0), or to one connection."""

    type: ClassVar[str] = "snapshot_changed"
    connection_id: int
    runtime_id: str
    revision: int
    snapshot: dict[str, Any]


# ---- router -> pane worker ------------------------------------------------------------------


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


#: The error of a WriteAtPrompt cancelled before its prompt came.
NOT_AT_PROMPT = "the shell did not reach its prompt"
#: The error of a write the worker did not make because the pane's shell has exited.
PANE_EXITED = "pane exited"


@dataclass(frozen=True, slots=True)
class ReadScreen(Message):
    """Read the screen. ``keep``: the router keeps the answer for repeated reads (pane.read),
    so the worker watches it (ScreenUpdated / ScreenChanged); False for a one-off look."""

    type: ClassVar[str] = "read_screen"
    request_id: int
    lines: int
    max_bytes: int
    keep: bool = True


@dataclass(frozen=True, slots=True)
class ScreenWatched(Message):
    """Reads are still being answered from the copy the worker keeps current: go on
    sending ScreenUpdated (sent at most every few hundred ms while the copy is used)."""

    type: ClassVar[str] = "screen_watched"
    window_id: int
    pane_id: int


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
class RunExec(Message):
    """Run argv without a shell as an independent non-TTY child of the worker (R6.3)."""

    type: ClassVar[str] = "run_exec"
    request_id: int
    argv: list[str]
    cwd: str | None
    timeout_ms: int
    max_output_bytes: int


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


# ---- pane worker -> router ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PaneStarted(Message):
    type: ClassVar[str] = "pane_started"
    window_id: int
    pane_id: int
    worker_pid: int
    shell_pid: int
    integrated: bool


@dataclass(frozen=True, slots=True)
class PaneStartFailed(Message):
    type: ClassVar[str] = "pane_start_failed"
    window_id: int
    pane_id: int
    reason: str


@dataclass(frozen=True, slots=True)
class ShellMarked(Message):
    """An OSC 133 mark seen in the pane's output; `row` is its absolute cursor row."""

    type: ClassVar[str] = "shell_marked"
    window_id: int
    pane_id: int
    mark: str
    exit_code: int | None
    row: int


@dataclass(frozen=True, slots=True)
class CwdReported(Message):
    type: ClassVar[str] = "cwd_reported"
    window_id: int
    pane_id: int
    cwd: str


@dataclass(frozen=True, slots=True)
class TitleChanged(Message):
    type: ClassVar[str] = "title_changed"
    window_id: int
    pane_id: int
    title: str


@dataclass(frozen=True, slots=True)
class ForegroundChanged(Message):
    """The PTY's foreground program changed: its process group, and the AI CLI kind it is.

    `agent_kind` is one of pebrel.agentkinds.KINDS when the foreground program is a known AI
    CLI (matched on argv[0] or an interpreter's script, never a substring), else None.
    `program` is the foreground program's display name ("" when the shell has it back).
    """

    type: ClassVar[str] = "foreground_changed"
    window_id: int
    pane_id: int
    shell_in_foreground: bool
    foreground_pgid: int
    agent_kind: str | None
    program: str


@dataclass(frozen=True, slots=True)
class ProgramStatus(Message):
    """An AI CLI reported its own state with an escape sequence (OSC 1337 SetUserVar, OSC 26).

    `state` is a task state (idle, running, completed, failed, attention, waiting_input) or
    "end" (the session is over); `origin` names the sequence it came from.
    """

    type: ClassVar[str] = "program_status"
    window_id: int
    pane_id: int
    state: str
    session_id: str | None
    kind: str | None
    origin: str


@dataclass(frozen=True, slots=True)
class ScreenChanged(Message):
    """The screen changed after the worker's last kept ScreenRead: answers the router kept are
    stale.

    Sent once per read-then-change (at the first output or resize after a read) once the
    read's watch has lapsed (while it lasts, ScreenUpdated is sent instead), before any message
    about the output that changed it.
    """

    type: ClassVar[str] = "screen_changed"
    window_id: int
    pane_id: int
    #: How many change reports (ScreenChanged, ScreenUpdated) the worker has sent, this one too.
    reports: int = 0


@dataclass(frozen=True, slots=True)
class ScreenUpdated(Message):
    """The screen changed after the worker's last kept read; this is that read's new answer
    (``read_lines`` lines). It replaces every answer the router kept for the pane.

    Sent while the read is watched (see ``workers/readwatch.py``), at most every few
    milliseconds while the output goes on, and before any other message about the output
    that changed the screen.
    """

    type: ClassVar[str] = "screen_updated"
    window_id: int
    pane_id: int
    read_lines: int
    lines: list[str]
    history_available: int
    truncated: bool
    #: How many change reports (ScreenChanged, ScreenUpdated) the worker has sent, this one too.
    reports: int = 0


@dataclass(frozen=True, slots=True)
class ScreenMatched(Message):
    """The screen rule matching the visible screen changed (None: no rule matches now)."""

    type: ClassVar[str] = "screen_matched"
    window_id: int
    pane_id: int
    rule_id: str | None
    state: str | None


@dataclass(frozen=True, slots=True)
class PaneExited(Message):
    type: ClassVar[str] = "pane_exited"
    window_id: int
    pane_id: int
    exit_code: int | None
    signal: int | None
    reason: str


@dataclass(frozen=True, slots=True)
class InputWritten(Message):
    type: ClassVar[str] = "input_written"
    request_id: int
    written: int
    error: str | None


@dataclass(frozen=True, slots=True)
class ExecFinished(Message):
    """Outcome of a RunExec: the kept tail of each stream and how much was produced."""

    type: ClassVar[str] = "exec_finished"
    request_id: int
    exit_code: int | None
    signal: int | None
    stdout: bytes
    stderr: bytes
    stdout_total: int
    stderr_total: int
    timed_out: bool
    duration_ms: int
    cwd: str
    error: str | None


@dataclass(frozen=True, slots=True)
class PasteWritten(Message):
    """Reply to PasteText; `bracketed` False means refused: the mode was off."""

    type: ClassVar[str] = "paste_written"
    request_id: int
    written: int
    bracketed: bool
    error: str | None


@dataclass(frozen=True, slots=True)
class ScreenRead(Message):
    """The screen as the worker had it; ``reports``: change reports it had sent before (a kept
    answer is stale if the router has seen a later one by the time it would keep it)."""

    type: ClassVar[str] = "screen_read"
    request_id: int
    lines: list[str]
    history_available: int
    truncated: bool
    reports: int = 0


@dataclass(frozen=True, slots=True)
class PtyResized(Message):
    type: ClassVar[str] = "pty_resized"
    request_id: int
    cols: int
    rows: int


@dataclass(frozen=True, slots=True)
class PaneClosed(Message):
    type: ClassVar[str] = "pane_closed"
    request_id: int


_REGISTRY: dict[str, type[Message]] = {
    cls.type: cls
    for cls in (
        FrontendStarted,
        HandleRequest,
        RequestAnswered,
        AnswersStale,
        AnswersRenewed,
        AnswerUsed,
        ConnectionClosed,
        StopFrontend,
        SnapshotChanged,
        WriteInput,
        ReadScreen,
        ScreenWatched,
        WriteAtPrompt,
        CancelAtPrompt,
        ResizePty,
        ClosePane,
        RunExec,
        SendKey,
        PasteText,
        PaneStarted,
        PaneStartFailed,
        ShellMarked,
        CwdReported,
        TitleChanged,
        ForegroundChanged,
        ProgramStatus,
        ScreenMatched,
        ScreenChanged,
        ScreenUpdated,
        PaneExited,
        InputWritten,
        ExecFinished,
        PasteWritten,
        ScreenRead,
        PtyResized,
        PaneClosed,
    )
}


class MessageError(ValueError):
    """A frame that is not a known, well-formed actor message."""


def all_message_types() -> dict[str, type[Message]]:
    return dict(_REGISTRY)


_FIELDS: dict[type[Message], tuple[str, ...]] = {}


def encode(message: Message) -> bytes:
    cls = type(message)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(message))
    body = {name: getattr(message, name) for name in names}
    body["type"] = message.type
    packed: bytes = msgpack.packb(body, use_bin_type=True)
    return packed


def decode(frame: bytes) -> Message:
    try:
        body = msgpack.unpackb(frame, raw=False, strict_map_key=False)
    except Exception as exc:  # msgpack raises several unrelated types
        raise MessageError("frame is not msgpack") from exc
    return _from_body(body)


def _from_body(body: Any) -> Message:
    if not isinstance(body, dict):
        raise MessageError("message is not a map")
    kind = body.pop("type", None)
    cls = _REGISTRY.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise MessageError("unknown message type")
    if not all(isinstance(key, str) for key in body):
        raise MessageError(f"malformed {cls.type} message")
    try:
        return cls(**body)
    except TypeError as exc:
        raise MessageError(f"malformed {cls.type} message") from exc


class StreamDecoder:
    """Messages from a byte stream of back-to-back :func:`encode` results (msgpack maps
    delimit themselves): feed whatever a read returned, get every message it completed."""

    def __init__(self) -> None:
        # Answers are not size-limited on the wire (a long scrollback read is large).
        self._unpacker = msgpack.Unpacker(
            raw=False, strict_map_key=False, max_buffer_size=2**31 - 1
        )

    def feed(self, data: bytes) -> list[Message | MessageError]:
        """What ``data`` completed, in order: each message, or the MessageError of one that is
        msgpack but no known record (the stream goes on). Raises MessageError if the bytes are
        not msgpack: the stream cannot be trusted after that."""
        try:
            self._unpacker.feed(data)
            bodies = list(self._unpacker)
        except Exception as exc:  # msgpack raises several unrelated types
            raise MessageError("stream is not msgpack") from exc
        out: list[Message | MessageError] = []
        for body in bodies:
            try:
                out.append(_from_body(body))
            except MessageError as exc:
                out.append(exc)
        return out
