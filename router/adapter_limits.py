"""The frontend adapter's limits (docs/protocol.md "Limits") and its rate-limited log.

Read as module attributes at the moment they apply (``adapter_limits.AUTH_DEADLINE_S``), so a
test injection (tests/inject/) can tighten one without a test branch here.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from typing import Any

logger = logging.getLogger(__name__)

#: Unsent answer bytes past which a connection's further requests wait (reading it pauses)
#: until the client has read enough of them.
MAX_UNSENT_ANSWER_BYTES = 4 * 1024 * 1024
#: Requests of one connection waiting at the router past which its further requests wait.
MAX_REQUESTS_IN_FLIGHT = 256
#: Seconds a connection has to send its authenticated first line.
AUTH_DEADLINE_S = 5.0
#: Bytes all not yet authenticated connections may hold together (partial first lines).
UNAUTHENTICATED_BUDGET_BYTES = 16 * 1024 * 1024
#: Open client connections at most (less if the process's file limit is lower).
MAX_CONNECTIONS = 4096
#: File descriptors kept for everything but client connections (logs, link, listener).
FD_RESERVE = 64
#: Seconds a dropped subscriber's last bytes may make no progress before the connection is
#: aborted with what it has not read.
CLOSE_FLUSH_DEADLINE_S = 5.0
#: Connections accepted in one pass of the adapter's loop (the kernel queues the rest).
ACCEPT_BATCH = 16
#: Seconds between two log lines of one kind of refusal (the rest are counted).
LOG_INTERVAL_S = 10.0


def max_connections() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(2, min(MAX_CONNECTIONS, soft - FD_RESERVE))


def max_unauthenticated() -> int:
    """Connections not authenticated yet at most (half the cap): past it the oldest is closed,
    so sockets that never authenticate cannot fill the cap and lock everyone out."""
    return max_connections() // 2


class RateLimitedLog:
    """At most one warning per kind per LOG_INTERVAL_S; the next one says how many were held."""

    def __init__(self, log_to: logging.Logger = logger) -> None:
        self.logger = log_to
        self.last: dict[str, float] = {}
        self.held: dict[str, int] = {}

    def allow(self, kind: str) -> int | None:
        """None if a line of this kind is not due; else how many were held since the last."""
        now = time.monotonic()
        last = self.last.get(kind)
        if last is not None and now - last < LOG_INTERVAL_S:
            self.held[kind] = self.held.get(kind, 0) + 1
            return None
        self.last[kind] = now
        return self.held.pop(kind, 0)

    def warning(self, kind: str, message: str) -> None:
        held = self.allow(kind)
        if held:
            self.logger.warning("%s (and %d more not logged)", message, held)
        elif held is not None:
            self.logger.warning("%s", message)

    def loop_exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """The loop's exception handler: accept errors (EMFILE) and the like, rate-limited."""
        if self.allow(f"loop: {context.get('message')}") is not None:
            loop.default_exception_handler(context)


log = RateLimitedLog()
