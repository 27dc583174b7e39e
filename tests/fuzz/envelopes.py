"""What every answer of a fuzzed request must be: one strict-JSON envelope, well formed, for a
pending request, whose error code the schema lists for its method (or `common_errors`)."""

from __future__ import annotations

import functools
import json
from typing import Any

from pebrel import PROTOCOL
from pebrel.schema import load_schema

OK_KEYS = {"protocol", "version", "id", "ok", "result"}


@functools.cache
def allowed_codes(method: str) -> frozenset[str]:
    schema = load_schema()
    methods = schema["methods"]
    listed = methods[method].get("errors", []) if method in methods else []
    return frozenset(listed) | frozenset(schema["common_errors"])


def _strict(constant: str) -> Any:
    raise AssertionError(f"{constant} in an answer: not JSON")


def parse(line: bytes) -> dict[str, Any]:
    """One answer line as strict JSON (no NaN or Infinity), which must be an object."""
    answer = json.loads(line, parse_constant=_strict)
    assert isinstance(answer, dict), answer
    return answer


def check(answer: dict[str, Any], pending: dict[Any, str]) -> str:
    """Check ``answer`` against the requests still ``pending`` (id -> method); pop and return
    the method it answers."""
    assert answer.get("protocol") == PROTOCOL and answer.get("version") == 1, answer
    request_id = answer.get("id")
    assert request_id in pending, f"an answer to no pending request: {answer}"
    method = pending.pop(request_id)
    if answer["ok"] is True:
        assert isinstance(answer["result"], dict) and set(answer) == OK_KEYS, answer
        return method
    assert answer["ok"] is False, answer
    error = answer["error"]
    assert set(error) == {"code", "message", "details"}, error
    assert isinstance(error["message"], str) and isinstance(error["details"], dict)
    assert error["code"] in allowed_codes(method), (method, error)
    # Listed in common_errors, but a fuzzed request that meets it found a defect.
    assert error["code"] != "internal_error", (method, error)
    return method
