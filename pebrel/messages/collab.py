"""Messages between the router and the collab service, over the collab link (pebrel/link.py).

The router forwards each `collab.*` request with the caller it resolved (`CollabRequest`) and
relays the answer (`CollabAnswered`); the service calls runtime methods as the local user
(`TerminalCall` / `TerminalAnswered`) and, while it asked (`WatchSnapshots`), gets each new
runtime snapshot as the frontend's `SnapshotChanged` (connection_id 0). FEATURES I1-I4 (#16).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pebrel.messages.base import Message


@dataclass(frozen=True, slots=True)
class CollabStarted(Message):
    """collab -> router: the database is open, requests are served."""

    type: ClassVar[str] = "collab_started"


@dataclass(frozen=True, slots=True)
class CollabRequest(Message):
    """router -> collab: one validated `collab.*` request and who sent it.

    ``caller``: ``{"kind": "user"}``, ``{"kind": "pane", "window_id": W, "pane_id": P}`` or
    ``{"kind": "unknown"}`` (router/collab_link.py resolves it)."""

    type: ClassVar[str] = "collab_request"
    request_id: int
    method: str
    params: dict[str, Any]
    caller: dict[str, Any]


@dataclass(frozen=True, slots=True)
class CollabAnswered(Message):
    """collab -> router: the answer to the `CollabRequest` with this ``request_id``."""

    type: ClassVar[str] = "collab_answered"
    request_id: int
    ok: bool
    result: dict[str, Any] | None
    error: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class TerminalCall(Message):
    """collab -> router: run one runtime method as the local user would."""

    type: ClassVar[str] = "terminal_call"
    call_id: int
    method: str
    params: dict[str, Any]


@dataclass(frozen=True, slots=True)
class TerminalAnswered(Message):
    """router -> collab: the answer to the `TerminalCall` with this ``call_id``."""

    type: ClassVar[str] = "terminal_answered"
    call_id: int
    ok: bool
    result: dict[str, Any] | None
    error: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class WatchSnapshots(Message):
    """collab -> router: send (``on``) or stop sending each new snapshot."""

    type: ClassVar[str] = "watch_snapshots"
    on: bool


@dataclass(frozen=True, slots=True)
class StopCollab(Message):
    """router -> collab: close the database and exit (the runtime is stopping)."""

    type: ClassVar[str] = "stop_collab"


MESSAGES: tuple[type[Message], ...] = (
    CollabStarted,
    CollabRequest,
    CollabAnswered,
    TerminalCall,
    TerminalAnswered,
    WatchSnapshots,
    StopCollab,
)
