"""Messages between the frontend adapter and the router, over the frontend link (pebrel/link.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pebrel.messages.base import Message


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
    #: The client's TCP source port, stamped on `collab.*` requests only (0 otherwise): the
    #: router finds the calling process by it (router/collab_link.py; #16).
    peer_port: int = 0


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
    """A pane published a new screen and the router has the new answers to ``pane.read`` of
    each of ``lines`` lines (``results``, in the same order): they replace the kept reads that
    may be of this pane and ask for that many lines; the pane's other kept reads are stale."""

    type: ClassVar[str] = "answers_renewed"
    window_id: int
    pane_id: int
    lines: list[int]
    results: list[bytes]


@dataclass(frozen=True, slots=True)
class AnswerUsed(Message):
    """frontend -> router: a kept answer to this request is being given (sent at most every
    few hundred ms per request), so the router goes on renewing it."""

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


@dataclass(frozen=True, slots=True)
class ScreensChanged(Message):
    """Panes whose published screen changed, to every connection subscribed to screens:
    ``[window_id, pane_id, captured_at]`` each (router/screen_feed.py; #21)."""

    type: ClassVar[str] = "screens_changed"
    runtime_id: str
    panes: list[list[Any]]


MESSAGES: tuple[type[Message], ...] = (
    FrontendStarted,
    HandleRequest,
    RequestAnswered,
    AnswersStale,
    AnswersRenewed,
    AnswerUsed,
    ConnectionClosed,
    StopFrontend,
    SnapshotChanged,
    ScreensChanged,
)
