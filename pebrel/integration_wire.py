"""The integration socket's wire (FEATURES I1.6, #17): its place, protocol, limits and lines.

One place for what the server (collab/integration_server.py), the client library
(pebrel/integration_client.py) and the router (which refuses to start the collab service when
the socket's path is too long for a Unix socket) must agree on. JSON Lines, UTF-8, one object
per line (docs/integration.md, "The integration socket").
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from pathlib import Path

    from pebrel.errors import PebrelError

PROTOCOL: Final = "pebrel.integration"
VERSION: Final = 1
SOCKET_NAME: Final = "integration.sock"
#: The longest line either side takes (a longer one: INVALID_ARGUMENT, then a close).
MAX_LINE_BYTES: Final = 1024 * 1024
#: The longest path a Unix socket can be bound to (Linux: sun_path holds 108 bytes, NUL included).
SOCKET_PATH_MAX_BYTES: Final = 107

RequestId = int | str


def socket_path(data_dir: Path | str) -> str:
    """`<data_dir>/integration.sock`."""
    return os.path.join(os.fspath(data_dir), SOCKET_NAME)


def remove_left_socket(data_dir: Path | str) -> None:
    """Remove the integration socket a collab service left (killed, it could not): call it
    only once no service of this data dir runs. Anything but a socket is left alone."""
    path = socket_path(data_dir)
    with contextlib.suppress(OSError):
        if stat.S_ISSOCK(os.lstat(path).st_mode):
            os.unlink(path)


def path_problem(data_dir: Path | str) -> str | None:
    """Why the socket cannot be bound in ``data_dir`` (its path is too long), or None."""
    path = socket_path(data_dir)
    size = len(os.fsencode(path))
    if size <= SOCKET_PATH_MAX_BYTES:
        return None
    return (
        f"the integration socket {path} would be {size} bytes long, and a Unix socket path "
        f"may be at most {SOCKET_PATH_MAX_BYTES}: use a shorter PEBREL_DATA_DIR"
    )


def token_hash(token: str) -> str:
    """What the service keeps of a token, and all the admin CLI sends of it: its SHA-256, hex."""
    import hashlib  # only where a token is made or checked: not on every client's path

    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def hello(principal: str, token: str) -> dict[str, Any]:
    """A client's first line."""
    return {"protocol": PROTOCOL, "version": VERSION, "principal": principal, "token": token}


def hello_answer(principal: str, server_version: str) -> dict[str, Any]:
    """The server's answer to a hello it accepted."""
    return {
        "type": "hello",
        "ok": True,
        "protocol": PROTOCOL,
        "version": VERSION,
        "principal": principal,
        "server_version": server_version,
    }


def request(request_id: RequestId, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"id": request_id, "method": method, "params": params}


def result_line(request_id: RequestId, result: dict[str, Any]) -> dict[str, Any]:
    return {"type": "result", "id": request_id, "ok": True, "result": result}


def error_line(request_id: RequestId | None, error: PebrelError) -> dict[str, Any]:
    """The spec's error line for ``error``: with the request's id when it answers one (a hello,
    a line that is no request and a stream's end have none), and ``details``."""
    line: dict[str, Any] = {"type": "error"}
    if request_id is not None:
        line["id"] = request_id
    line.update(
        ok=False,
        code=str(error.code),
        error=error.message,
        retryable=error.details.get("retryable") is True,
        details=error.details,
    )
    return line


class Shared(dict[str, Any]):
    """A line sent on many connections (an event, to every stream of its group): `encode`
    encodes it once. It must not change after it was first sent."""

    __slots__ = ("encoded",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.encoded: bytes | None = None


def encode(line: dict[str, Any]) -> bytes:
    """One line as sent: compact JSON, UTF-8, a newline (ValueError if it cannot be: NaN, a
    lone surrogate)."""
    if isinstance(line, Shared):
        if line.encoded is None:
            line.encoded = _encode(line)
        return line.encoded
    return _encode(line)


def _encode(line: dict[str, Any]) -> bytes:
    text = json.dumps(line, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8") + b"\n"
