"""The client library: find the runtime, send one request, read its answer.

Deliberately light (socket + json): every CLI call imports it. No pathlib (see pebrel.datadir),
and what only a failure needs (pebrel.errors pulls in secrets and hashlib) is imported there.
"""

from __future__ import annotations

import itertools
import json
import socket
from typing import TYPE_CHECKING, Any

from pebrel.datadir import PortFileError, PortInfo, data_dir_name, pid_alive, read_port_file
from pebrel.envelope import RequestId, encode_request, error_response

if TYPE_CHECKING:
    from pathlib import Path

#: Default deadline of one client call, in seconds (waiting calls add their own timeout).
DEFAULT_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 5.0
_ids = itertools.count(1)


class RuntimeUnavailable(Exception):
    """No runtime answers for this data dir; the message says why (`unsafe`: Pebrel refused
    its runtime.port: a symbolic link, or a file or data dir another user owns)."""

    def __init__(self, message: str, unsafe: bool = False) -> None:
        super().__init__(message)
        self.unsafe = unsafe


class ClientTimeout(Exception):
    """The runtime took a request, but its answer did not arrive within the client's deadline
    (the request may still be carried out)."""

    def __init__(self, method: str, timeout_s: float | None) -> None:
        super().__init__(f"no answer to {method} within the client's {timeout_s} s")
        self.method = method
        self.timeout_s = timeout_s


def locate(directory: Path | str | None = None) -> PortInfo:
    try:
        info = read_port_file(directory)
    except PortFileError as exc:
        if exc.unsafe:
            raise RuntimeUnavailable(str(exc), unsafe=True) from exc
        raise RuntimeUnavailable(f"no runtime is running ({exc})") from exc
    if not pid_alive(info.pid):
        raise RuntimeUnavailable(
            f"stale runtime.port: process {info.pid} is gone (run `pebrel runtime start`)"
        )
    return info


class Client:
    """One persistent connection to the runtime."""

    def __init__(
        self, directory: Path | str | None = None, timeout_s: float | None = DEFAULT_TIMEOUT_S
    ) -> None:
        self.directory = directory or data_dir_name()
        self.info = locate(self.directory)
        # A plain connect to the literal address: socket.create_connection resolves the host
        # with getaddrinfo, which imports the idna codec (~1 ms) on every CLI call.
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            self.sock.settimeout(CONNECT_TIMEOUT_S)
            self.sock.connect(("127.0.0.1", self.info.port))
        except OSError as exc:
            self.sock.close()
            raise RuntimeUnavailable(
                f"runtime on port {self.info.port} does not accept connections: {exc}"
            ) from exc
        self.sock.settimeout(timeout_s)
        self.reader = self.sock.makefile("rb")

    def close(self) -> None:
        self.reader.close()
        self.sock.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, method: str, params: dict[str, Any] | None = None) -> RequestId:
        request_id = next(_ids)
        self.sock.sendall(
            encode_request(method, params, request_id=request_id, token=self.info.token)
        )
        return request_id

    def read_line(self) -> dict[str, Any]:
        line = self.reader.readline()
        if not line:
            raise RuntimeUnavailable("the runtime closed the connection")
        obj: dict[str, Any] = json.loads(line)
        return obj

    def call(
        self, method: str, params: dict[str, Any] | None = None, timeout_s: float | None = None
    ) -> dict[str, Any]:
        """Send a request and return its response envelope (ok or error)."""
        if timeout_s is not None:
            self.sock.settimeout(timeout_s)
        request_id = self.send(method, params)
        try:
            while True:
                response = self.read_line()
                if response.get("id") == request_id:
                    return response
        except TimeoutError as exc:
            raise ClientTimeout(method, self.sock.gettimeout()) from exc

    def ping(self) -> str:
        self.sock.sendall(f"PING {self.info.token}\n".encode())
        return self.reader.readline().decode().strip()


def unavailable_envelope(message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    from pebrel.errors import ErrorCode, PebrelError

    return error_response(None, PebrelError(ErrorCode.RUNTIME_UNAVAILABLE, message, details))


def timeout_envelope(exc: ClientTimeout) -> dict[str, Any]:
    from pebrel.errors import ErrorCode, PebrelError

    details = {"method": exc.method, "timeout_s": exc.timeout_s}
    return error_response(None, PebrelError(ErrorCode.CLIENT_TIMEOUT, str(exc), details))
