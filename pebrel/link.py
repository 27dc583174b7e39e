"""The frontend link: actor messages between the router and its frontend adapter.

Every client request crosses it twice, so it is a Unix socket pair the router makes and hands
to the adapter it starts, not a ZeroMQ socket: a ZeroMQ message crosses the sender's and the
receiver's I/O threads on its way (four thread wake-ups per one-way hop instead of one), which
was about a third of the adapter's CPU per request and, with busy cores, a scheduler wait at
every wake-up. Pane workers still talk to the router over ZeroMQ (DESIGN: Processes).

The messages are the same msgpack records (:mod:`pebrel.messages`), written back to back.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from pebrel import entrypoints, proctree
from pebrel import messages as m
from pebrel.datadir import open_log

logger = logging.getLogger(__name__)


class Link(asyncio.Protocol):
    """One end of the link: ``send`` writes now (what the kernel does not take is buffered
    by the transport); every message read goes to ``on_message`` in order."""

    def __init__(
        self, on_message: Callable[[m.Message], None], on_lost: Callable[[], None]
    ) -> None:
        self.on_message = on_message
        self.on_lost = on_lost
        self.decoder = m.StreamDecoder()
        self.transport: asyncio.Transport | None = None

    @property
    def open(self) -> bool:
        return self.transport is not None and not self.transport.is_closing()

    def send(self, message: m.Message) -> bool:
        """Write one message; False if the link is closed (the message is dropped)."""
        if not self.open:
            return False
        assert self.transport is not None
        self.transport.write(m.encode(message))
        return True

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        try:
            messages = self.decoder.feed(data)
        except m.MessageError:
            logger.exception("unreadable frontend link: closing it")
            self.close()
            return
        for message in messages:
            if isinstance(message, m.MessageError):
                logger.warning("unreadable message on the frontend link dropped: %s", message)
                continue
            try:
                self.on_message(message)
            except Exception:
                logger.exception("failed to handle a message", extra={"type": message.type})

    def connection_lost(self, exc: Exception | None) -> None:
        self.on_lost()


async def open_link(
    sock: socket.socket, on_message: Callable[[m.Message], None], on_lost: Callable[[], None]
) -> Link:
    """Run the link over ``sock`` (one end of a ``socket.socketpair()``) on the running loop."""
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    _, link = await loop.create_unix_connection(lambda: Link(on_message, on_lost), sock=sock)
    return link


def start_linked_process(
    module: str, config: dict[str, Any], log_path: Path
) -> tuple[subprocess.Popen[bytes], socket.socket]:
    """Start Pebrel's process ``module`` with the other end of a new link: the process and
    our end (for :func:`open_link`).

    Its config (``config`` plus ``link_fd``, a token among it for the adapter) goes through
    its stdin, never its argv or environment, which `ps` shows; its stderr goes to the log.
    It is started and registered as our own child under the lock of the router's orphan
    scan, which must never take it for an orphan. If it cannot be given its config it is
    killed, reaped and forgotten.
    """
    ours, theirs = socket.socketpair()
    proc: subprocess.Popen[bytes] | None = None
    try:
        with proctree.OWN_CHILDREN_LOCK, open_log(log_path) as log:
            proc = subprocess.Popen(
                entrypoints.module_argv(module),
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=log,
                close_fds=True,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
            )
            proctree.OWN_CHILDREN.add(proc.pid)
        assert proc.stdin is not None
        with proc.stdin:  # a few hundred bytes: the pipe takes them at once
            proc.stdin.write(json.dumps({**config, "link_fd": theirs.fileno()}).encode())
    except BaseException:
        ours.close()
        if proc is not None:
            proc.kill()
            proc.wait()
            proctree.forget_child(proc.pid)
        raise
    finally:
        theirs.close()
    return proc, ours
