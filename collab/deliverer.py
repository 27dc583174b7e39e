"""The delivery engine: queued messages written into their session's agent pane (issue #16
item 4; I3.4).

One worker per session with queued messages writes them one at a time, in queue order (a
message that waits holds back the later ones to the same session). For the head message:

- **Gating** (nothing written, no stage row; the reason is kept in memory and shown as the
  receipt's `waiting_reason`): the session must not be `starting`, `restoring` or `failed`; it
  must be online (collab/online.py); its agent must be `ready` (the runtime's readiness is per
  generation and stays true, so this waits only at the start of a generation: the first
  delivery to a session and the first after its CLI restarted); and nothing is typed while
  the agent's state is `attention` or `waiting_input`. Busy/idle does not gate. A session
  whose launch has a startup input condition waits for its screen instead of `ready`
  (collab/startup.py; looked at every `startup.POLL_S`). The snapshot
  decides cheaply; right before writing, `agent.get` confirms it and gives the generation
  current now, to which the input is bound.
- **Writing**: a `writing` stage row is committed, then one runtime call puts the whole text
  in as one input: `agent.prompt` for a single line of plain text (typed, Enter once the TUI
  drew it), `agent.paste` for anything else (a bracketed paste keeps newlines inside one
  input, then Enter). Then `delivered` (written to the terminal, never "read") with the
  answer's `written`/`submitted`.
- **Failures**: the runtime answered an error, nothing was written (`agent_replaced`,
  `agent_exited`, `input_in_progress`, ...): `failed` with its message and code, then `queued`
  again with one more try, after a backoff (0.5 s doubling, at most 10 s), at most
  `MAX_TRIES` tries. `invalid_params` is never retried (the text can never go). When the
  outcome is unknown (the router link was lost, a timeout, an error saying some bytes were
  written): `failed` "outcome unknown" (or "written in part"), never retried by itself.
- **Removed**: a recipient no longer in the message's group gets it `failed`
  "removed_from_group" for good (an explicit failure record, never a silent drop).
- **Recovery** (`start`): a message whose last stage is `writing` was being written when the
  service stopped: `failed` "outcome unknown: ...", never retried by itself.

Workers wake on `kick()` (new messages committed), on every snapshot, and at least every
`RECHECK_S` while gated; every stage row goes through `delivery.append_stage` (one event each).
Session tracking (collab/tracking.py) runs first on each snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pebrel.collab import delivery, startup, tracking
from pebrel.collab.delivery import (
    DELIVERED,
    FAILED,
    QUEUED,
    REMOVED_FROM_GROUP,
    WRITING,
    latest_stages,
)
from pebrel.collab.online import Seen, reach, startup_input
from pebrel.collab.store import Store
from pebrel.collab.terminal import Terminal, TerminalUnavailable
from pebrel.collab.tracking import Tracker
from pebrel.errors import PebrelError

logger = logging.getLogger(__name__)

MAX_TRIES: Final = 5
BACKOFF_FIRST_S: Final = 0.5
BACKOFF_MAX_S: Final = 10.0
#: A runtime call that has not answered by then has an unknown outcome.
CALL_TIMEOUT_S: Final = 60.0
#: A gated message is looked at again at least this often (snapshots wake it sooner).
RECHECK_S: Final = 5.0
#: How often session launches are checked against their binding deadline (I4.3).
EXPIRY_CHECK_S: Final = 1.0
OUTCOME_UNKNOWN: Final = "outcome unknown"
STOPPED_WHILE_WRITING: Final = "outcome unknown: the collab service stopped while writing"
#: Runtime error codes after which whether the text went in is unknown.
UNKNOWN_CODES: Final = frozenset(
    {"runtime_timeout", "timeout", "internal_error", "client_timeout", "runtime_unavailable"}
)
#: Runtime error codes no retry can cure.
FINAL_CODES: Final = frozenset({"invalid_params"})
#: Agent states during which nothing is typed: a turn in progress (`running`: the text waits
#: for the turn to end, as INTEGRATION.md I3 says), and a prompt on screen (`attention`,
#: `waiting_input`: typing would answer it).
GATED_STATES: Final = frozenset({"running", "attention", "waiting_input"})
#: Session states that are never written to (the message waits).
UNWRITABLE: Final = frozenset({"starting", "restoring", "failed"})
#: The one-line limit of agent.prompt (pebrel.model.MAX_PROMPT_BYTES).
PROMPT_MAX_BYTES: Final = 32 * 1024


@dataclass(frozen=True, slots=True)
class Head:
    """A session's next queued message, as its latest stage row left it."""

    message_id: str
    delivery_id: str
    group_id: str
    task_id: str | None
    attempt_id: str | None
    content: str
    tries: int

    def stage(self, stage: str, reason: str | None, tries: int, **facts: Any) -> dict[str, Any]:
        """`append_stage` keyword arguments for this message."""
        return {
            "group_id": self.group_id,
            "delivery_id": self.delivery_id,
            "message_id": self.message_id,
            "task_id": self.task_id,
            "attempt_id": self.attempt_id,
            "stage": stage,
            "reason": reason,
            "tries": tries,
            **facts,
        }


def head_of(row: Mapping[str, Any]) -> Head:
    return Head(
        row["message_id"],
        row["delivery_id"],
        row["group_id"],
        row["task_id"],
        row["attempt_id"],
        row["content"],
        row["try"],
    )


def input_call(agent_id: str, generation: int, text: str) -> tuple[str, dict[str, Any]]:
    """The runtime method that puts ``text`` in as one input, and its params."""
    one_line = len(text.encode("utf-8", errors="surrogatepass")) <= PROMPT_MAX_BYTES and not any(
        unicodedata.category(char) in ("Cc", "Cs") for char in text
    )
    method = "agent.prompt" if one_line else "agent.paste"
    return method, {"agent": agent_id, "generation": generation, "text": text, "submit": True}


def agent_gate(agent: Mapping[str, Any], screen_gated: bool = False) -> str | None:
    """Why nothing may be typed into this agent now (None: it may). A session whose launch
    has a startup condition waits for its screen instead of the agent's `ready`."""
    if agent.get("state") in GATED_STATES:
        return f"agent_{agent['state']}"
    if not screen_gated and not agent.get("ready"):
        return "agent_not_ready"
    return None


def recover(store: Store) -> int:
    """Fail every message left `writing` by a stopped service; returns how many."""
    rows = latest_stages(store, "d.stage = ?", (WRITING,))
    if rows:
        with store.write() as tx:
            for row in rows:
                head = head_of(row)
                delivery.append_stage(tx, **head.stage(FAILED, STOPPED_WHILE_WRITING, head.tries))
    return len(rows)


class Deliverer:
    """Implements the handlers' `Deliveries` (kick) and the engine's life (start, close)."""

    def __init__(
        self,
        store: Store,
        terminal: Terminal,
        *,
        max_tries: int = MAX_TRIES,
        backoff_s: float = BACKOFF_FIRST_S,
        call_timeout_s: float = CALL_TIMEOUT_S,
        recheck_s: float = RECHECK_S,
    ) -> None:
        self.store = store
        self.terminal = terminal
        self.tracker = Tracker(store)
        self.watch = startup.Watch(store, terminal)
        self.max_tries = max_tries
        self.backoff_s = backoff_s
        self.call_timeout_s = call_timeout_s
        self.recheck_s = recheck_s
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._wake: dict[str, asyncio.Event] = {}
        #: Why a queued message waits (message id -> reason); memory only.
        self._waiting: dict[str, str] = {}
        #: When a requeued message may be tried again (loop time).
        self._not_before: dict[str, float] = {}
        self._seen_rowid = 0
        self._running = False
        self._expiry: asyncio.Task[None] | None = None

    # -- life -----------------------------------------------------------------------------------
    async def start(self) -> None:
        """Recover interrupted writes, then deliver what is queued."""
        failed = recover(self.store)
        if failed:
            logger.warning("%d deliveries were being written when the service stopped", failed)
        startup.forget_matches(self.store)
        launches = tracking.recover_launches(self.store)
        if launches:
            logger.warning("%d session launches were in flight when the service stopped", launches)
        self._running = True
        self._expiry = asyncio.get_running_loop().create_task(
            self._expire(), context=contextvars.Context()
        )
        top = self.store.read("SELECT coalesce(max(rowid), 0) FROM messages")
        self._seen_rowid = int(top[0][0])
        for row in latest_stages(self.store, "d.stage = ?", (QUEUED,)):
            self._ensure(row["to_session"])

    def close(self) -> None:
        """Stop every worker; a write in flight stays `writing` (the next start fails it)."""
        self._running = False
        for task in self._workers.values():
            task.cancel()
        if self._expiry is not None:
            self._expiry.cancel()

    async def wait_closed(self) -> None:
        """After `close`: until every worker has stopped."""
        waited = [*self._workers.values(), *([self._expiry] if self._expiry else [])]
        await asyncio.gather(*waited, return_exceptions=True)

    async def _expire(self) -> None:
        """Once a second: fail the session launches past their binding deadline, and time out
        the startup conditions past theirs."""
        while True:
            await asyncio.sleep(EXPIRY_CHECK_S)
            try:
                tracking.expire(self.store)
                startup.expire(self.store)
            except PebrelError as exc:
                logger.warning("session deadlines could not commit: %s", exc.message)

    def kick(self) -> None:
        """New messages were committed: start or wake their sessions' workers.

        A write's request kicks, but the engine reads only what is committed: in its own
        context, so that an open batch (other requests' writes) is committed first, never
        counted before it is (collab/store.py)."""
        contextvars.Context().run(self._kick)

    def _kick(self) -> None:
        if not self._running:
            return
        rows = self.store.read(
            "SELECT rowid, to_session FROM messages WHERE rowid > ? ORDER BY rowid",
            (self._seen_rowid,),
        )
        for row in rows:
            self._seen_rowid = max(self._seen_rowid, int(row[0]))
            self._ensure(row[1])

    def on_snapshot(self, snapshot: Mapping[str, Any]) -> None:
        """Track the sessions, then let every waiting message look again (and pick up any
        message committed without a kick: one indexed range read)."""
        try:
            self.tracker.on_snapshot(snapshot)
        except PebrelError as exc:
            logger.warning("session tracking could not commit: %s", exc.message)
        for wake in self._wake.values():
            wake.set()
        self.kick()

    def wants_snapshots(self) -> bool:
        """Whether the service needs the runtime's snapshots (sessions to track, or messages
        waiting to be written)."""
        return bool(self._workers) or self.tracker.has_sessions()

    def waiting_reason(self, message_id: str) -> str | None:
        return self._waiting.get(message_id)

    # -- one session ----------------------------------------------------------------------------
    def _ensure(self, session_id: str) -> None:
        wake = self._wake.get(session_id)
        if wake is not None:
            wake.set()
            return
        self._wake[session_id] = asyncio.Event()
        # Its own context: not the request's that kicked it (its reads must see only commits).
        task = asyncio.get_running_loop().create_task(
            self._run(session_id), context=contextvars.Context()
        )
        self._workers[session_id] = task

    async def _run(self, session_id: str) -> None:
        wake = self._wake[session_id]
        try:
            while self._running:
                wake.clear()
                rows = latest_stages(
                    self.store, "m.to_session = ? AND d.stage = ?", (session_id, QUEUED)
                )
                if not rows:
                    return
                try:
                    await self._step(session_id, head_of(rows[0]), wake)
                except PebrelError as exc:  # the database could not commit: try again later
                    logger.warning("delivery to %s: %s", session_id, exc.message)
                    await asyncio.sleep(BACKOFF_MAX_S)
                except Exception:  # the worker's boundary: log it, never die silently
                    logger.exception("delivery to %s failed unexpectedly", session_id)
                    await asyncio.sleep(BACKOFF_MAX_S)
        finally:
            if self._workers.get(session_id) is asyncio.current_task():
                del self._workers[session_id]
                del self._wake[session_id]

    async def _step(self, session_id: str, head: Head, wake: asyncio.Event) -> None:
        """One look at the session's head message: wait, or write it."""
        delay = self._not_before.get(head.message_id, 0.0) - asyncio.get_running_loop().time()
        if delay > 0:
            self._waiting[head.message_id] = "retry_backoff"
            await asyncio.sleep(delay)
            return
        reason, agent = await self._gate(session_id, head.group_id)
        if reason == REMOVED_FROM_GROUP:
            self._waiting.pop(head.message_id, None)
            self._finish(head, REMOVED_FROM_GROUP)
            return
        if agent is None:
            self._waiting[head.message_id] = reason or "unknown"
            # A screen condition needs looks stableMs apart: look again soon, not on wake-ups.
            if reason in startup.WAITING.values():
                await asyncio.sleep(startup.POLL_S)
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), self.recheck_s)
            return
        self._waiting.pop(head.message_id, None)
        self._not_before.pop(head.message_id, None)
        await self._write(head, agent)

    async def _gate(
        self, session_id: str, group_id: str
    ) -> tuple[str | None, dict[str, Any] | None]:
        """Why the session cannot be written to now, or the agent record to write to."""
        rows = self.store.read("SELECT * FROM sessions WHERE id = ?", (session_id,))
        if not rows:
            return "session_not_found", None
        row = dict(rows[0])
        if row["group_id"] != group_id:
            return REMOVED_FROM_GROUP, None
        if row["state"] in UNWRITABLE:
            return f"session_{row['state']}", None
        snapshot = self.terminal.snapshot()
        seen = Seen.of(snapshot) if snapshot is not None else None
        online, why = reach(row, seen)
        if not online or seen is None:
            return why, None
        found = seen.agents.get(row["agent_id"])
        if found is None:
            return "pane_gone", None
        if startup_input(row) is not None:  # the launch's screen condition (I4.4)
            why = await self.watch.check(row, found[0], found[1].get("generation"))
            if why is not None:
                return why, None
        # A screen seen matching stands for the readiness of the generation it was seen with.
        released = self.watch.released.get(session_id)
        why = agent_gate(found[1], released == found[1].get("generation"))
        if why is not None:
            return why, None
        try:  # the snapshot may be 100 ms old: the runtime's own record, right before writing
            agent = await asyncio.wait_for(
                self.terminal.call("agent.get", {"agent": row["agent_id"]}), self.call_timeout_s
            )
        except PebrelError as exc:
            return "agent_exited" if str(exc.code) == "target_not_found" else str(exc.code), None
        except (TerminalUnavailable, TimeoutError):
            return "runtime_unavailable", None
        if agent.get("status") != "active":
            return "agent_exited", None
        why = agent_gate(agent, released is not None and released == agent.get("generation"))
        return (why, None) if why is not None else (None, agent)

    async def _write(self, head: Head, agent: Mapping[str, Any]) -> None:
        method, params = input_call(agent["agent_id"], agent["generation"], head.content)
        with self.store.write() as tx:
            latest = tx.execute(
                "SELECT stage, try FROM delivery_stages WHERE message_id = ?"
                " ORDER BY rowid DESC LIMIT 1",
                (head.message_id,),
            ).fetchone()
            if latest is None or tuple(latest) != (QUEUED, head.tries):
                return  # it moved on meanwhile
            delivery.append_stage(tx, **head.stage(WRITING, None, head.tries))
        try:
            result = await asyncio.wait_for(self.terminal.call(method, params), self.call_timeout_s)
        except PebrelError as exc:
            self._refused(head, exc)
            return
        except (TerminalUnavailable, TimeoutError):
            self._finish(head, OUTCOME_UNKNOWN)
            return
        with self.store.write() as tx:
            facts = {"written": bool(result.get("written")), "submitted": result.get("submitted")}
            delivery.append_stage(tx, **head.stage(DELIVERED, None, head.tries, **facts))
        logger.info("delivered %s (%s, try %d)", head.message_id, method, head.tries)

    def _finish(self, head: Head, reason: str, code: str | None = None) -> None:
        """`failed` for good: never retried by itself."""
        with self.store.write() as tx:
            delivery.append_stage(tx, **head.stage(FAILED, reason, head.tries, code=code))
        logger.warning("delivery of %s failed: %s", head.message_id, reason)

    def _refused(self, head: Head, exc: PebrelError) -> None:
        """The runtime answered an error: requeue unless the outcome is unknown or no retry
        can help (or the tries are used up)."""
        code = str(exc.code)
        if exc.details.get("written"):
            self._finish(head, f"written in part: {exc.message}", code)
            return
        if code in UNKNOWN_CODES:
            self._finish(head, OUTCOME_UNKNOWN, code)
            return
        if code in FINAL_CODES or head.tries + 1 >= self.max_tries:
            self._finish(head, exc.message, code)
            return
        with self.store.write() as tx:
            delivery.append_stage(tx, **head.stage(FAILED, exc.message, head.tries, code=code))
            delivery.append_stage(tx, **head.stage(QUEUED, f"retry after {code}", head.tries + 1))
        delay = min(self.backoff_s * 2**head.tries, BACKOFF_MAX_S)
        self._not_before[head.message_id] = asyncio.get_running_loop().time() + delay
