"""The adapter compares tokens in constant time (hmac.compare_digest), whatever the given
token holds (docs/protocol.md "Security", #15)."""

from __future__ import annotations

import hmac
import inspect
from typing import Any

import pytest

from pebrel.router import adapter
from pebrel.router.adapter import Frontend

TOKEN = "ab" * 32


def test_token_ok_uses_compare_digest(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, Any]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    frontend = Frontend(-1, TOKEN, "0")
    assert frontend.token_ok(TOKEN)
    assert not frontend.token_ok(TOKEN[:-1] + "c")
    assert not frontend.token_ok("short")
    assert not frontend.token_ok("\ud800")
    assert not frontend.token_ok(None)
    assert not frontend.token_ok(7)
    # every string went through compare_digest, as bytes; non-strings never reach a comparison
    assert len(calls) == 4
    assert all(isinstance(a, bytes) and b == TOKEN.encode() for a, b in calls)


def test_no_other_comparison_of_the_token() -> None:
    """Nothing in the adapter compares the token with == (which returns at the first
    differing byte)."""
    source = inspect.getsource(adapter)
    assert "token ==" not in source and "== self.token" not in source
    assert "!= self.token" not in source and "token !=" not in source
