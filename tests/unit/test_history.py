"""workers/history.History: the scrollback keeps its count of soft-wrapped rows exact through
appends, extends past maxlen and clears (a read's history_available comes from it, #6)."""

from __future__ import annotations

import random
from collections import deque

import pytest

from pebrel.workers.history import History, Row

pytestmark = pytest.mark.timeout(60)


def _logical(rows: list[Row]) -> int:
    if not rows:
        return 0
    return len(rows) - sum(flag for _, flag in rows) + (1 if rows[-1][1] else 0)


@pytest.mark.parametrize("maxlen", [0, 1, 2, 7, 100])
def test_random_appends_extends_and_clears_match_a_plain_deque(maxlen: int) -> None:
    rng = random.Random(maxlen)
    history = History(maxlen)
    reference: deque[Row] = deque(maxlen=maxlen)
    for step in range(3000):
        choice = rng.random()
        if choice < 0.5:
            row = (f"r{step}", rng.random() < 0.4)
            history.append(row)
            reference.append(row)
        elif choice < 0.97:
            rows = [(f"e{step}.{i}", rng.random() < 0.4) for i in range(rng.randrange(0, 250))]
            history.extend(rows if rng.random() < 0.5 else iter(rows))
            reference.extend(rows)
        else:
            history.clear()
            reference.clear()
        assert list(history) == list(reference)
        assert history.wrapped == sum(flag for _, flag in reference)
        assert history.logical_lines() == _logical(list(reference))


def test_a_full_scrollback_read_does_not_walk_the_rows() -> None:
    """The count is kept, not recomputed: a read of a full 10,000-row scrollback is O(1)."""
    history = History(10_000)
    history.extend([("x", i % 3 == 0) for i in range(25_000)])
    assert len(history) == 10_000
    assert history.wrapped == sum(flag for _, flag in history)
    assert history.logical_lines() == _logical(list(history))
