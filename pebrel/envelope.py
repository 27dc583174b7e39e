"""Builds and parses every JSON Lines envelope of the client protocol (DESIGN "Wire protocol")."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, NamedTuple

from pebrel import PROTOCOL, PROTOCOL_VERSION, SUPPORTED_VERSIONS

if TYPE_CHECKING:
    from pebrel.errors import PebrelError

MAX_REQUEST_LINE_BYTES = 4 * 1024 * 1024

RequestId = int | str | None


class Request(NamedTuple):
    """One parsed request line.

    A NamedTuple rather than a frozen dataclass: every CLI call imports this module, and the
    dataclasses import plus building the class would cost it more than a millisecond.
    """

    id: RequestId
    method: str
    params: dict[str, Any]
    token: str | None


def encode_request(
    method: str, params: dict[str, Any] | None, *, request_id: RequestId, token: str
) -> bytes:
    body = {
        "protocol": PROTOCOL,
        "version": PROTOCOL_VERSION,
        "id": request_id,
        "token": token,
        "method": method,
        "params": params or {},
    }
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def ok_response(request_id: RequestId, result: dict[str, Any]) -> dict[str, Any]:
    return {
        "protocol": PROTOCOL,
        "version": PROTOCOL_VERSION,
        "id": request_id,
        "ok": True,
        "result": result,
    }


def error_response(request_id: RequestId, error: PebrelError) -> dict[str, Any]:
    return {
        "protocol": PROTOCOL,
        "version": PROTOCOL_VERSION,
        "id": request_id,
        "ok": False,
        "error": error.to_wire(),
    }


def answer(
    request_id: RequestId, ok: bool, result: dict[str, Any] | None, error: dict[str, Any] | None
) -> dict[str, Any]:
    """The envelope of an answer the router already shaped (result, or error on the wire)."""
    if ok:
        return ok_response(request_id, result or {})
    return {
        "protocol": PROTOCOL,
        "version": PROTOCOL_VERSION,
        "id": request_id,
        "ok": False,
        "error": error or {"code": "internal_error", "message": "no error given", "details": {}},
    }


def event_line(runtime_id: str, revision: int, snapshot: dict[str, Any]) -> dict[str, Any]:
    """One `runtime.snapshot` event of an events.subscribe stream."""
    return {
        "type": "event",
        "event": "runtime.snapshot",
        "runtime_id": runtime_id,
        "revision": revision,
        "snapshot": snapshot,
    }


def screens_event_line(runtime_id: str, panes: list[list[Any]]) -> dict[str, Any]:
    """One `pane.screens` event: the panes whose published screen changed (#21)."""
    return {
        "type": "event",
        "event": "pane.screens",
        "runtime_id": runtime_id,
        "panes": [
            {"window_id": window_id, "pane_id": pane_id, "screen_captured_at": captured}
            for window_id, pane_id, captured in panes
        ],
    }


def dump_value(value: Any) -> bytes:
    """A value's JSON exactly as :func:`dump_line` writes it inside a line (no newline)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", errors="backslashreplace")


def dump_line(message: dict[str, Any]) -> bytes:
    return dump_value(message) + b"\n"


class EncodedResult(NamedTuple):
    """A result the router encoded ahead with :func:`dump_value` and keeps (the snapshot of a
    revision): answering with it costs no encoding on either side of the frontend link.
    ``reusable``: the same request gets the same answer until the router's state or a kept
    screen changes (the frontend may answer it again itself until told otherwise)."""

    json: bytes
    reusable: bool = False
    #: A pane.read's (window_id, pane_id, lines), as the handler resolved them.
    read_of: tuple[int, int, int] | None = None


def ok_line_encoded(request_id: RequestId, result_json: bytes) -> bytes:
    """The line of an ok answer from a result encoded ahead: byte for byte
    ``dump_line(ok_response(request_id, result))`` ("result" is the envelope's last field)."""
    head = dump_value(ok_response(request_id, {}))
    return head[: -len(b"{}}")] + result_json + b"}\n"


def peek_id(obj: object) -> RequestId:
    """The request id of a parsed object if it has a usable one, for error replies."""
    if isinstance(obj, dict):
        rid = obj.get("id")
        if rid is None or (isinstance(rid, int | str) and not isinstance(rid, bool)):
            return rid
    return None


def _no_constant(name: str) -> Any:
    """``json.loads``'s ``parse_constant``: NaN, Infinity and -Infinity are not JSON (RFC 8259)
    and no param takes them, so a line holding one is refused before anything reads it."""
    from pebrel.errors import ErrorCode, PebrelError

    raise PebrelError(
        ErrorCode.INVALID_REQUEST,
        f"request line is not valid JSON: {name} is not a JSON number",
        {"constant": name},
    )


def parse_request(line: bytes) -> Request:
    """Parse one request line; raise PebrelError (invalid_request / protocol_version_mismatch)."""
    # Imported here, not at the top: every CLI call imports this module and errors pulls in
    # secrets (hashlib, OpenSSL); the router has it loaded already, so this is a dict lookup.
    from pebrel.errors import ErrorCode, PebrelError

    try:
        obj = json.loads(line, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise PebrelError(ErrorCode.INVALID_REQUEST, "request line is not valid JSON") from exc
    if not isinstance(obj, dict):
        raise PebrelError(ErrorCode.INVALID_REQUEST, "request must be a JSON object")
    rid = obj.get("id")
    if rid is not None and (not isinstance(rid, int | str) or isinstance(rid, bool)):
        raise PebrelError(ErrorCode.INVALID_REQUEST, "id must be an integer, a string or null")
    protocol = obj.get("protocol")
    version = obj.get("version")
    if protocol != PROTOCOL or version not in SUPPORTED_VERSIONS or isinstance(version, bool):
        raise PebrelError(
            ErrorCode.PROTOCOL_VERSION_MISMATCH,
            f"unsupported protocol {protocol!r} version {version!r}",
            {"supported_versions": list(SUPPORTED_VERSIONS), "protocol": PROTOCOL},
        )
    method = obj.get("method")
    if not isinstance(method, str) or not method:
        raise PebrelError(ErrorCode.INVALID_REQUEST, "method must be a non-empty string")
    params = obj.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise PebrelError(ErrorCode.INVALID_REQUEST, "params must be a JSON object")
    token = obj.get("token")
    if token is not None and not isinstance(token, str):
        raise PebrelError(ErrorCode.INVALID_REQUEST, "token must be a string")
    extra = set(obj) - {"protocol", "version", "id", "token", "method", "params"}
    if extra:
        raise PebrelError(
            ErrorCode.INVALID_REQUEST,
            "unknown envelope fields",
            {"fields": sorted(extra)},
        )
    return Request(id=rid, method=method, params=params, token=token)
