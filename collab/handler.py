"""What every collab method handler gets, and its type (the service's method tables)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pebrel.collab.store import Store
from pebrel.collab.terminal import Terminal
from pebrel.errors import CollabError


class Deliveries(Protocol):
    """The delivery engine as handlers see it (collab/deliverer.py)."""

    def kick(self) -> None:
        """Queued messages were committed: look for what can be written now."""
        ...


@dataclass(frozen=True, slots=True)
class Actor:
    """Who a write is done as: the local user, one session (I3.2), or one principal (I1, #17)."""

    kind: Literal["user", "session", "principal"]
    session_id: str | None = None
    principal_id: str | None = None
    #: A principal's group, as read when its request arrived (it never changes: I1.5).
    group_id: str | None = None

    @property
    def scope(self) -> str:
        """Idempotency keys are scoped per actor (per principal: I3.1)."""
        if self.principal_id:
            return f"principal:{self.principal_id}"
        return self.session_id if self.session_id else "user"

    def wire(self) -> dict[str, Any]:
        if self.principal_id:
            return {"kind": self.kind, "principal_id": self.principal_id}
        return {"kind": self.kind, **({"session_id": self.session_id} if self.session_id else {})}


@dataclass(frozen=True, slots=True)
class Ctx:
    store: Store
    terminal: Terminal
    deliveries: Deliveries
    #: As the router stamped it: {"kind": "user"} or {"kind": "pane", "window_id", "pane_id"};
    #: from the integration socket (collab/integration_server.py):
    #: {"kind": "principal", "principal_id": ID}.
    caller: dict[str, Any]
    #: Resolved from the caller and the request's optional `session` param.
    actor: Actor


class Sink(Protocol):
    """One integration-socket connection as the event stream sees it (#17): the server
    (collab/integration_server.py) implements it, the stream (collab/stream.py) writes to it."""

    @property
    def closed(self) -> bool:
        """The connection is gone or ending: send nothing more."""
        ...

    def send(self, line: dict[str, Any]) -> None:
        """Queue one JSON line (an event, a heartbeat, an answer)."""
        ...

    def buffered(self) -> int:
        """Bytes queued and not yet taken by the peer."""
        ...

    async def drained(self) -> None:
        """Return once the queued bytes fell below the connection's low-water mark."""
        ...

    def end(self, error: CollabError | None = None) -> None:
        """Send ``error`` as the spec's error line (if given), then close."""
        ...


Handler = Callable[[Ctx, dict[str, Any]], Awaitable[dict[str, Any]]]
