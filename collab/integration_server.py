"""The integration socket `<data_dir>/integration.sock`: where principals speak (I1, I2, #17).

The collab service (collab/app.py) starts it once its store is open and stops it on exit. A
socket of mode 0600 in the 0700 data dir, JSON Lines (pebrel/integration_wire.py): the first
line is the hello, checked with `principals.authenticate`; then each line is a request,
answered by `Service.handle("collab." + method, ...)` as the principal (`events.subscribe` by
`Service.subscribe`, which goes on pushing events to the connection). Requests of one
connection run concurrently; every answer is written as one whole line, carrying its id.

Connections run the frontend adapter's protocol with its limits (router/client_protocol.py,
router/adapter_limits.py): at most `max_connections()`, half of them not authenticated yet (the
oldest is closed past that), `AUTH_DEADLINE_S` for the hello, `UNAUTHENTICATED_BUDGET_BYTES`
for all partial hellos together; a connection with `MAX_UNSENT_ANSWER_BYTES` of answers or
events unread by its client, or `MAX_REQUESTS_IN_FLIGHT` requests unanswered, is not read
until they drain. Lines are at most `MAX_LINE_BYTES` (1 MiB): a longer one is answered
INVALID_ARGUMENT and the connection closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import socket
import stat
import struct
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, cast

from pebrel import integration_wire as wire
from pebrel.collab import principals
from pebrel.collab.service import Service
from pebrel.datadir import check_owner
from pebrel.errors import CollabCode, CollabError, PebrelError, internal_error
from pebrel.router import adapter_limits as limits
from pebrel.router.client_protocol import ClientProtocol, Connection, abort_unless_flushing
from pebrel.schema import load_schema, unencodable, validate_params

logger = logging.getLogger(__name__)

SUBSCRIBE = "events.subscribe"


async def outcome(
    method: str, work: Awaitable[dict[str, Any]]
) -> tuple[dict[str, Any] | None, PebrelError | None]:
    """A request's result, or its error: a `CollabError` as raised (its traceback dropped),
    anything else an internal_error whose traceback is logged under its incident id (never
    sent)."""
    try:
        return await work, None
    except CollabError as exc:
        # Without its traceback: the frames it holds (a request's params among them) would
        # otherwise stay until the cycle collector runs, many requests' worth of them.
        return None, exc.with_traceback(None)
    except Exception:
        failure = internal_error()
        logger.exception(
            "collab request %s failed (incident %s)",
            method,
            failure.details["incident"],
            extra={**failure.details, "method": method},
        )
        return None, failure


def invalid(message: str, **details: Any) -> CollabError:
    return CollabError(CollabCode.INVALID_ARGUMENT, message, details)


def checked_params(method: str, params: dict[str, Any]) -> None:
    """What the router checks of a `collab.*` request, for one that came here: values the
    service can store, and the schema's params where it lists the method (INVALID_ARGUMENT)."""
    problem = unencodable(params, "params")
    if problem:
        raise invalid(problem, method=method, problem=problem)
    name = f"collab.{method}"
    if name not in load_schema()["methods"]:
        return  # the service's own table says whether it exists
    try:
        validate_params(name, params)
    except PebrelError as exc:
        raise invalid(exc.message, **{**exc.details, "method": method}) from exc


class Peer:
    """One connection's integration side: who it is, its requests, and the event stream's
    `Sink` (collab/handler.py) over it."""

    def __init__(self, server: IntegrationServer, conn: Connection) -> None:
        self.server = server
        self.conn = conn
        self.principal_id: str | None = None
        self.tasks: set[asyncio.Task[None]] = set()
        self.gone = False
        #: Set while the transport takes more (its write buffer is below the high-water mark).
        self.writable = asyncio.Event()
        self.writable.set()

    @property
    def caller(self) -> dict[str, Any]:
        return {"kind": "principal", "principal_id": self.principal_id}

    # -- Sink --------------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self.gone or self.conn.transport.is_closing()

    def send(self, line: dict[str, Any]) -> None:
        self.server.write_line(self.conn, line)

    def buffered(self) -> int:
        return self.conn.transport.get_write_buffer_size()

    async def drained(self) -> None:
        """Return once the transport takes more: at once below its high-water mark, else when
        the client has read it down to the low-water mark (or the connection is gone)."""
        while not self.closed and not self.writable.is_set():
            await self.writable.wait()

    def end(self, error: CollabError | None = None) -> None:
        if self.closed:
            return
        if error is not None:
            self.send(wire.error_line(None, error))
        transport = self.conn.transport
        transport.close()
        abort_unless_flushing(transport, transport.get_write_buffer_size())


class IntegrationProtocol(ClientProtocol):
    """The adapter's connection protocol with the integration socket's line limit and lines."""

    max_line_bytes = wire.MAX_LINE_BYTES

    def __init__(self, server: IntegrationServer) -> None:
        super().__init__(server)
        self.server = server

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if not same_user(transport):  # the socket's mode admits none; root is refused too
            limits.log.warning("peer", "integration connection of another user refused")
            cast(asyncio.Transport, transport).abort()
            return
        super().connection_made(transport)

    def refuse_long_line(self, conn: Connection) -> bool:
        error = invalid(
            f"line longer than {self.max_line_bytes} bytes", limit_bytes=self.max_line_bytes
        )
        self.server.write_line(conn, wire.error_line(None, error))
        conn.transport.close()  # a peer that never reads must not keep it open
        abort_unless_flushing(conn.transport, conn.transport.get_write_buffer_size())
        return True

    def auth_expired(self) -> None:
        conn = self.conn
        if conn is None or conn.authenticated or conn.transport.is_closing():
            return
        limits.log.warning("deadline", "integration connection closed: no hello in time")
        error = CollabError(
            CollabCode.INTEGRATION_UNAUTHORIZED,
            f"no hello line within {limits.AUTH_DEADLINE_S:g} s",
        )
        self.server.write_line(conn, wire.error_line(None, error))
        conn.transport.close()
        abort_unless_flushing(conn.transport, conn.transport.get_write_buffer_size())

    def pause_writing(self) -> None:
        super().pause_writing()
        self.server.writable(self.conn, False)

    def resume_writing(self) -> None:
        super().resume_writing()
        self.server.writable(self.conn, True)


def same_user(transport: asyncio.BaseTransport) -> bool:
    """Whether the connecting process runs as this user (SO_PEERCRED, where there is one)."""
    sock = transport.get_extra_info("socket")
    option = getattr(socket, "SO_PEERCRED", None)
    if sock is None or option is None:
        return True
    creds = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return bool(uid == os.geteuid())


def private_dir(path: Path) -> None:
    """The data dir is this user's and 0700: one with group or other bits is made 0700 (the
    socket must not be listed, let alone replaced, by anyone else)."""
    st = os.stat(path)
    check_owner(st, str(path))
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(path, 0o700)
        logger.warning(
            "the data dir was mode %o: made it 0700 for the integration socket",
            stat.S_IMODE(st.st_mode),
            extra={"path": str(path)},
        )


def bind(path: str) -> tuple[socket.socket, int]:
    """A listening-ready socket bound at ``path`` with mode 0600, and its inode. A socket left
    there by a killed service is replaced (the service is its only owner: the router starts
    one at a time); anything else at ``path`` is left alone and refused."""
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise FileExistsError(errno.EEXIST, "exists and is not a socket: left alone", path)
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        previous = os.umask(0o177)  # no moment with a wider mode than 0600
        try:
            sock.bind(path)
        finally:
            os.umask(previous)
        os.chmod(path, 0o600)
        st = os.lstat(path)
        if not stat.S_ISSOCK(st.st_mode) or stat.S_IMODE(st.st_mode) != 0o600:
            raise PermissionError(errno.EPERM, "socket is not mode 0600 after its bind", path)
        check_owner(st, path)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock, st.st_ino


class IntegrationServer:
    """The listening socket and its connections (the `Frontend` of router/client_protocol.py)."""

    def __init__(self, data_dir: Path, service: Service, version: str) -> None:
        self.data_dir = data_dir
        self.path = wire.socket_path(data_dir)
        self.service = service
        self.version = version
        self.connections: dict[int, Connection] = {}
        self.unauthenticated: dict[int, Connection] = {}
        self.unauthenticated_bytes = 0
        self.peers: dict[int, Peer] = {}
        self.ids = 0
        self.server: asyncio.AbstractServer | None = None
        self.inode = 0

    async def start(self) -> None:
        """Bind and listen; OSError (logged by the caller) if the socket cannot be served."""
        problem = wire.path_problem(self.data_dir)
        if problem:
            raise OSError(errno.ENAMETOOLONG, problem)
        private_dir(self.data_dir)
        sock, self.inode = bind(self.path)
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(limits.log.loop_exception)
        try:
            self.server = await loop.create_unix_server(
                lambda: IntegrationProtocol(self), sock=sock, backlog=limits.ACCEPT_BATCH
            )
        except BaseException:
            sock.close()
            raise
        sock.listen(socket.SOMAXCONN)  # asyncio's batch per loop pass, the kernel's queue
        logger.info("integration socket listening", extra={"path": self.path})

    async def stop(self) -> None:
        """Stop listening, close every connection, remove the socket (if it is still ours)."""
        if self.server is not None:
            self.server.close()
        tasks = [task for peer in self.peers.values() for task in peer.tasks]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for conn in list(self.connections.values()):
            conn.transport.abort()
            self.closed(conn)  # the stream forgets it now, before the service closes
        with contextlib.suppress(OSError):
            if os.lstat(self.path).st_ino == self.inode:
                os.unlink(self.path)
        logger.info("integration socket closed", extra={"path": self.path})

    # -- Frontend (router/client_protocol.py) ------------------------------------------------
    def opened(self, transport: asyncio.WriteTransport, wake: Any) -> Connection:
        self.ids += 1
        conn = Connection(self.ids, transport, wake=wake)
        self.connections[conn.connection_id] = conn
        self.peers[conn.connection_id] = Peer(self, conn)
        return conn

    def closed(self, conn: Connection) -> None:
        self.connections.pop(conn.connection_id, None)
        peer = self.peers.pop(conn.connection_id, None)
        if peer is None:
            return
        peer.gone = True
        peer.writable.set()  # a stream waiting to send gives up
        try:
            self.service.disconnected(peer)
        except Exception:
            logger.exception("the collab service failed on a closed integration connection")

    def writable(self, conn: Connection | None, ok: bool) -> None:
        peer = self.peers.get(conn.connection_id) if conn is not None else None
        if peer is not None:
            (peer.writable.set if ok else peer.writable.clear)()

    def on_line_guarded(self, conn: Connection, line: bytes) -> bool:
        """`on_line` behind the socket's boundary: a failure is an internal_error line."""
        try:
            return self.on_line(conn, line)
        except Exception:
            error = internal_error()
            logger.exception("integration socket failed on a line", extra=error.details)
            self.write_line(conn, wire.error_line(None, error))
            return conn.authenticated

    def reply_error(self, conn: Connection, request_id: Any, error: PebrelError) -> None:
        self.write_line(conn, wire.error_line(request_id, error))

    # -- lines -------------------------------------------------------------------------------
    def write_line(self, conn: Connection, line: dict[str, Any]) -> None:
        """Queue one whole line (an answer that cannot be encoded becomes internal_error)."""
        if conn.transport.is_closing():
            return
        try:
            data = wire.encode(line)
        except ValueError:
            failure = internal_error()
            logger.exception("an integration line could not be encoded", extra=failure.details)
            data = wire.encode(wire.error_line(line.get("id"), failure))
        conn.transport.write(data)

    def on_line(self, conn: Connection, line: bytes) -> bool:
        """One line; False closes the connection (a hello that was refused)."""
        peer = self.peers[conn.connection_id]
        try:
            obj: Any = json.loads(line)
        except (ValueError, RecursionError):
            obj = None
        if not conn.authenticated:
            return self.hello(conn, peer, obj)
        self.request(conn, peer, obj)
        return True

    def hello(self, conn: Connection, peer: Peer, obj: Any) -> bool:
        error: CollabError
        if not isinstance(obj, dict):
            error = invalid("the first line must be the hello, a JSON object")
        elif (
            obj.get("protocol") != wire.PROTOCOL
            or type(obj.get("version")) is not int
            or (obj["version"] != wire.VERSION)
        ):
            error = CollabError(
                CollabCode.INCOMPATIBLE_INTEGRATION_PROTOCOL,
                f"this service speaks {wire.PROTOCOL} version {wire.VERSION}",
                {"protocol": wire.PROTOCOL, "versions": [wire.VERSION]},
            )
        else:
            try:
                principal = principals.authenticate(
                    self.service.store, obj.get("principal"), obj.get("token")
                )
            except CollabError as exc:
                error = exc
            else:
                conn.authenticated = True
                peer.principal_id = principal.id
                self.write_line(conn, wire.hello_answer(principal.id, self.version))
                logger.debug("integration hello", extra={"principal": principal.id})
                return True
        limits.log.warning("hello", f"integration hello refused: {error.code}")
        self.write_line(conn, wire.error_line(None, error))
        return False

    def request(self, conn: Connection, peer: Peer, obj: Any) -> None:
        if not isinstance(obj, dict):
            self.write_line(conn, wire.error_line(None, invalid("the line is not a JSON object")))
            return
        request_id = obj.get("id")
        if (
            isinstance(request_id, bool)
            or not isinstance(request_id, int | str)
            or unencodable(request_id, "id")
        ):
            error = invalid("a request needs an id: an integer (64 bits) or a string")
            self.write_line(conn, wire.error_line(None, error))
            return
        method, params = obj.get("method"), obj.get("params", {})
        try:
            if not isinstance(method, str) or not method or unencodable(method, "method"):
                raise invalid("a request needs a method name")
            if not isinstance(params, dict):
                raise invalid("params must be a JSON object", method=method)
            checked_params(method, params)
        except CollabError as exc:
            self.write_line(conn, wire.error_line(request_id, exc))
            return
        if method == SUBSCRIBE:
            work = self.service.subscribe(peer.caller, params, peer)
        else:
            work = self.service.handle(f"collab.{method}", params, peer.caller)
        conn.in_flight += 1
        task = asyncio.get_running_loop().create_task(self.answer(conn, request_id, method, work))
        peer.tasks.add(task)
        task.add_done_callback(peer.tasks.discard)

    async def answer(
        self,
        conn: Connection,
        request_id: wire.RequestId,
        method: str,
        work: Awaitable[dict[str, Any]],
    ) -> None:
        try:
            result, error = await outcome(f"collab.{method}", work)
            if error is not None:
                self.write_line(conn, wire.error_line(request_id, error))
            else:
                self.write_line(conn, wire.result_line(request_id, result or {}))
        finally:
            conn.in_flight -= 1
            conn.wake()
