"""What every collab method handler gets, and its type (the service's method tables)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pebrel.collab.store import Store
from pebrel.collab.terminal import Terminal


class Deliveries(Protocol):
    """The delivery engine as handlers see it (collab/deliverer.py)."""

    def kick(self) -> None:
        """Queued messages were committed: look for what can be written now."""
        ...


@dataclass(frozen=True, slots=True)
class Actor:
    """Who a write is done as: the local user, or one session (I3.2)."""

    kind: Literal["user", "session"]
    session_id: str | None = None

    @property
    def scope(self) -> str:
        """Idempotency keys are scoped per actor."""
        return self.session_id if self.session_id else "user"

    def wire(self) -> dict[str, Any]:
        return {"kind": self.kind, **({"session_id": self.session_id} if self.session_id else {})}


@dataclass(frozen=True, slots=True)
class Ctx:
    store: Store
    terminal: Terminal
    deliveries: Deliveries
    #: As the router stamped it: {"kind": "user"} or {"kind": "pane", "window_id", "pane_id"}.
    caller: dict[str, Any]
    #: Resolved from the caller and the request's optional `session` param.
    actor: Actor


Handler = Callable[[Ctx, dict[str, Any]], Awaitable[dict[str, Any]]]
