"""Params validation remembers valid flat params without loosening any check (R2.2)."""

from __future__ import annotations

import pytest

from pebrel.errors import PebrelError
from pebrel.schema import validate_params

pytestmark = pytest.mark.timeout(30)


def test_a_remembered_valid_request_does_not_let_a_bool_pass_as_an_integer() -> None:
    validate_params("pane.read", {"pane_id": 1, "lines": 1})
    validate_params("pane.read", {"pane_id": 1, "lines": 1})  # remembered
    with pytest.raises(PebrelError) as caught:
        validate_params("pane.read", {"pane_id": 1, "lines": True})
    assert caught.value.code == "invalid_params"


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
