"""Answers the frontend adapter gives again without asking the router (R4.4, R2.6).

A client polling ``pane.read`` or ``runtime.snapshot`` asks the same question many times, and
the router answers it from state it keeps (the pane's kept read, the revision's snapshot JSON)
until something changes. The router marks such an answer *reusable*; the adapter keeps it and
answers the same request (same method, same params) itself, one process hop and one scheduler
wake-up less, until the router sends ``AnswersStale``. The router sends that as soon as the
state or a pane's published screen (``workers/publisher.py``) changes, before the answer to
any request that made the change (the frontend link is one ordered stream), so a kept answer
is never older than what the router would have said. A revision drops every kept answer; a
pane's screen change only the reads of panes with its id. An answer that arrives after
``AnswersStale`` was made after the change and may be kept.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from pebrel.model import READ_DEFAULT_LINES

#: Methods whose answers the router may mark reusable.
REUSABLE_METHODS = frozenset({"pane.read", "runtime.snapshot"})
#: Answers kept at most (a client varying params must not grow the adapter without bound).
ANSWERS_KEPT = 256
#: Requests in flight with a slot, at most (a router that never answers must not either).
SLOTS_MAX = 4096
#: A kept read in use is reported to the router (AnswerUsed) at most this often.
USE_REPORT_S = 0.25

Key = tuple[str, str, tuple[tuple[str, Any, Any], ...]]


def request_key(principal: str, method: str, params: dict[str, Any]) -> Key | None:
    """What identifies a request's answer (whose request too: principals may one day see
    different answers); None for params not worth keeping (only ints, strings, booleans and
    null; ``true`` and ``1`` are different params)."""
    items = []
    for name, value in params.items():
        kind = type(value)
        if kind not in (int, str, bool, type(None)):
            return None
        items.append((name, kind, value))
    items.sort(key=lambda item: item[0])
    return (principal, method, tuple(items))


class AnswerCache:
    def __init__(self) -> None:
        self._kept: dict[Key, bytes] = {}
        self._slots: dict[int, Key] = {}
        self._next = itertools.count(1)
        self._reported: dict[Key, float] = {}

    def get(self, key: Key) -> bytes | None:
        """The kept answer's result JSON for a request with this key."""
        return self._kept.get(key)

    def report_use(self, key: Key) -> bool:
        """Whether the router should hear now that this kept read is in use (it goes on
        renewing the reads of that pane while they are)."""
        if key[1] != "pane.read":
            return False
        now = time.monotonic()
        if now - self._reported.get(key, float("-inf")) < USE_REPORT_S:
            return False
        if len(self._reported) >= ANSWERS_KEPT:
            self._reported.clear()
        self._reported[key] = now
        return True

    def slot(self, key: Key) -> int:
        """A slot for a request sent to the router (echoed with its answer)."""
        if len(self._slots) >= SLOTS_MAX:
            self._slots.clear()
        number = next(self._next)
        self._slots[number] = key
        return number

    def answered(self, slot: int, result_json: bytes | None) -> None:
        """The router answered the request in ``slot``; keep ``result_json`` if reusable."""
        key = self._slots.pop(slot, None)
        if key is None or result_json is None:
            return
        if len(self._kept) >= ANSWERS_KEPT:
            self._kept.clear()
        self._kept[key] = result_json

    def stale(self, window_id: int = 0, pane_id: int = 0) -> None:
        """Kept answers went stale: all (``pane_id`` 0), or every read that may be of this
        pane (its pane id, in its window or with no window named). Requests in flight are
        answered afresh."""
        if not pane_id:
            self._kept.clear()
            return
        for key in [key for key in self._kept if _may_read(key, window_id, pane_id)]:
            del self._kept[key]

    def renew(self, window_id: int, pane_id: int, results: dict[int, bytes]) -> None:
        """A pane's new answers to reads by line count: each replaces the kept reads that may
        be of this pane and ask for that many lines (a read naming no window that was kept
        resolved to this pane: another pane with its id would have made it ambiguous, and a
        new pane commits a revision); its other kept reads are stale."""
        for key in [key for key in self._kept if _may_read(key, window_id, pane_id)]:
            asked = next((value for name, _, value in key[2] if name == "lines"), None)
            result = results.get(READ_DEFAULT_LINES if asked is None else asked)
            if result is not None:
                self._kept[key] = result
            else:
                del self._kept[key]

    def __len__(self) -> int:
        return len(self._kept)


def _may_read(key: Key, window_id: int, pane_id: int) -> bool:
    if key[1] != "pane.read" or ("pane_id", int, pane_id) not in key[2]:
        return False
    return not any(name == "window_id" and value != window_id for name, _, value in key[2])
