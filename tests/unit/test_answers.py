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


def test_renewed_reads_replace_the_reads_of_that_pane_and_line_counts() -> None:
    cache = AnswerCache()
    keys = {
        "24 lines in window 1": request_key(
            "t", "pane.read", {"window_id": 1, "pane_id": 1, "lines": 24}
        ),
        "24 lines, no window": request_key("t", "pane.read", {"pane_id": 1, "lines": 24}),
        "default lines": request_key("t", "pane.read", {"window_id": 1, "pane_id": 1}),
        "5 lines": request_key("t", "pane.read", {"window_id": 1, "pane_id": 1, "lines": 5}),
        "24 lines in window 2": request_key(
            "t", "pane.read", {"window_id": 2, "pane_id": 1, "lines": 24}
        ),
        "snapshot": request_key("t", "runtime.snapshot", {}),
    }
    for key in keys.values():
        assert key is not None
        cache.answered(cache.slot(key), b"old")
    cache.renew(1, 1, {24: b"new", 7: b"seven"})
    now = {name: cache.get(key) for name, key in keys.items() if key is not None}
    assert now == {
        "24 lines in window 1": b"new",
        "24 lines, no window": b"new",
        "default lines": None,
        "5 lines": None,
        "24 lines in window 2": b"old",
        "snapshot": b"old",
    }
    cache.renew(1, 1, {120: b"default"})  # a renewal never adds a read nobody kept
    assert cache.get(keys["default lines"]) is None  # type: ignore[arg-type]


def test_use_of_a_kept_read_is_reported_at_most_every_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(answers, "USE_REPORT_S", 60.0)
    cache = AnswerCache()
    read = request_key("t", "pane.read", {"pane_id": 1})
    other = request_key("t", "pane.read", {"pane_id": 2})
    snapshot = request_key("t", "runtime.snapshot", {})
    assert read is not None and other is not None and snapshot is not None
    assert cache.report_use(read) and not cache.report_use(read)
    assert cache.report_use(other)
    assert not cache.report_use(snapshot)  # nothing to keep current for a snapshot
    monkeypatch.setattr(answers, "USE_REPORT_S", 0.0)
    assert cache.report_use(read)
