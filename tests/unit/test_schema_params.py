"""Params validation remembers valid flat params without loosening any check (R2.2)."""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest

from pebrel import schema
from pebrel.envelope import parse_request
from pebrel.errors import PebrelError
from pebrel.schema import unencodable_params, validate_params

pytestmark = pytest.mark.timeout(30)


def test_a_remembered_valid_request_does_not_let_a_bool_pass_as_an_integer() -> None:
    validate_params("pane.read", {"pane_id": 1, "lines": 1})
    validate_params("pane.read", {"pane_id": 1, "lines": 1})  # remembered
    with pytest.raises(PebrelError) as caught:
        validate_params("pane.read", {"pane_id": 1, "lines": True})
    assert caught.value.code == "invalid_params"


def test_one_off_params_keep_the_cache_small_and_a_polled_request_in_it() -> None:
    """#15: most params of a busy runtime never repeat (a command's text, an after_seq); they
    pass through a small cache and do not push out a request that is polled all along."""
    polled = {"pane_id": 1, "lines": 24}
    schema.load_schema()  # read once per process: not the cache's
    tracemalloc.start()
    try:
        for index in range(8 * schema._VALID_MAX):
            validate_params(
                "pane.run",
                {"window_id": 1, "pane_id": 1, "command": f"echo {index}", "timeout_ms": 30_000},
            )
            if index % 64 == 0:
                validate_params("pane.read", polled)
        held = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(True, schema.__file__)]
        )
    finally:
        tracemalloc.stop()
    assert len(schema._valid) <= schema._VALID_MAX
    assert ("pane.read", ("pane_id", int, 1), ("lines", int, 24)) in schema._valid
    assert sum(stat.size for stat in held.statistics("filename")) < 512 * 1024


def test_unhashable_params_are_still_checked_every_time() -> None:
    with pytest.raises(PebrelError):
        validate_params("pane.read", {"pane_id": [1]})
    with pytest.raises(PebrelError):
        validate_params("pane.read", {"pane_id": [1]})


def test_unknown_methods_are_never_remembered() -> None:
    for _ in range(2):
        with pytest.raises(PebrelError) as caught:
            validate_params("pane.nope", {"pane_id": 1})
        assert caught.value.code == "method_not_found"


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_non_finite_number_is_refused_by_name(value: float) -> None:
    """R2.3: NaN passes every range check (it compares false), so it is refused by itself."""
    with pytest.raises(PebrelError) as caught:
        validate_params("pane.resize", {"pane_id": 1, "ratio": value})
    assert caught.value.code == "invalid_params"
    assert caught.value.details["field"] == "ratio"
    assert "finite" in caught.value.message


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_request_line_with_a_non_finite_number_is_invalid(constant: str) -> None:
    """R2.2: NaN and Infinity are not JSON: the line is refused as it is parsed."""
    line = (
        b'{"protocol":"nebula.runtime","version":1,"id":1,"method":"pane.resize",'
        b'"params":{"pane_id":1,"ratio":' + constant.encode() + b"}}"
    )
    with pytest.raises(PebrelError) as caught:
        parse_request(line)
    assert caught.value.code == "invalid_request"
    assert caught.value.details == {"constant": constant}


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"pane_id": 2**64}, "pane_id", f"params.pane_id: must be <= {2**64 - 1}"),
        ({"pane_id": -(2**64)}, "pane_id", "params.pane_id: must be >= 1"),
        ({"pane_id": 1, "lines": 2**70}, "lines", "params.lines: must be <= 2000"),
        ({"pane_id": 1, "window_id": 2**64}, "window_id", "params.window_id: must be <="),
    ],
)
def test_params_the_links_cannot_carry_name_their_field(
    params: dict[str, Any], field: str, message: str
) -> None:
    """R2.3: a value beyond 64 bits is reported with its field and the range it must be in."""
    error = unencodable_params("pane.read", params)
    assert error.code == "invalid_params"
    assert error.details["field"] == field
    assert error.message.startswith(message)


def test_a_lone_surrogate_is_reported_by_field() -> None:
    error = unencodable_params("pane.prompt", {"pane_id": 1, "text": "a\ud800"})
    assert error.details["field"] == "text"
    assert "surrogate" in error.message


def test_an_id_or_method_the_links_cannot_carry_is_an_invalid_request() -> None:
    bad_id = unencodable_params("runtime.describe", {}, "\ud800")
    assert (bad_id.code, bad_id.message) == (
        "invalid_request",
        "id: must be valid Unicode (it holds a lone surrogate)",
    )
    assert unencodable_params("\ud800", {}).code == "invalid_request"
    assert unencodable_params("runtime.describe", {}, 2**64).message.startswith("id: must be <=")
