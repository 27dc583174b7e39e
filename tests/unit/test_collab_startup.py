"""The startup input watch, look by look (I4.4, #18; collab/startup.py).

A real Store with one session row and its launch snapshot; a stand-in terminal answers
`pane.read` with whatever screen the test sets (or fails); time is moved by hand.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from pebrel.collab import startup
from pebrel.collab.store import Store, dumps
from pebrel.errors import ErrorCode, PebrelError

pytestmark = pytest.mark.timeout(30)

CONDITION = {
    "allOf": ["model:  x", "❯"],
    "noneOf": ["loading"],
    "stableMs": 1000,
    "timeoutMs": 5000,
}
PANE = {"window_id": 1, "pane_id": 1}


def screen(*rows: str, wrapped: list[bool] | None = None) -> dict[str, Any]:
    return {"lines": list(rows), "wrapped": wrapped or [False] * len(rows)}


class Screen:
    def __init__(self) -> None:
        self.read: dict[str, Any] | None = screen("")

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert method == "pane.read" and params["screen"] is True
        if self.read is None:
            raise PebrelError(ErrorCode.TARGET_NOT_FOUND, "gone")
        return self.read

    def snapshot(self) -> dict[str, Any] | None:
        return None


class Clock:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 1_000_000
        monkeypatch.setattr(startup, "now_ms", lambda: self.now)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    found = Store(tmp_path)
    with found.write() as tx:
        tx.insert("groups", {"id": "grp_1", "name": "g", "last_sequence": 0, "created_at": 0})
        tx.insert(
            "sessions",
            {
                "id": "ses_1",
                "group_id": "grp_1",
                "agent_id": "ag_1",
                "generation": 1,
                "agent_kind": "claude",
                "state": "ready",
                "terminal_binding": dumps({}),
                "startup_input": startup.pending(CONDITION, 1_000_000),
                "created_at": 0,
                "updated_at": 0,
            },
        )
        tx.insert(
            "launch_snapshots",
            {
                "session_id": "ses_1",
                "executable": "/x",
                "argv": "[]",
                "cwd": "/",
                "resume_argv": "[]",
                "startup_input": dumps(CONDITION),
            },
        )
    return found


def look(store: Store, watch: startup.Watch) -> str | None:
    row = store.read("SELECT * FROM sessions WHERE id = 'ses_1'")[0]
    return asyncio.run(watch.check(row, PANE))


def state(store: Store) -> dict[str, Any]:
    row = store.read("SELECT startup_input FROM sessions WHERE id = 'ses_1'")[0]
    parsed: dict[str, Any] = json.loads(row[0])
    return parsed


def test_visible_text_joins_soft_wraps_and_folds_blanks() -> None:
    text = startup.visible_text(screen("model:   x  ", "abc", "de  ", wrapped=[False, True, False]))
    assert text == "model: x\nabcde\n"
    assert startup.matches({"allOf": ["model: x", "abcde"]}, text)
    assert not startup.matches({"allOf": ["model: x"], "noneOf": ["bcd"]}, text)
    assert not startup.matches({"allOf": ["MODEL: x"]}, text)  # case-sensitive


def test_released_only_after_two_matches_stable_ms_apart(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock, term = Clock(monkeypatch), Screen()
    watch = startup.Watch(store, term)
    pending = "SESSION_STARTUP_INPUT_PENDING"
    term.read = screen("model: loading")
    assert look(store, watch) == pending and state(store)["matched_since"] is None
    term.read = screen("model: x", "❯")
    assert look(store, watch) == pending and state(store)["matched_since"] == clock.now
    clock.now += 600
    term.read = screen("model: x", "loading")  # a mismatch restarts the timer
    assert look(store, watch) == pending and state(store)["matched_since"] is None
    term.read = screen("model: x", "❯")
    assert look(store, watch) == pending
    clock.now += 999
    assert look(store, watch) == pending
    clock.now += 1
    assert look(store, watch) is None
    assert state(store)["state"] == "observed" and state(store)["observed_at"] == clock.now
    term.read = screen("loading")  # observed stays observed for this launch
    assert look(store, watch) is None


def test_a_failed_look_is_no_match_and_the_deadline_times_out_without_release(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock, term = Clock(monkeypatch), Screen()
    watch = startup.Watch(store, term)
    term.read = screen("model: x", "❯")
    look(store, watch)
    clock.now += 800
    term.read = None  # the runtime could not read the screen
    assert look(store, watch) == "SESSION_STARTUP_INPUT_PENDING"
    assert state(store)["matched_since"] is None
    clock.now = 1_000_000 + 5000
    term.read = screen("nothing yet")
    assert look(store, watch) == "SESSION_STARTUP_INPUT_TIMEOUT"
    assert state(store)["state"] == "timed_out"
    term.read = screen("model: x", "❯")  # a later match still releases it, twice apart
    assert look(store, watch) == "SESSION_STARTUP_INPUT_TIMEOUT"
    clock.now += 1000
    assert look(store, watch) is None and state(store)["state"] == "observed"
    kinds = [r[0] for r in store.read("SELECT kind FROM journal ORDER BY sequence")]
    assert kinds == ["session.startup_input", "session.startup_input"]


def test_a_restart_forgets_unconfirmed_matches(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    Clock(monkeypatch)
    term = Screen()
    term.read = screen("model: x", "❯")
    look(store, startup.Watch(store, term))
    assert state(store)["matched_since"] is not None
    assert startup.forget_matches(store) == 1
    assert state(store)["matched_since"] is None and state(store)["state"] == "pending"
