"""The frontend adapter process: the only thing facing clients.

Listens on 127.0.0.1 (random port), authenticates each connection by its first line, parses
JSON Lines, rejects bad envelopes, and turns every request into one actor message to the
router (stamped with a connection id and the caller's principal), and the reply back, over the
frontend link (:mod:`pebrel.link`, a socket pair the router hands over at start). Kept out of
the router's process so bad or slow clients cannot stall the state owner.
"""

from __future__ import annotations

import asyncio
import hmac
import itertools
import json
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any

from pebrel import injection, logfile, proctree
from pebrel import messages as m
from pebrel.envelope import (
    answer as answer_envelope,
)
from pebrel.envelope import (
    dump_line,
    error_response,
    event_line,
    ok_line_encoded,
    parse_request,
    peek_id,
    screens_event_line,
)
from pebrel.errors import ErrorCode, PebrelError, internal_error
from pebrel.link import Link, open_link
from pebrel.router import adapter_limits as limits
from pebrel.router.answers import REUSABLE_METHODS, AnswerCache, request_key
from pebrel.router.client_protocol import (
    ClientProtocol,
    Connection,
    abort_unless_flushing,
    placed,
)
from pebrel.schema import unencodable_params

logger = logging.getLogger(__name__)

PRINCIPAL_TOKEN = "token-holder"
PRINCIPAL_LEGACY = "legacy"
#: Bytes a subscriber may leave unread before it is told `slow_consumer` and dropped
#: (`PEBREL_SLOW_CONSUMER_BYTES` overrides it at runtime start).
SLOW_CONSUMER_BYTES = int(os.environ.get("PEBREL_SLOW_CONSUMER_BYTES", 8 * 1024 * 1024))


def peer_port(conn: Connection) -> int:
    """The client's TCP source port: the router finds the calling process by it (#16)."""
    peer = conn.transport.get_extra_info("peername")
    return int(peer[1]) if isinstance(peer, tuple) and len(peer) >= 2 else 0


class Frontend:
    def __init__(self, link_fd: int, token: str, version: str) -> None:
        self.link_fd = link_fd
        self.link: Link | None = None
        self.token = token
        self.version = version
        self.connections: dict[int, Connection] = {}
        self.ids = itertools.count(1)
        self.legacy_ids = itertools.count(1)
        self.stop = asyncio.Event()
        #: Bytes held by connections not authenticated yet (their partial first lines).
        self.unauthenticated_bytes = 0
        #: Connections not authenticated yet, oldest first.
        self.unauthenticated: dict[int, Connection] = {}
        self.answers = AnswerCache()  # router/answers.py
        self.from_router: dict[type[m.Message], Callable[[Any], None]] = {
            m.RequestAnswered: self.request_answered,
            m.AnswersStale: self.answers_stale,
            m.AnswersRenewed: self.answers_renewed,
            m.SnapshotChanged: self.on_snapshot,
            m.ScreensChanged: self.on_screens,
            m.StopFrontend: self.stop_frontend,
        }

    def to_router(self, message: m.Message) -> None:
        if self.link is None or not self.link.send(message):
            logger.warning("router unreachable, message dropped", extra={"type": message.type})

    # -- client side -------------------------------------------------------------------------------
    def opened(self, transport: asyncio.WriteTransport, wake: Callable[[], None]) -> Connection:
        conn = Connection(next(self.ids), transport, wake=wake)
        self.connections[conn.connection_id] = conn
        return conn

    def closed(self, conn: Connection) -> None:
        if self.connections.pop(conn.connection_id, None) is not None and not self.stop.is_set():
            self.to_router(m.ConnectionClosed(connection_id=conn.connection_id))

    def on_line_guarded(self, conn: Connection, line: bytes) -> bool:
        """`on_line` behind the adapter's boundary: a failure answers internal_error."""
        try:
            return self.on_line(conn, line)
        except Exception:
            if not conn.authenticated:  # silent, as for any first line that is not accepted
                limits.log.warning("unauthenticated", "unreadable first line refused")
                return False
            error = internal_error()
            logger.exception("frontend failed on a request line", extra=error.details)
            self.reply_error(conn, None, error)
            return conn.authenticated

    def on_line(self, conn: Connection, line: bytes) -> bool:
        """Handle one line; False closes the connection without a byte (bad credentials)."""
        if line.startswith((b"PING ", b"ATTACH ")) or line in (b"PING", b"ATTACH"):
            return self.on_legacy(conn, line)
        try:
            request = parse_request(line)
        except (PebrelError, RecursionError):
            return self.on_bad_request(conn, line)
        if not self.authenticate(conn, request.token):
            return False
        if request.method == "events.subscribe":
            conn.subscribe_pending.add(request.id)
        slot = 0
        if request.method in REUSABLE_METHODS:
            key = request_key(PRINCIPAL_TOKEN, request.method, request.params)
            if key is not None:
                kept = self.answers.get(key)
                if kept is not None:
                    self.write(conn, ok_line_encoded(request.id, kept))
                    if self.answers.report_use(key):
                        self.to_router(m.AnswerUsed(method=request.method, params=request.params))
                    return True
                slot = self.answers.slot(key)
        try:
            conn.in_flight += 1
            self.to_router(
                m.HandleRequest(
                    connection_id=conn.connection_id,
                    principal=PRINCIPAL_TOKEN,
                    request_id=request.id,
                    method=request.method,
                    params=request.params,
                    cache_slot=slot,
                    peer_port=peer_port(conn) if placed(request.method) else 0,
                )
            )
        except (OverflowError, ValueError, TypeError, RecursionError):
            conn.in_flight -= 1
            self.answers.answered(slot, None)
            # msgpack cannot carry it: an integer beyond 64 bits, a lone surrogate, ...
            self.reply_error(
                conn, request.id, unencodable_params(request.method, request.params, request.id)
            )
        return True

    def authenticate(self, conn: Connection, token: object) -> bool:
        """A connection's first request must carry the token; later ones may leave it out."""
        if not conn.authenticated:
            if not self.token_ok(token):
                return False
            conn.authenticated = True
        elif token is not None and not self.token_ok(token):
            return False
        return True

    def on_bad_request(self, conn: Connection, line: bytes) -> bool:
        """A line that is not a valid request: authenticate what can be, then say why."""
        try:
            obj: Any = json.loads(line)
        except (ValueError, UnicodeDecodeError, RecursionError):
            if not conn.authenticated:
                return False
            self.reply_error(
                conn, None, PebrelError(ErrorCode.INVALID_REQUEST, "request line is not valid JSON")
            )
            return True
        if not self.authenticate(conn, obj.get("token") if isinstance(obj, dict) else None):
            return False
        try:
            parse_request(line)
        except PebrelError as exc:
            self.reply_error(conn, peek_id(obj), exc)
        return True

    def token_ok(self, token: object) -> bool:
        if not isinstance(token, str):
            return False
        # surrogatepass: a lone surrogate ("\\ud800") is a wrong token, not an encoding failure.
        given = token.encode("utf-8", "surrogatepass")
        return hmac.compare_digest(given, self.token.encode())

    def on_legacy(self, conn: Connection, line: bytes) -> bool:
        parts = line.decode("utf-8", errors="replace").split(" ", 2)
        if len(parts) < 2 or not self.token_ok(parts[1]):
            return False
        conn.authenticated = True
        if parts[0] == "PING":
            self.write(conn, f"PONG pebrel {self.version}\n".encode())
            return True
        request_id = f"legacy-{next(self.legacy_ids)}"
        conn.legacy_pending.add(request_id)
        conn.in_flight += 1
        params = {"cwd": parts[2]} if len(parts) > 2 and parts[2] else {}
        self.to_router(
            m.HandleRequest(
                connection_id=conn.connection_id,
                principal=PRINCIPAL_LEGACY,
                request_id=request_id,
                method="legacy.attach",
                params=params,
            )
        )
        return True

    def write(self, conn: Connection, data: bytes) -> None:
        if not conn.transport.is_closing():
            conn.transport.write(data)

    def reply_error(self, conn: Connection, request_id: Any, error: PebrelError) -> None:
        self.write(conn, dump_line(error_response(request_id, error)))

    # -- router side -------------------------------------------------------------------------------
    def on_router_message(self, message: m.Message) -> None:
        """A message from the router, by its type (``self.from_router``)."""
        handle = self.from_router.get(type(message))
        if handle is not None:
            handle(message)

    def request_answered(self, message: m.RequestAnswered) -> None:
        if message.cache_slot:
            reusable = message.ok and message.reusable
            self.answers.answered(message.cache_slot, message.result_json if reusable else None)
        self.on_answer(message)

    def answers_stale(self, message: m.AnswersStale) -> None:
        self.answers.stale(message.window_id, message.pane_id)

    def answers_renewed(self, message: m.AnswersRenewed) -> None:
        self.answers.renew(
            message.window_id,
            message.pane_id,
            dict(zip(message.lines, message.results, strict=True)),
        )

    def stop_frontend(self, message: m.StopFrontend) -> None:
        self.stop.set()

    def on_answer(self, answer: m.RequestAnswered) -> None:
        conn = self.connections.get(answer.connection_id)
        if conn is None:
            return
        conn.in_flight -= 1
        conn.wake()
        if isinstance(answer.request_id, str) and answer.request_id in conn.legacy_pending:
            conn.legacy_pending.discard(answer.request_id)
            if answer.ok and answer.result is not None:
                self.write(conn, f"ATTACHED {answer.result['window_id']}\n".encode())
            else:
                code = (answer.error or {}).get("code", "internal_error")
                self.write(conn, f"ERROR {code}\n".encode())
            return
        if answer.ok and answer.result_json is not None:
            self.write(conn, ok_line_encoded(answer.request_id, answer.result_json))
        else:
            body = answer_envelope(answer.request_id, answer.ok, answer.result, answer.error)
            self.write(conn, dump_line(body))
        if answer.request_id in conn.subscribe_pending:
            conn.subscribe_pending.discard(answer.request_id)
            if answer.ok and answer.result is not None:
                conn.subscribed = True
                conn.last_revision = int(answer.result["revision"])
                conn.screens = bool(answer.result.get("screens"))

    def on_snapshot(self, event: m.SnapshotChanged) -> None:
        """Fan a revision out to subscribers; a subscriber that cannot keep up is dropped."""
        if event.connection_id:
            conn = self.connections.get(event.connection_id)
            targets = [conn] if conn is not None and conn.subscribed else []
            forced = True
        else:
            targets = [c for c in self.connections.values() if c.subscribed]
            forced = False
        if not targets:
            return
        line = dump_line(event_line(event.runtime_id, event.revision, event.snapshot))
        for conn in targets:
            if not forced and event.revision <= conn.last_revision:
                continue
            conn.last_revision = event.revision
            if conn.transport.get_write_buffer_size() > SLOW_CONSUMER_BYTES:
                self.drop_slow(conn)
                continue
            self.write(conn, line)

    def on_screens(self, event: m.ScreensChanged) -> None:
        """Tell the connections subscribed to screens which panes published a new one."""
        targets = [c for c in self.connections.values() if c.subscribed and c.screens]
        if not targets:
            return
        line = dump_line(screens_event_line(event.runtime_id, event.panes))
        for conn in targets:
            if conn.transport.get_write_buffer_size() > SLOW_CONSUMER_BYTES:
                self.drop_slow(conn)
                continue
            self.write(conn, line)

    def drop_slow(self, conn: Connection) -> None:
        conn.subscribed = False
        conn.screens = False
        error = PebrelError(
            ErrorCode.SLOW_CONSUMER,
            "the subscriber did not keep up with events and is disconnected",
            {"backlog_limit_bytes": SLOW_CONSUMER_BYTES},
        )
        self.write(conn, dump_line(error_response(None, error)))
        conn.transport.close()
        abort_unless_flushing(conn.transport, conn.transport.get_write_buffer_size())

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(limits.log.loop_exception)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, self.stop.set)
        # The router gone (its end of the link closed) stops this process too.
        self.link = await open_link(
            socket.socket(fileno=self.link_fd), self.on_router_message, self.stop.set
        )
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.setblocking(False)
        # asyncio accepts up to `backlog` connections in one pass of its loop, and sets up
        # every one before it reads any other socket: a small batch keeps a burst of
        # connections (1,000 wrong tokens) from holding up the answers of the others.
        server = await loop.create_server(
            lambda: ClientProtocol(self), sock=listener, backlog=limits.ACCEPT_BATCH
        )
        # The kernel's queue, though, is the largest it allows, not asyncio's 100: a burst of
        # clients (128 agents each connecting for one exec) overflowed it, and a dropped
        # handshake is retried only after a retransmission timeout (0.2-1 s).
        listener.listen(socket.SOMAXCONN)
        port = listener.getsockname()[1]
        logger.info("taking up to %d client connections", limits.max_connections())
        self.to_router(m.FrontendStarted(port=port))
        await self.stop.wait()
        server.close()
        for conn in list(self.connections.values()):
            conn.transport.close()
        self.link.close()


def main() -> None:
    config = json.loads(sys.stdin.buffer.read())  # from the router; holds the token
    logfile.configure(
        config["log_path"],
        f"%(asctime)s frontend[{os.getpid()}] %(levelname)s %(name)s: %(message)s",
    )
    injection.install(injection.ADAPTER)
    proctree.set_parent_death_signal(signal.SIGTERM)
    proctree.request_short_slice()  # answer promptly while pane workers keep the cores busy
    frontend = Frontend(int(config["link_fd"]), config["token"], config["version"])
    asyncio.run(proctree.then_unhook_signal_wakeup(frontend.run()))


if __name__ == "__main__":
    main()
