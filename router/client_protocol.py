"""One client connection of the frontend adapter: JSON Lines in, with the limits of
:mod:`pebrel.router.adapter_limits` (docs/protocol.md "Limits").

A protocol rather than a stream reader: a request is handled in the callback that read it,
without a loop turn to wake a reading task. A connection whose answers pile up unsent (or
whose requests wait at the router in numbers) is not read until they drain: what one client
leaves unread costs at most its own bound, and reading it later is ordinary writing.

The integration socket (collab/integration_server.py) runs the same protocol with the same
limits: it subclasses `ClientProtocol` for its line limit and error lines.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from pebrel.envelope import MAX_REQUEST_LINE_BYTES
from pebrel.errors import ErrorCode, PebrelError
from pebrel.router import adapter_limits as limits

#: Methods only the local user may call (router/handlers/user_input.py): the adapter stamps
#: them, like `collab.*`, with the client's port, and the router places the caller by it.
USER_ONLY_METHODS = frozenset({"pane.user_input"})


def placed(method: str) -> bool:
    """Whether the router must know which process sent a request of this method."""
    return method.startswith("collab.") or method in USER_ONLY_METHODS


@dataclass(slots=True)
class Connection:
    connection_id: int
    transport: asyncio.WriteTransport
    authenticated: bool = False
    legacy_pending: set[str] = field(default_factory=set)
    subscribe_pending: set[Any] = field(default_factory=set)
    subscribed: bool = False
    #: Subscribed with ``screens: true``: it gets ``pane.screens`` events too (#21).
    screens: bool = False
    last_revision: int = -1
    #: Requests sent to the router and not answered yet.
    in_flight: int = 0
    #: Called when an answer came back: the connection may read its next requests.
    wake: Callable[[], None] = lambda: None


class Frontend(Protocol):
    """What a connection needs of the frontend adapter (``pebrel.router.adapter.Frontend``)."""

    connections: dict[int, Connection]
    unauthenticated: dict[int, Connection]
    unauthenticated_bytes: int

    def opened(self, transport: asyncio.WriteTransport, wake: Callable[[], None]) -> Connection:
        """Register a new connection."""

    def closed(self, conn: Connection) -> None:
        """Forget a connection that was closed."""

    def on_line_guarded(self, conn: Connection, line: bytes) -> bool:
        """Handle one request line; False closes the connection."""

    def reply_error(self, conn: Connection, request_id: Any, error: PebrelError) -> None:
        """Answer one request with an error."""


def abort_unless_flushing(transport: asyncio.WriteTransport, unsent: int) -> None:
    """Let a closing connection flush while the client reads; abort it once it stops."""

    def check() -> None:
        left = transport.get_write_buffer_size()
        if left and left >= unsent:
            transport.abort()
        elif left:
            abort_unless_flushing(transport, left)

    asyncio.get_running_loop().call_later(limits.CLOSE_FLUSH_DEADLINE_S, check)


class ClientProtocol(asyncio.Protocol):
    #: The longest line taken; a longer one goes to `refuse_long_line`.
    max_line_bytes = MAX_REQUEST_LINE_BYTES

    def __init__(self, frontend: Frontend) -> None:
        self.frontend = frontend
        self.conn: Connection | None = None
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.discarding = False
        self.write_paused = False
        self.read_paused = False
        self.wake_pending = False
        #: Bytes of this connection in the frontend's unauthenticated budget.
        self.counted = 0
        self.deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        if len(self.frontend.connections) >= limits.max_connections():
            limits.log.warning("refused", "connection refused: the connection cap is reached")
            self.transport.abort()
            return
        self.transport.set_write_buffer_limits(high=limits.MAX_UNSENT_ANSWER_BYTES)
        self.conn = self.frontend.opened(self.transport, self.wake)
        waiting = self.frontend.unauthenticated
        waiting[self.conn.connection_id] = self.conn
        if len(waiting) > limits.max_unauthenticated():
            limits.log.warning("evicted", "connection closed: too many unauthenticated ones")
            oldest = waiting.pop(next(iter(waiting)))
            oldest.transport.abort()
            self.frontend.closed(oldest)  # out of the cap's count now, not a loop turn later
        self.deadline = asyncio.get_running_loop().call_later(
            limits.AUTH_DEADLINE_S, self.auth_expired
        )

    def connection_lost(self, exc: Exception | None) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
        self.frontend.unauthenticated_bytes -= self.counted
        self.counted = 0
        if self.conn is not None:
            self.frontend.unauthenticated.pop(self.conn.connection_id, None)
            self.frontend.closed(self.conn)

    def refuse_long_line(self, conn: Connection) -> bool:
        """A line past `max_line_bytes`: True if the connection was closed for it. Before
        authentication it is closed without a byte; after, the line is answered
        invalid_request once it ends, and the next line is served."""
        if conn.authenticated or self.transport is None:
            return False
        self.transport.close()
        return True

    def auth_expired(self) -> None:
        if self.conn is not None and not self.conn.authenticated and self.transport is not None:
            limits.log.warning("deadline", "connection closed: no authenticated first line in time")
            self.transport.abort()

    # -- backpressure ------------------------------------------------------------------------------
    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        self.wake()

    def blocked(self) -> bool:
        conn = self.conn
        return self.write_paused or (
            conn is not None and conn.in_flight >= limits.MAX_REQUESTS_IN_FLIGHT
        )

    def wake(self) -> None:
        """Go on with waiting lines in a loop turn of their own (never inside a write)."""
        if self.read_paused and not self.wake_pending and not self.blocked():
            self.wake_pending = True
            asyncio.get_running_loop().call_soon(self.woken)

    def woken(self) -> None:
        self.wake_pending = False
        transport = self.transport
        if transport is None or transport.is_closing() or self.blocked():
            return
        self.read_paused = False
        transport.resume_reading()
        self.handle_lines()

    # -- reading -----------------------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        conn = self.conn
        assert conn is not None and self.transport is not None
        if self.transport.is_closing():
            return
        held = self.frontend.unauthenticated_bytes + len(data)
        if not conn.authenticated and held > limits.UNAUTHENTICATED_BUDGET_BYTES:
            limits.log.warning("budget", "connection closed: unauthenticated bytes over budget")
            self.transport.abort()
            return
        self.buffer += data
        self.handle_lines()

    def handle_lines(self) -> None:
        conn = self.conn
        transport = self.transport
        assert conn is not None and transport is not None
        buffer = self.buffer
        while not transport.is_closing():
            if self.blocked():
                if not self.read_paused:
                    self.read_paused = True
                    transport.pause_reading()
                break
            newline = buffer.find(b"\n")
            if newline < 0:
                if len(buffer) > self.max_line_bytes:
                    if self.refuse_long_line(conn):
                        break
                    self.discarding = True
                    buffer.clear()
                break
            line = bytes(buffer[:newline])
            del buffer[: newline + 1]
            if self.discarding or len(line) > self.max_line_bytes:
                self.discarding = False
                if self.refuse_long_line(conn):
                    break
                self.frontend.reply_error(
                    conn,
                    None,
                    PebrelError(
                        ErrorCode.INVALID_REQUEST,
                        f"request line longer than {self.max_line_bytes} bytes",
                        {"limit_bytes": self.max_line_bytes},
                    ),
                )
                continue
            if not self.frontend.on_line_guarded(conn, line.rstrip(b"\r")):
                transport.close()
                break
        if conn.authenticated:
            self.frontend.unauthenticated.pop(conn.connection_id, None)
        counted = 0 if conn.authenticated else len(buffer)
        self.frontend.unauthenticated_bytes += counted - self.counted
        self.counted = counted
