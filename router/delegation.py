"""agent.delegate: hand a task to another agent and return its final message automatically (R9.6).

A delegation binds the target to its exact `agent_id + generation` and the origin to its exact
identity (a managed agent's generation, or an unmanaged agent's provider session id). When the
target's turn ends (its `stop` hook, or program status `completed`), its final message is
cleaned, cut to 4000 characters and delivered to the origin through the paste path with Enter,
wrapped as an untrusted `<worker_output>` block. An origin that is `running` gets it when it
settles; `attention` and `waiting_input` are never typed over; a closed origin pane or a changed
origin session drops it (recorded on both agents). A second completion never delivers twice.
Delegations live in the router's memory: a runtime restart drops pending ones.

This module keeps the book: the records, the pending delegations by target generation, and
their history on both agents. Typing the answer into the origin is router/handlers/delegate.py's.
"""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from pebrel.errors import ErrorCode, PebrelError
from pebrel.router.agents import NamedAgent
from pebrel.router.state import Pane, RouterState

MAX_RESULT_CHARS = 4000
HISTORY_PER_AGENT = 20
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")


def cut_marker(cut: int) -> str:
    return f"\n[... {cut} more characters cut by Pebrel]"


def clean_result(message: str | None) -> str:
    """C0/C1 controls and ESC stripped (newline and tab kept), cut so that the text with the
    cut marker is at most 4000 characters."""
    text = _CONTROL.sub("", (message or "").replace("\r\n", "\n").replace("\r", "\n"))
    if len(text) <= MAX_RESULT_CHARS:
        return text
    keep = MAX_RESULT_CHARS - len(cut_marker(len(text)))
    return text[:keep] + cut_marker(len(text) - keep)


def one_line(text: str) -> str:
    """The wrapped answer as a single line, for an origin that does not take pastes."""
    return " ".join(part.strip() for part in text.replace("\t", " ").split("\n") if part.strip())


def wrap_result(target: NamedAgent, generation: int, text: str) -> str:
    body = text.replace("</worker_output", "<\\/worker_output")
    label = target.name or target.agent_id
    return (
        f'<worker_output agent="{label}" agent_id="{target.agent_id}" '
        f'generation="{generation}" untrusted="true">\n{body}\n</worker_output>'
    )


@dataclass(slots=True)
class Origin:
    window_id: int
    pane_id: int
    agent_id: str
    generation: int
    session_id: str | None
    managed: bool


@dataclass(slots=True)
class Delegation:
    delegation_id: str
    target: NamedAgent
    generation: int
    origin: Origin
    status: str = "pending"  # pending -> delivering -> delivered | dropped
    reason: str | None = None
    #: The target pane's state_change_seq when the delegation was registered: only a
    #: completion after the delegated turn's own running edge (a later `running`) counts.
    registered_seq: int = 0
    created_at: float = field(default_factory=time.time)

    def summary(self, role: str) -> dict[str, Any]:
        return {
            "delegation_id": self.delegation_id,
            "role": role,
            "status": self.status,
            "reason": self.reason,
            "target": {"agent_id": self.target.agent_id, "generation": self.generation},
            "origin": {
                "agent_id": self.origin.agent_id,
                "generation": self.origin.generation,
                "window_id": self.origin.window_id,
                "pane_id": self.origin.pane_id,
            },
        }


class Delegations:
    """The router's pending delegations, keyed by the target's exact generation."""

    def __init__(self, state: RouterState) -> None:
        self.state = state
        self.pending: dict[tuple[str, int], Delegation] = {}

    # -- registration ------------------------------------------------------------------------
    def origin_of(self, pane: Pane) -> Origin:
        session = pane.agents.session
        bound = pane.agents.bound
        where = {"window_id": pane.window_id, "pane_id": pane.pane_id}
        if session is None or bound is None or session.ended:
            raise PebrelError(
                ErrorCode.ORIGIN_NOT_AGENT, "the origin pane does not run a recognised agent", where
            )
        if not bound.managed and not session.session_id:
            raise PebrelError(
                ErrorCode.ORIGIN_IDENTITY_UNAVAILABLE,
                "the origin agent has no session id yet (no hook reported one), so the answer "
                "could not be bound to it",
                {**where, "agent_id": bound.agent_id},
            )
        return Origin(
            pane.window_id,
            pane.pane_id,
            bound.agent_id,
            session.generation,
            session.session_id,
            bound.managed,
        )

    def check_free(self, target: NamedAgent, generation: int) -> None:
        if (target.agent_id, generation) in self.pending:
            raise PebrelError(
                ErrorCode.DELEGATION_IN_PROGRESS,
                f"agent {target.name or target.agent_id} generation {generation} already has a "
                "delegation waiting for its stop hook",
                {"agent_id": target.agent_id, "generation": generation},
            )

    def check_ready(self, target: NamedAgent, pane: Pane) -> None:
        """Refuse a target that is not ready for a new task (R9.6): mid-turn (`running`),
        asking (`attention`, `waiting_input`), or not yet shown to take input. Its current
        turn's answer would otherwise be taken for the delegated one."""
        session = pane.agents.session
        ready = session is not None and session.ready
        state = pane.tracker.state
        if not ready or state in ("running", "attention", "waiting_input"):
            raise PebrelError(
                ErrorCode.INVALID_STATE,
                f"agent {target.name or target.agent_id} is not ready for a new task "
                f"(state {state}); delegate when it has settled",
                {
                    "agent_id": target.agent_id,
                    "generation": target.generation,
                    "state": state,
                    "ready": ready,
                    "submitted": False,
                },
            )

    def register(
        self, target: NamedAgent, generation: int, origin: Origin, seq: int = 0
    ) -> Delegation:
        self.check_free(target, generation)
        delegation = Delegation("dlg_" + secrets.token_hex(6), target, generation, origin)
        delegation.registered_seq = seq
        self.pending[(target.agent_id, generation)] = delegation
        self.record(delegation)
        return delegation

    def cancel(self, delegation: Delegation, reason: str) -> None:
        self.pending.pop((delegation.target.agent_id, delegation.generation), None)
        delegation.status, delegation.reason = "dropped", reason
        self.record(delegation)

    def record(self, delegation: Delegation) -> None:
        origin_agent = self.state.registry.by_id.get(delegation.origin.agent_id)
        for agent, role in ((delegation.target, "target"), (origin_agent, "origin")):
            if agent is None:
                continue
            entries = [
                e for e in agent.delegations if e["delegation_id"] != delegation.delegation_id
            ]
            entries.append(delegation.summary(role))
            agent.delegations[:] = entries[-HISTORY_PER_AGENT:]

    # -- completion ---------------------------------------------------------------------------
    def finished(self, pane: Pane) -> tuple[Delegation, str] | None:
        """The agent in ``pane`` finished its turn: the delegation waiting for that turn (now
        `delivering`) and the wrapped answer for its origin; None if nothing waits for it (a
        second completion included: an answer is never delivered twice)."""
        bound, session = pane.agents.bound, pane.agents.session
        if bound is None or session is None:
            return None
        key = (bound.agent_id, session.generation)
        delegation = self.pending.get(key)
        if delegation is None or not any(
            seq > delegation.registered_seq and state == "running"
            for seq, state in pane.tracker.history
        ):
            return None  # not the delegated turn's end: that turn has not started yet
        del self.pending[key]
        delegation.status = "delivering"
        self.record(delegation)
        return delegation, wrap_result(
            bound, delegation.generation, clean_result(bound.last_message)
        )

    def sweep(self) -> None:
        """Cancel, with a reason, pending delegations whose target generation is gone: its
        agent exited, or another generation or agent took its pane (never `pending` forever)."""
        for delegation in list(self.pending.values()):
            reason = self.target_gone(delegation)
            if reason is not None:
                self.cancel(delegation, reason)

    def target_gone(self, delegation: Delegation) -> str | None:
        target = delegation.target
        pane = self.state.panes.get((target.window_id, target.pane_id))
        if pane is None or pane.exited:
            return "the target's pane closed before its turn ended"
        session = pane.agents.session
        if pane.agents.bound is not target or target.status == "replaced":
            return "another agent replaced the target in its pane"
        if target.generation != delegation.generation:
            return f"the target was replaced by its generation {target.generation}"
        if target.status != "active" or session is None or session.ended:
            return "the target agent exited before its turn ended"
        return None

    def delivered(self, delegation: Delegation) -> None:
        delegation.status = "delivered"
        self.record(delegation)

    def origin_pane(self, delegation: Delegation) -> Pane | None:
        """The origin's pane if it still runs the very identity that delegated, else None."""
        origin = delegation.origin
        pane = self.state.panes.get((origin.window_id, origin.pane_id))
        if pane is None or pane.exited:
            return None
        session, bound = pane.agents.session, pane.agents.bound
        if session is None or bound is None or bound.agent_id != origin.agent_id:
            return None
        if origin.managed and session.generation != origin.generation:
            return None
        if not origin.managed and session.session_id != origin.session_id:
            return None
        return pane
