"""Startup input conditions: the first delivery of a launch waits for its screen (I4.4, #18).

A launch profile's `startupInput` (`allOf` texts that must all be on the screen, `noneOf`
texts that must all be absent, `stableMs`, `timeoutMs`) is copied into the session's launch
snapshot; each real launch (create, or a restore that types its command) sets the session's
`startup_input` to `{state: pending, deadline, matched_since: null, observed_at: null}`.

While a message to the session waits (collab/deliverer.py), `Watch.check` reads the pane's
**visible screen** (`pane.read` with `screen`, never its history): rows joined where they
soft-wrap, separated by newlines, runs of horizontal whitespace folded to one space, texts
compared case-sensitively as they are (no patterns). The first matching observation sets
`matched_since`; a later one at least `stableMs` after it makes the state `observed`
(`observed_at`), and the delivery may write. Any observation that does not match, or that
could not be made (the runtime did not answer), clears `matched_since`: the condition holds
only when seen twice, `stableMs` apart, with no mismatch between. Past the deadline an
unobserved condition is `timed_out`: the message keeps waiting (never a blind write) and the
watch keeps looking, so a screen that matches later still turns it `observed`.

`matched_since` is kept in memory and mirrored in the record; a service restart forgets it
(`forget_matches`). Each state change appends `session.startup_input` with the record. The
condition gates only the first delivery of a launch: once `observed`, deliveries go as usual,
and the matching screen stands for the agent's readiness only for the generation it was seen
with (a CLI restarted by hand in the pane waits for its own readiness again).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Final

from pebrel.collab import refs
from pebrel.collab.online import RowLike, session_record, startup_input
from pebrel.collab.policy import fold
from pebrel.collab.store import Store, Tx, dumps, now_ms
from pebrel.collab.terminal import Terminal, TerminalUnavailable
from pebrel.errors import CollabCode, PebrelError

logger = logging.getLogger(__name__)

PENDING: Final = "pending"
OBSERVED: Final = "observed"
TIMED_OUT: Final = "timed_out"
#: How often a waiting delivery looks at the screen (a condition needs two looks stableMs
#: apart, the shortest 500 ms).
POLL_S: Final = 0.2
#: The waiting reason a delivery shows for each state (the spec's diagnostic codes).
WAITING: Final = {
    PENDING: str(CollabCode.SESSION_STARTUP_INPUT_PENDING),
    TIMED_OUT: str(CollabCode.SESSION_STARTUP_INPUT_TIMEOUT),
}


def visible_text(read: Mapping[str, Any]) -> str:
    """A `pane.read` with `screen` as one text: soft-wrapped rows joined, rows separated by
    newlines, whitespace folded."""
    rows: list[str] = list(read.get("lines") or [])
    wrapped: list[bool] = list(read.get("wrapped") or [])
    out: list[str] = []
    for i, row in enumerate(rows):
        out.append(row if i < len(wrapped) and wrapped[i] else row.rstrip() + "\n")
    return fold("".join(out))


def matches(condition: Mapping[str, Any], text: str) -> bool:
    return all(fold(t) in text for t in condition["allOf"]) and not any(
        fold(t) in text for t in condition.get("noneOf", ())
    )


def pending(condition: Mapping[str, Any], now: int) -> str:
    """A launch's fresh `startup_input` state (JSON) for ``condition``."""
    return dumps(
        {
            "state": PENDING,
            "deadline": now + int(condition["timeoutMs"]),
            "matched_since": None,
            "observed_at": None,
        }
    )


def condition_of(db: Store | Tx, session_id: str) -> dict[str, Any] | None:
    row = refs.one(
        db, "SELECT startup_input FROM launch_snapshots WHERE session_id = ?", (session_id,)
    )
    if row is None or not row["startup_input"]:
        return None
    parsed: dict[str, Any] = json.loads(row["startup_input"])
    return parsed


def forget_matches(store: Store) -> int:
    """At start: a restart clears every match not yet confirmed (I4.4)."""
    rows = [
        r
        for r in store.read(
            "SELECT id, startup_input FROM sessions WHERE startup_input IS NOT NULL"
        )
        if (state := startup_input(r)) is not None and state.get("matched_since") is not None
    ]
    if rows:
        with store.write() as tx:
            for row in rows:
                state = startup_input(row)
                assert state is not None
                tx.execute(
                    "UPDATE sessions SET startup_input = ? WHERE id = ?",
                    (dumps({**state, "matched_since": None}), row["id"]),
                )
    return len(rows)


def expire(store: Store, now: int | None = None) -> int:
    """Conditions past their deadline without a waiting delivery to look: `timed_out` (a later
    delivery still looks, and a match still releases it). Returns how many."""
    when = now_ms() if now is None else now
    late = [
        (row["id"], state)
        for row in store.read(
            "SELECT id, startup_input FROM sessions WHERE startup_input IS NOT NULL"
        )
        if (state := startup_input(row)) is not None
        and state["state"] == PENDING
        and int(state["deadline"]) <= when
    ]
    for session_id, state in late:
        Watch.write(store, str(session_id), {**state, "state": TIMED_OUT}, True)
    return len(late)


class Watch:
    """The deliverer's looks at waiting sessions' screens."""

    def __init__(self, store: Store, terminal: Terminal) -> None:
        self.store = store
        self.terminal = terminal
        #: When each session's screen began to match, as observed by this process.
        self.since: dict[str, int] = {}
        #: The agent generation each session's condition was observed with (memory only: after
        #: a restart, or for a later generation, the agent's own readiness gates as usual).
        self.released: dict[str, int] = {}

    async def check(
        self, row: RowLike, pane: Mapping[str, Any], generation: int | None = None
    ) -> str | None:
        """None when the session's condition is observed (or it has none); else the waiting
        reason, after one more look at the screen. ``generation``: the agent's, noted when the
        condition is observed (`released`)."""
        state = startup_input(row)
        if state is None or state["state"] == OBSERVED:
            return None
        session_id = str(row["id"])
        condition = condition_of(self.store, session_id)
        if condition is None:
            return None
        try:
            read = await self.terminal.call(
                "pane.read",
                {"window_id": pane["window_id"], "pane_id": pane["pane_id"], "screen": True},
            )
            seen = matches(condition, visible_text(read))
        except (PebrelError, TerminalUnavailable) as exc:
            logger.info("startup screen of %s not read: %s", session_id, exc)
            seen = False  # no look is no match: never released on a failed observation
        now = now_ms()
        change: dict[str, Any] = {}
        if not seen:
            self.since.pop(session_id, None)
            if state.get("matched_since") is not None:
                change["matched_since"] = None
        else:
            since = self.since.setdefault(session_id, now)
            if state.get("matched_since") != since:
                change["matched_since"] = since
            if now - since >= int(condition["stableMs"]):
                change.update(state=OBSERVED, observed_at=now)
        late = now >= int(state["deadline"])
        if state["state"] == PENDING and change.get("state") != OBSERVED and late:
            change["state"] = TIMED_OUT
        if change:
            self.write(self.store, session_id, {**state, **change}, "state" in change)
        final = change.get("state", state["state"])
        if final == OBSERVED:
            self.since.pop(session_id, None)
            if generation is not None:
                self.released[session_id] = generation
            return None
        return WAITING[str(final)]

    @staticmethod
    def write(store: Store, session_id: str, state: dict[str, Any], announce: bool) -> None:
        with store.write() as tx:
            tx.execute(
                "UPDATE sessions SET startup_input = ?, updated_at = ? WHERE id = ?",
                (dumps(state), tx.now, session_id),
            )
            row = refs.session(tx, session_id)
            if announce and row["group_id"] is not None:
                record = session_record(row, None)
                ev = tx.event(str(row["group_id"]), "session.startup_input", {"session": record})
                tx.fact("session_events", ev, {"session_id": session_id})
