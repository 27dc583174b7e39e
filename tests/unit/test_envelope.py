"""parse_request and the envelope builders of the JSON Lines protocol (R1.3, R2.2)."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import pytest

from pebrel import PROTOCOL
from pebrel.envelope import (
    Request,
    RequestId,
    dump_line,
    dump_value,
    encode_request,
    error_response,
    ok_line_encoded,
    ok_response,
    parse_request,
    peek_id,
)
from pebrel.errors import ErrorCode, PebrelError

TOKEN = "ab" * 32
#: Marks an envelope field that `line` leaves out.
MISSING = object()


def line(**fields: Any) -> bytes:
    body: dict[str, Any] = {
        "protocol": PROTOCOL,
        "version": 1,
        "id": 7,
        "token": TOKEN,
        "method": "pane.read",
        "params": {"pane_id": 1},
    }
    for key, value in fields.items():
        if value is MISSING:
            body.pop(key, None)
        else:
            body[key] = value
    return json.dumps(body).encode()


def test_parse_request_happy_path() -> None:
    """R1.3: a well-formed request line parses into id, method, params and token."""
    assert parse_request(line()) == Request(
        id=7, method="pane.read", params={"pane_id": 1}, token=TOKEN
    )


class Accepted(NamedTuple):
    name: str
    raw: bytes
    expected: Request


ACCEPTED = [
    Accepted("string-id", line(id="abc"), Request("abc", "pane.read", {"pane_id": 1}, TOKEN)),
    Accepted("null-id", line(id=None), Request(None, "pane.read", {"pane_id": 1}, TOKEN)),
    Accepted("no-id", line(id=MISSING), Request(None, "pane.read", {"pane_id": 1}, TOKEN)),
    Accepted("no-params", line(params=MISSING), Request(7, "pane.read", {}, TOKEN)),
    Accepted("null-params", line(params=None), Request(7, "pane.read", {}, TOKEN)),
    Accepted("no-token", line(token=MISSING), Request(7, "pane.read", {"pane_id": 1}, None)),
    Accepted(
        "crlf-and-spaces",
        b" " + line() + b"\r\n",
        Request(7, "pane.read", {"pane_id": 1}, TOKEN),
    ),
]


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.name for c in ACCEPTED])
def test_parse_request_optional_fields(case: Accepted) -> None:
    """R1.3: id, params and token are optional; null params means no params."""
    assert parse_request(case.raw) == case.expected


def test_encode_request_round_trips() -> None:
    """R1.3: what the client encodes is one line that parse_request reads back unchanged."""
    raw = encode_request("pane.prompt", {"pane_id": 2, "text": "é"}, request_id="x", token=TOKEN)
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1
    assert parse_request(raw) == Request("x", "pane.prompt", {"pane_id": 2, "text": "é"}, TOKEN)
    assert parse_request(encode_request("runtime.describe", None, request_id=1, token=TOKEN)) == (
        Request(1, "runtime.describe", {}, TOKEN)
    )


class Refused(NamedTuple):
    name: str
    raw: bytes
    code: ErrorCode


REFUSED = [
    Refused("invalid-json", b'{"protocol": ', ErrorCode.INVALID_REQUEST),
    Refused("empty-line", b"", ErrorCode.INVALID_REQUEST),
    Refused("invalid-utf8", b'{"id": "\xff"}', ErrorCode.INVALID_REQUEST),
    Refused("array", b"[1, 2]", ErrorCode.INVALID_REQUEST),
    Refused("string", b'"pane.read"', ErrorCode.INVALID_REQUEST),
    Refused("number", b"7", ErrorCode.INVALID_REQUEST),
    Refused("null", b"null", ErrorCode.INVALID_REQUEST),
    Refused("bool-id", line(id=True), ErrorCode.INVALID_REQUEST),
    Refused("float-id", line(id=1.5), ErrorCode.INVALID_REQUEST),
    Refused("list-id", line(id=[1]), ErrorCode.INVALID_REQUEST),
    Refused("object-id", line(id={"n": 1}), ErrorCode.INVALID_REQUEST),
    Refused("wrong-protocol", line(protocol="other"), ErrorCode.PROTOCOL_VERSION_MISMATCH),
    Refused("missing-protocol", line(protocol=MISSING), ErrorCode.PROTOCOL_VERSION_MISMATCH),
    Refused("version-2", line(version=2), ErrorCode.PROTOCOL_VERSION_MISMATCH),
    Refused("version-string", line(version="1"), ErrorCode.PROTOCOL_VERSION_MISMATCH),
    Refused("missing-version", line(version=MISSING), ErrorCode.PROTOCOL_VERSION_MISMATCH),
    Refused("version-true", line(version=True), ErrorCode.PROTOCOL_VERSION_MISMATCH),
    Refused("missing-method", line(method=MISSING), ErrorCode.INVALID_REQUEST),
    Refused("empty-method", line(method=""), ErrorCode.INVALID_REQUEST),
    Refused("method-not-a-string", line(method=3), ErrorCode.INVALID_REQUEST),
    Refused("params-list", line(params=[1]), ErrorCode.INVALID_REQUEST),
    Refused("params-string", line(params="pane_id=1"), ErrorCode.INVALID_REQUEST),
    Refused("params-number", line(params=0), ErrorCode.INVALID_REQUEST),
    Refused("token-not-a-string", line(token=123), ErrorCode.INVALID_REQUEST),
    Refused("unknown-envelope-field", line(extra=1), ErrorCode.INVALID_REQUEST),
]


@pytest.mark.parametrize("case", REFUSED, ids=[c.name for c in REFUSED])
def test_parse_request_refuses(case: Refused) -> None:
    """R1.3, R2.2: each malformed envelope raises its public error code, with a message."""
    with pytest.raises(PebrelError) as caught:
        parse_request(case.raw)
    assert caught.value.code == case.code
    assert caught.value.message


def test_version_mismatch_lists_supported_versions() -> None:
    """R1.3: protocol_version_mismatch carries details.supported_versions == [1]."""
    with pytest.raises(PebrelError) as caught:
        parse_request(line(version=2))
    assert caught.value.details["supported_versions"] == [1]


def test_unknown_envelope_fields_are_named() -> None:
    """R2.2: an unknown envelope field is refused and named in details.fields."""
    with pytest.raises(PebrelError) as caught:
        parse_request(line(zeta=1, alpha=2))
    assert caught.value.details == {"fields": ["alpha", "zeta"]}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"id": 3}, 3),
        ({"id": "x"}, "x"),
        ({"id": None}, None),
        ({}, None),
        ({"id": True}, None),
        ({"id": 1.5}, None),
        ({"id": [1]}, None),
        ([1], None),
        ("id", None),
    ],
)
def test_peek_id_only_returns_usable_ids(obj: object, expected: object) -> None:
    """R2.2: an error reply echoes the request's id only when it is a valid id."""
    assert peek_id(obj) == expected


def test_response_builders_shape_both_envelopes() -> None:
    """R2.2: ok and error envelopes carry protocol, version, id, ok and result or error."""
    assert ok_response(5, {"a": 1}) == {
        "protocol": PROTOCOL,
        "version": 1,
        "id": 5,
        "ok": True,
        "result": {"a": 1},
    }
    error = error_response("q", PebrelError(ErrorCode.TIMEOUT, "late", {"pane_id": 1}))
    assert error == {
        "protocol": PROTOCOL,
        "version": 1,
        "id": "q",
        "ok": False,
        "error": {"code": "timeout", "message": "late", "details": {"pane_id": 1}},
    }
    dumped = dump_line({"text": "é\n"})
    assert dumped.endswith(b"\n") and dumped.count(b"\n") == 1
    assert json.loads(dumped) == {"text": "é\n"}


# -- results encoded ahead (runtime.snapshot) -------------------------------------------------


@pytest.mark.parametrize("request_id", [7, "req-7", None, 2**40])
def test_an_answer_from_a_result_encoded_ahead_is_the_same_line(request_id: RequestId) -> None:
    """The router encodes a snapshot once per revision; the line the adapter splices from it
    must be byte for byte the line it would build from the result itself."""
    result = {
        "runtime_id": "ab12",
        "revision": 3,
        "windows": [{"window_id": 1, "name": "wörk \u2603", "tabs": [{"panes": [{"pane_id": 1}]}]}],
        "text": 'line\nwith "quotes" and \\ and \x1b',
        "lone": "\ud800",  # a lone surrogate: backslash-replaced in both
        "empty": {},
    }
    assert ok_line_encoded(request_id, dump_value(result)) == dump_line(
        ok_response(request_id, result)
    )
