"""The adapter's kept answers (router/answers.py): keys, slots and staleness (R4.4, R2.6).

End to end (a change is seen right after the request that made it, repeats never reach the
router) in ``tests/e2e/test_answers_kept.py``."""

from __future__ import annotations

import pytest

from pebrel.router import answers
from pebrel.router.answers import AnswerCache, request_key

pytestmark = pytest.mark.timeout(10)


def test_keys_tell_types_apart_and_ignore_order() -> None:
    assert request_key("t", "pane.read", {"pane_id": 1, "lines": 1}) != request_key(
        "t", "pane.read", {"pane_id": 1, "lines": True}
    )
    assert request_key("t", "pane.read", {"pane_id": 1, "lines": 5}) == request_key(
        "t", "pane.read", {"lines": 5, "pane_id": 1}
    )
    assert request_key("t", "pane.read", {"pane_id": 1}) != request_key("t", "runtime.snapshot", {})
    assert request_key("t", "runtime.snapshot", {}) != request_key("u", "runtime.snapshot", {})
    for odd in (1.0, [1], {"a": 1}):
        assert request_key("t", "pane.read", {"pane_id": odd}) is None


def test_an_answer_is_kept_only_when_reusable_and_until_stale() -> None:
    cache = AnswerCache()
    key = request_key("t", "runtime.snapshot", {})
    assert key is not None
    first = cache.slot(key)
    cache.answered(first, None)  # not reusable
    assert cache.get(key) is None
    second = cache.slot(key)
    cache.answered(second, b'{"revision":3}')
    assert cache.get(key) == b'{"revision":3}'
    third = cache.slot(key)  # in flight while the state changes
    cache.stale()
    assert cache.get(key) is None
    cache.answered(third, b'{"revision":4}')  # made after the change: may be kept
    assert cache.get(key) == b'{"revision":4}'
    cache.answered(third, b'{"revision":2}')  # a slot answers once
    assert cache.get(key) == b'{"revision":4}'


def test_kept_answers_and_slots_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(answers, "ANSWERS_KEPT", 3)
    monkeypatch.setattr(answers, "SLOTS_MAX", 5)
    cache = AnswerCache()
    for lines in range(10):
        key = request_key("t", "pane.read", {"pane_id": 1, "lines": lines})
        assert key is not None
        cache.answered(cache.slot(key), b"{}")
        assert len(cache) <= 3
    for lines in range(10):
        key = request_key("t", "pane.read", {"pane_id": 1, "lines": lines})
        assert key is not None
        cache.slot(key)  # never answered
    assert len(cache._slots) <= 5


def test_a_screen_change_drops_only_the_reads_that_may_be_of_that_pane() -> None:
    cache = AnswerCache()
    keys = {
        "read 1": request_key("t", "pane.read", {"pane_id": 1, "lines": 5}),
        "read 1 in window 1": request_key("t", "pane.read", {"window_id": 1, "pane_id": 1}),
        "read 1 in window 2": request_key("t", "pane.read", {"window_id": 2, "pane_id": 1}),
        "read 2 in window 1": request_key("t", "pane.read", {"window_id": 1, "pane_id": 2}),
        "snapshot": request_key("t", "runtime.snapshot", {}),
    }
    for key in keys.values():
        assert key is not None
        cache.answered(cache.slot(key), b"{}")
    cache.stale(window_id=1, pane_id=1)
    kept = {name for name, key in keys.items() if key is not None and cache.get(key)}
    assert kept == {"read 1 in window 2", "read 2 in window 1", "snapshot"}
    cache.stale()
    assert len(cache) == 0
