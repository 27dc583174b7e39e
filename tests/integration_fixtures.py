"""Helpers for tests of the integration socket (#17): a principal, its credential file, and a
raw JSON Lines connection to `<data_dir>/integration.sock`."""

from __future__ import annotations

import json
import os
import secrets
import socket
from pathlib import Path
from typing import Any

from pebrel import integration_wire as wire
from pebrel.integration_wire import token_hash
from tests.conftest import Runtime, wait_for

READS = ["task.read", "events.read"]


def group(rt: Runtime, name: str = "bridges") -> str:
    """A new collab group (created by the test process: the user); its id."""
    result = rt.ok("collab.group.create", {"name": name, "idempotency_key": f"group-{name}"})
    return str(result["group"]["group_id"])


def add_principal(
    rt: Runtime, group_id: str, principal_id: str = "bridge", permissions: list[str] | None = None
) -> str:
    """A principal made as `pebrel integration create` makes one (the service gets the
    policy and the token's SHA-256, never the token); its token."""
    token = secrets.token_urlsafe(32)
    policy = {
        "id": principal_id,
        "groupId": group_id,
        "permissions": READS if permissions is None else permissions,
        "launchProfiles": [],
    }
    rt.ok("collab.integration.create", {"policy": policy, "token_sha256": token_hash(token)})
    return token


def revoke_principal(rt: Runtime, principal_id: str) -> None:
    rt.ok("collab.integration.revoke", {"id": principal_id})


def write_credential(path: Path, principal_id: str, token: str, mode: int = 0o600) -> Path:
    """The credential file `pebrel integration create` writes, with ``mode``."""
    body = {"principal": principal_id, "token": token, "protocol": wire.PROTOCOL, "version": 1}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(body, out)
    os.chmod(path, mode)
    return path


def socket_file(rt: Runtime) -> Path:
    return rt.data_dir / wire.SOCKET_NAME


class Line:
    """One raw connection to the integration socket."""

    def __init__(self, rt: Runtime | Path, timeout_s: float = 10) -> None:
        path = rt if isinstance(rt, Path) else socket_file(rt)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout_s)
        self.sock.connect(str(path))
        self.reader = self.sock.makefile("rb")

    def close(self) -> None:
        self.reader.close()
        self.sock.close()

    def __enter__(self) -> Line:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, obj: dict[str, Any]) -> None:
        self.send_raw(json.dumps(obj).encode() + b"\n")

    def read(self, timeout_s: float = 10) -> dict[str, Any]:
        self.sock.settimeout(timeout_s)
        raw = self.reader.readline()
        assert raw, "the server closed the connection"
        line: dict[str, Any] = json.loads(raw)
        return line

    def hello(self, principal_id: str, token: str, **override: Any) -> dict[str, Any]:
        self.send({**wire.hello(principal_id, token), **override})
        return self.read()

    def call(
        self, request_id: int | str, method: str, params: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        self.send({"id": request_id, "method": method, "params": params or {}})
        return self.read()

    def closed(self, timeout_s: float = 10) -> bool:
        """True once the server closed the connection (EOF or reset) with nothing more sent;
        False if it is still open after ``timeout_s`` (it may be asked again)."""
        self.sock.settimeout(timeout_s)
        try:
            rest = self.sock.recv(65536)
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True
        assert rest == b"", rest
        return True


def signed_in(rt: Runtime, principal_id: str, token: str) -> Line:
    """A connection whose hello was accepted."""
    line = Line(rt)
    try:
        answer = line.hello(principal_id, token)
        assert answer["ok"] is True and answer["type"] == "hello", answer
    except BaseException:
        line.close()
        raise
    return line


def admitted(rt: Runtime, principal_id: str, token: str) -> Line | None:
    """A connection whose hello was accepted, or None if the service closed it."""
    try:
        return signed_in(rt, principal_id, token)
    except (OSError, AssertionError):
        return None


def listening(rt: Runtime, timeout_s: float = 30) -> None:
    """Wait until the collab service serves its integration socket."""

    def answers() -> bool:
        try:
            with Line(rt, timeout_s=5) as line:
                line.send_raw(b"{}\n")
                return bool(line.read()["type"] == "error")
        except (OSError, AssertionError):
            return False

    wait_for(answers, timeout_s, "the integration socket")
