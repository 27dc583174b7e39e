"""The integration socket's wire and its client's credential checks (I1.3, I1.6; #17).

The end-to-end proofs are tests/e2e/test_integration_cli.py and test_integration_socket.py;
these pin the pieces: which credential files `read_credential` takes, the error line's shape,
the socket path's limit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import NamedTuple

import pytest

from pebrel import integration_client as client
from pebrel import integration_wire as wire
from pebrel.errors import CollabCode, CollabError, internal_error

pytestmark = pytest.mark.timeout(30)

TOKEN = "t0ken-" + "x" * 40


def credential(path: Path, body: object, mode: int = 0o600) -> Path:
    path.write_text(body if isinstance(body, str) else json.dumps(body))
    path.chmod(mode)
    return path


class Refusal(NamedTuple):
    name: str
    body: object
    mode: int
    says: str


REFUSALS = [
    Refusal("group-readable", {"principal": "p", "token": TOKEN}, 0o640, "mode 0640"),
    Refusal("world-readable", {"principal": "p", "token": TOKEN}, 0o604, "mode 0604"),
    Refusal("group-writable", {"principal": "p", "token": TOKEN}, 0o620, "mode 0620"),
    Refusal("not json", "principal=p", 0o600, "not a Pebrel credential"),
    Refusal("no token", {"principal": "p"}, 0o600, "not a Pebrel credential"),
    Refusal("empty token", {"principal": "p", "token": ""}, 0o600, "not a Pebrel credential"),
    Refusal("a list", [1], 0o600, "not a Pebrel credential"),
]


@pytest.mark.parametrize("case", REFUSALS, ids=[case.name for case in REFUSALS])
def test_unsafe_or_malformed_credentials_are_refused(tmp_path: Path, case: Refusal) -> None:
    path = credential(tmp_path / "c.json", case.body, case.mode)
    with pytest.raises(client.CredentialRefused) as refused:
        client.read_credential(path)
    assert case.says in str(refused.value) and TOKEN not in str(refused.value)


def test_links_directories_fifos_and_missing_files_are_refused(tmp_path: Path) -> None:
    good = credential(tmp_path / "good.json", {"principal": "p", "token": TOKEN})
    link = tmp_path / "link.json"
    link.symlink_to(good)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    for path, says in (
        (link, "symbolic link"),
        (tmp_path, "not a regular file"),
        (fifo, "not a regular file"),
        (tmp_path / "none", "does not exist"),
    ):
        with pytest.raises(client.CredentialRefused, match=says):
            client.read_credential(path)


def test_a_private_credential_is_read_and_hides_its_token(tmp_path: Path) -> None:
    for mode in (0o600, 0o400):
        path = tmp_path / f"c{mode:o}.json"
        body = {"principal": "p", "token": TOKEN, "protocol": wire.PROTOCOL, "version": 1}
        found = client.read_credential(credential(path, body, mode))
        assert found == client.Credential("p", TOKEN)
        assert TOKEN not in repr(found)


def test_a_credential_for_another_protocol_version_is_incompatible(tmp_path: Path) -> None:
    body = {"principal": "p", "token": TOKEN, "protocol": wire.PROTOCOL, "version": 2}
    with pytest.raises(client.IntegrationRefused) as refused:
        client.read_credential(credential(tmp_path / "c.json", body))
    assert refused.value.line["code"] == "INCOMPATIBLE_INTEGRATION_PROTOCOL"


def test_the_error_line_is_the_specs_with_id_and_details() -> None:
    error = CollabError(CollabCode.TASK_CHANGED, "moved on", {"revision": 3})
    assert wire.error_line(7, error) == {
        "type": "error",
        "id": 7,
        "ok": False,
        "code": "TASK_CHANGED",
        "error": "moved on",
        "retryable": False,
        "details": {"revision": 3, "retryable": False},
    }
    busy = wire.error_line(None, CollabError(CollabCode.INTEGRATION_BUSY, "busy"))
    assert "id" not in busy and busy["retryable"] is True
    failure = wire.error_line("x", internal_error())
    assert failure["code"] == "internal_error" and failure["retryable"] is False
    assert "incident" in failure["details"]


def test_lines_are_compact_utf8_and_refuse_what_json_cannot_carry() -> None:
    assert wire.encode({"a": "é"}) == '{"a":"é"}\n'.encode()
    with pytest.raises(ValueError):
        wire.encode({"a": "\ud800"})
    with pytest.raises(ValueError):
        wire.encode({"a": float("nan")})


def test_the_socket_path_limit_is_107_bytes() -> None:
    tail = len(wire.SOCKET_NAME) + 1
    assert wire.path_problem("/" + "d" * (wire.SOCKET_PATH_MAX_BYTES - tail - 1)) is None
    problem = wire.path_problem("/" + "d" * (wire.SOCKET_PATH_MAX_BYTES - tail))
    assert problem is not None and "108 bytes" in problem and "PEBREL_DATA_DIR" in problem
