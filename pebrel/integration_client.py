"""The integration socket's client library: a principal's credential, connection and calls (#17).

`read_credential(path)` reads the credential file `pebrel integration create` wrote, and only
one that is safe to trust (I1.3): a regular file, not a symbolic link, owned by this user, with
no permission bits for group or others. `connect(data_dir, credential)` opens
`<data_dir>/integration.sock`, says hello and checks the server speaks
`pebrel.integration` version 1 (`Connection.call`, `Connection.lines`, `Connection.close`).
The token is read from the file only: never from argv or the environment, never printed.
"""

from __future__ import annotations

import errno
import itertools
import json
import os
import socket
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO

from pebrel import integration_wire as wire
from pebrel.errors import CollabCode, CollabError

if TYPE_CHECKING:
    from pathlib import Path

#: The environment variable naming the credential file (the token's only way in).
CREDENTIAL_ENV = "PEBREL_INTEGRATION_CREDENTIAL_FILE"
#: Default deadline of one call, in seconds; the hello's, and the connect's.
DEFAULT_TIMEOUT_S = 30.0
HELLO_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = 5.0
#: A credential file is a few hundred bytes; anything past this is not one.
MAX_CREDENTIAL_BYTES = 64 * 1024


class CredentialRefused(Exception):
    """The credential file is missing, unsafe or unreadable: nothing was sent (CLI exit 2)."""


class IntegrationUnavailable(Exception):
    """No service answers on the socket (no runtime, no collab service): CLI exit 3."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.error = CollabError(CollabCode.INTEGRATION_RUNTIME_UNAVAILABLE, message)


class IntegrationRefused(Exception):
    """The service refused the hello, or speaks another protocol: ``line`` is the error line
    (INTEGRATION_UNAUTHORIZED, INTEGRATION_REVOKED, INCOMPATIBLE_INTEGRATION_PROTOCOL...)."""

    def __init__(self, line: dict[str, Any]) -> None:
        super().__init__(str(line.get("error", "")))
        self.line = line


class IntegrationTimeout(Exception):
    """No answer within the deadline (the request may still be carried out)."""

    def __init__(self, method: str, timeout_s: float | None) -> None:
        super().__init__(f"no answer to {method} within {timeout_s} s")
        self.method = method
        self.timeout_s = timeout_s


@dataclass(frozen=True, slots=True)
class Credential:
    principal: str
    token: str = field(repr=False)


def read_credential(path: str | Path) -> Credential:
    """The credential in ``path``, or CredentialRefused saying why (I1.3)."""
    name = os.fspath(path)
    try:
        st = os.lstat(name)
    except FileNotFoundError:
        raise CredentialRefused(f"credential file {name} does not exist") from None
    except OSError as exc:
        raise CredentialRefused(f"credential file {name}: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise CredentialRefused(f"credential file {name} is a symbolic link: Pebrel refuses it")
    try:  # O_NOFOLLOW: a link swapped in since the lstat is refused too
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CredentialRefused(f"credential file {name} is a symbolic link") from None
        raise CredentialRefused(f"credential file {name}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CredentialRefused(f"credential file {name} is not a regular file")
        if st.st_uid != os.geteuid():
            raise CredentialRefused(
                f"credential file {name} is owned by uid {st.st_uid}, not by this user"
            )
        mode = stat.S_IMODE(st.st_mode)
        if mode & 0o077:
            raise CredentialRefused(
                f"credential file {name} has mode {mode:04o}: it must be private to its "
                "owner (chmod 600)"
            )
        data = os.read(fd, MAX_CREDENTIAL_BYTES + 1)
    finally:
        os.close(fd)
    return parse_credential(name, data)


def parse_credential(name: str, data: bytes) -> Credential:
    try:
        obj = json.loads(data) if len(data) <= MAX_CREDENTIAL_BYTES else None
    except ValueError:
        obj = None
    if (
        not isinstance(obj, dict)
        or not isinstance(obj.get("principal"), str)
        or not isinstance(obj.get("token"), str)
        or not obj["principal"]
        or not obj["token"]
    ):
        raise CredentialRefused(
            f"credential file {name} is not a Pebrel credential (a JSON object with "
            '"principal" and "token")'
        )
    protocol, version = obj.get("protocol", wire.PROTOCOL), obj.get("version", wire.VERSION)
    if protocol != wire.PROTOCOL or version != wire.VERSION or isinstance(version, bool):
        raise IntegrationRefused(incompatible(f"the credential file is for {protocol} {version}"))
    return Credential(obj["principal"], obj["token"])


def incompatible(why: str) -> dict[str, Any]:
    error = CollabError(
        CollabCode.INCOMPATIBLE_INTEGRATION_PROTOCOL,
        f"{why}; this client speaks {wire.PROTOCOL} version {wire.VERSION}",
        {"protocol": wire.PROTOCOL, "versions": [wire.VERSION]},
    )
    return wire.error_line(None, error)


class Connection:
    """One authenticated connection to the integration socket."""

    def __init__(
        self, sock: socket.socket, reader: BinaryIO, principal: str, server_version: str
    ) -> None:
        self.sock = sock
        self.reader = reader
        self.principal = principal
        self.server_version = server_version
        self.ids = itertools.count(1)

    def close(self) -> None:
        self.reader.close()
        self.sock.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Send one request (method without `collab.`); its id."""
        request_id = next(self.ids)
        self.sock.sendall(wire.encode(wire.request(request_id, method, params or {})))
        return request_id

    def read_line(self, timeout_s: float | None = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
        """The next line (TimeoutError past ``timeout_s``; None waits for ever)."""
        self.sock.settimeout(timeout_s)
        line = self.reader.readline(wire.MAX_LINE_BYTES + 1)
        if not line:
            raise IntegrationUnavailable("the service closed the connection")
        obj = json.loads(line)
        if not isinstance(obj, dict):
            raise ValueError("the service sent a line that is not a JSON object")
        return obj

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        timeout_s: float | None = DEFAULT_TIMEOUT_S,
    ) -> dict[str, Any]:
        """Send a request; its answer line (a result or an error line). An error line without
        an id (the connection ends) is returned as the answer too."""
        request_id = self.send(method, params)
        try:
            while True:
                line = self.read_line(timeout_s)
                if line.get("id") == request_id or (
                    line.get("type") == "error" and "id" not in line
                ):
                    return line
        except TimeoutError as exc:
            raise IntegrationTimeout(method, timeout_s) from exc

    def lines(self, timeout_s: float | None = None) -> Iterator[dict[str, Any]]:
        """Every line the service sends (events, heartbeats, answers) until it closes the
        connection (IntegrationUnavailable) or none arrives within ``timeout_s``."""
        while True:
            yield self.read_line(timeout_s)


def connect(
    data_dir: str | Path,
    credential: Credential | str,
    token: str | None = None,
    timeout_s: float = HELLO_TIMEOUT_S,
) -> Connection:
    """Connect as ``credential`` (or the principal id ``credential`` with ``token``) and say
    hello. IntegrationUnavailable: no socket or nobody listening; IntegrationRefused: the
    hello's error line, or a server of another protocol."""
    if isinstance(credential, str):
        credential = Credential(credential, token or "")
    path = wire.socket_path(data_dir)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT_S)
        try:
            sock.connect(path)
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            raise IntegrationUnavailable(
                f"no collab service listens on {path} (is the runtime running?): {exc.strerror}"
            ) from None
        except OSError as exc:
            raise IntegrationUnavailable(f"cannot connect to {path}: {exc}") from None
        sock.settimeout(timeout_s)
        try:
            sock.sendall(wire.encode(wire.hello(credential.principal, credential.token)))
        except OSError as exc:
            raise IntegrationUnavailable(f"{path}: {exc}") from None
        reader = sock.makefile("rb")
        try:
            answer = hello_answer(reader, path, timeout_s)
        except BaseException:
            reader.close()
            raise
    except BaseException:
        sock.close()
        raise
    return Connection(sock, reader, str(answer["principal"]), str(answer.get("server_version", "")))


def hello_answer(reader: BinaryIO, path: str, timeout_s: float) -> dict[str, Any]:
    """The server's answer to the hello, checked; IntegrationRefused otherwise."""
    try:
        raw = reader.readline(wire.MAX_LINE_BYTES + 1)
    except TimeoutError:
        raise IntegrationTimeout("the hello", timeout_s) from None
    except OSError as exc:
        raise IntegrationUnavailable(f"{path}: {exc}") from None
    if not raw:
        raise IntegrationUnavailable(f"{path} closed the connection without an answer")
    try:
        line = json.loads(raw)
    except ValueError:
        line = None
    if not isinstance(line, dict):
        raise IntegrationRefused(incompatible(f"{path} answered the hello with no JSON line"))
    if line.get("type") == "error":
        raise IntegrationRefused(line)
    if line.get("type") != "hello" or line.get("ok") is not True:
        raise IntegrationRefused(incompatible(f"{path} answered the hello with no hello"))
    version = line.get("version")
    if (
        line.get("protocol") != wire.PROTOCOL
        or version != wire.VERSION
        or (isinstance(version, bool))
    ):
        raise IntegrationRefused(
            incompatible(f"the service speaks {line.get('protocol')} version {version}")
        )
    return line
