"""ZeroMQ helpers shared by the router and the pane workers (the frontend adapter talks to the
router over the frontend link, pebrel/link.py).

The actor sockets are plain (not zmq.asyncio) sockets read from the event loop with
``loop.add_reader`` on their FD. That FD is edge-triggered and only says "something changed",
so a reader must drain the socket while ``EVENTS`` says a message waits (TRAPS: ZeroMQ).
pyzmq's constants are enum members, and every ``flags=zmq.NOBLOCK`` or ``& zmq.POLLIN`` runs an
enum operation: the hot paths use these plain ints.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Iterator

import zmq

from pebrel import messages as m

logger = logging.getLogger(__name__)

EVENTS = int(zmq.EVENTS)
POLLIN = int(zmq.POLLIN)
NOBLOCK = int(zmq.NOBLOCK)


def worker_identity() -> bytes:
    """A new pane worker's identity at the router's socket: unique to this process (its pid and
    random bits), not its pane, since a spare worker connects before it has a pane. The router
    learns it from the routing frame of the worker's PaneStarted; a message meant for a dead
    worker can never reach a later process that got the same pid."""
    return b"w%d.%s" % (os.getpid(), os.urandom(4).hex().encode())


def connect_worker(ctx: zmq.Context[zmq.SyncSocket], endpoint: str) -> zmq.SyncSocket:
    """A pane worker's DEALER socket, connected to the router."""
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 2000)
    sock.setsockopt(zmq.IDENTITY, worker_identity())
    sock.connect(endpoint)
    return sock


def worker_connection(
    ctx: zmq.Context[zmq.SyncSocket] | None, sock: zmq.SyncSocket | None, endpoint: str
) -> tuple[zmq.Context[zmq.SyncSocket], zmq.SyncSocket]:
    """A worker's context and router socket: the ones it made ahead of time, else new ones."""
    ctx = ctx if ctx is not None else zmq.Context()
    return ctx, sock if sock is not None else connect_worker(ctx, endpoint)


class Inbox:
    """When to drain an actor socket read from the loop's selector.

    Its FD only signals a change of the socket's state, and every send, recv or EVENTS query
    may consume that signal: after a send made outside a drain, messages can sit in the socket
    with the FD quiet, so :meth:`sent` schedules a drain then. Sends made during a drain need
    no check (the drain asks EVENTS before every recv).
    """

    def __init__(self, sock: zmq.SyncSocket, drain: Callable[[], None]) -> None:
        self.sock = sock
        self.drain = drain
        self.active = False  # a drain runs or is scheduled

    def sent(self) -> None:
        if not self.active and int(self.sock.getsockopt(EVENTS)) & POLLIN:
            self.active = True
            asyncio.get_running_loop().call_soon(self.drain)

    @contextlib.contextmanager
    def draining(self) -> Iterator[None]:
        self.active = True
        try:
            yield
        finally:
            self.active = False


def waiting(sock: zmq.SyncSocket) -> Iterator[list[bytes]]:
    """Every message waiting on ``sock`` now, as its frames (asking EVENTS is much cheaper
    than a receive failing with EAGAIN)."""
    while int(sock.getsockopt(EVENTS)) & POLLIN:
        try:
            yield sock.recv_multipart(flags=NOBLOCK)
        except zmq.Again:
            return


def incoming(sock: zmq.SyncSocket, frames: int = 1) -> Iterator[tuple[list[bytes], m.Message]]:
    """Every actor message waiting on ``sock``, with its frames (a ROUTER's first frame is the
    peer's identity). Frames of another count and undecodable messages are dropped, logged."""
    for parts in waiting(sock):
        if len(parts) != frames:
            logger.warning("actor message with %d frames dropped", len(parts))
            continue
        try:
            message = m.decode(parts[-1])
        except m.MessageError:
            logger.warning("undecodable actor message dropped")
            continue
        yield parts, message
