"""Agent sessions in panes and the named-agent registry (DESIGN "Agents"; FEATURES R9.1-R9.4).

A pane's `AgentSession` exists while its foreground program is a recognised AI CLI. Each new
session in a pane gets the pane's next `generation`. A `NamedAgent` is the stable identity
(`agent_id`, random, never reused; an optional unique active `name`) bound to one pane; it
follows the sessions of that pane as long as they are of its kind. Evidence, strongest first:
hook and program (the CLI's own status sequences), then screen rules, then process identity.
This module is pure state: the router feeds it facts and applies the resulting task states.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any, Literal

from pebrel.errors import ErrorCode, PebrelError
from pebrel.model import TASK_STATE_PRIORITY, TaskState

EvidenceSource = Literal["hook", "program", "screen", "process"]
Status = Literal["starting", "active", "exited", "replaced"]

#: Hook events and the agent state they imply ("end": the session is over, back to the shell).
HOOK_STATES: dict[str, TaskState | None] = {
    "start": "idle",
    "prompt": "running",
    "stop": "completed",
    "attention": "attention",
    "waiting-input": "waiting_input",
    "end": None,
}
#: A hook or program report this recent outranks a screen rule's edge (seconds).
STRONG_EVIDENCE_WINDOW_S = 1.0
#: Evidence that arrives just before the process is recognised is kept this long (seconds).
PENDING_EVIDENCE_S = 5.0
#: At most this much of it is kept.
PENDING_EVIDENCE_MAX = 16


def task_state(word: str) -> TaskState | None:
    """A reported state word as a task state (None for "end" or anything unknown)."""
    for state in TASK_STATE_PRIORITY:
        if word == state:
            return state
    return None


def new_agent_id() -> str:
    return "agt_" + secrets.token_hex(8)


@dataclass(slots=True)
class AgentSession:
    """One generation of an agent in its pane. Each kind of evidence is kept apart and merged
    into ``state``/``source``/``rule`` by :func:`merge` (R9.1)."""

    agent_id: str
    kind: str
    generation: int
    program: str
    state: TaskState = "idle"
    source: EvidenceSource = "process"
    rule: str | None = None
    session_id: str | None = None
    #: The agent's own last word (hook or program status; the newer of the two) and when.
    strong_state: TaskState | None = None
    strong_source: EvidenceSource | None = None
    strong_at: float = float("-inf")
    #: The screen rule that matches now (None: none), its state, and since when.
    screen_rule: str | None = None
    screen_state: TaskState | None = None
    screen_at: float = float("-inf")
    ended: bool = False  # an `end` hook: the session is over though the process may linger
    #: A screen rule the agent was answered on: still on screen, but no longer news.
    acknowledged_rule: str | None = None
    #: Evidence that the session can take input: its start hook, any later word of its own
    #: (hook or program status), or a screen rule for its input prompt (R9.3).
    ready: bool = False


@dataclass(slots=True)
class NamedAgent:
    agent_id: str
    name: str | None
    kind: str
    window_id: int
    pane_id: int
    managed: bool
    generation: int = 0
    status: Status = "starting"
    last_message: str | None = None
    #: The pane's state_change_seq when last_message arrived (a wait that answers an earlier
    #: transition does not pair it with a message written later).
    message_seq: int | None = None
    last_state: TaskState = "idle"
    session_id: str | None = None
    #: The pane's state_change_seq when this agent's last session ended: later observations
    #: of the pane belong to the shell (or to another session), not to this agent.
    ended_seq: int | None = None
    #: The pane's state_change_seq when each of this agent's generations began: a generation's
    #: own transitions are the ones after it (R9.4).
    started_seq: dict[int, int] = field(default_factory=dict)
    #: Delegations this agent took part in, newest last (bounded; see router.delegation).
    delegations: list[dict[str, Any]] = field(default_factory=list)
    #: agent.fork provenance (repo_root, source_root, path, branch, base_commit, created).
    worktree: dict[str, Any] | None = None


@dataclass(slots=True)
class PendingEvidence:
    at: float
    state: TaskState | None
    source: EvidenceSource
    kind: str | None
    session_id: str | None
    message: str | None


@dataclass(slots=True)
class PaneAgents:
    """Agent bookkeeping of one pane (lives on the router's Pane)."""

    session: AgentSession | None = None
    generation: int = 0
    bound: NamedAgent | None = None
    pending: list[PendingEvidence] = field(default_factory=list)


class AgentRegistry:
    def __init__(self) -> None:
        self.by_id: dict[str, NamedAgent] = {}

    # -- identity -------------------------------------------------------------------------------
    def active_named(self, name: str) -> NamedAgent | None:
        for agent in self.by_id.values():
            if agent.name == name and agent.status in ("starting", "active"):
                return agent
        return None

    def resolve(self, ref: str) -> NamedAgent:
        """By agent_id, else by name (the active one, else the most recent with that name)."""
        found = self.by_id.get(ref)
        if found is not None:
            return found
        named = [a for a in self.by_id.values() if a.name == ref]
        if not named:
            raise PebrelError(ErrorCode.TARGET_NOT_FOUND, f"no agent {ref!r}", {"agent": ref})
        active = [a for a in named if a.status in ("starting", "active")]
        return (active or named)[-1]

    def register(
        self, name: str | None, kind: str, window_id: int, pane_id: int, managed: bool
    ) -> NamedAgent:
        agent = NamedAgent(new_agent_id(), name, kind, window_id, pane_id, managed)
        self.by_id[agent.agent_id] = agent
        return agent

    # -- sessions -------------------------------------------------------------------------------
    def session_appeared(
        self, agents: PaneAgents, window_id: int, pane_id: int, kind: str, program: str, seq: int
    ) -> AgentSession:
        """A recognised AI CLI took the pane's foreground at state_change_seq ``seq``: a new
        generation begins."""
        agents.generation += 1
        bound = agents.bound
        if bound is None or bound.kind != kind or bound.status == "replaced":
            if (bound is not None and bound.status in ("starting", "active")) or (
                bound is not None and bound.status == "exited"
            ):
                bound.status = "replaced"
            bound = self.register(None, kind, window_id, pane_id, managed=False)
            agents.bound = bound
        bound.generation = agents.generation
        bound.started_seq[agents.generation] = seq
        bound.status = "active"
        bound.last_state = "idle"
        bound.session_id = None
        bound.ended_seq = None
        bound.last_message = None  # a final message belongs to the generation that wrote it
        bound.message_seq = None
        session = AgentSession(bound.agent_id, kind, agents.generation, program)
        agents.session = session
        return session

    def new_session_id(self, agents: PaneAgents, session_id: str, seq: int) -> None:
        """The same process started a new provider session (e.g. /clear) at state_change_seq
        ``seq``: a new generation."""
        session = agents.session
        if session is None or agents.bound is None:
            return
        agents.generation += 1
        session.generation = agents.generation
        session.session_id = session_id
        agents.bound.generation = agents.generation
        agents.bound.started_seq[agents.generation] = seq
        agents.bound.session_id = session_id
        agents.bound.last_message = None
        agents.bound.message_seq = None

    def session_ended(self, agents: PaneAgents, seq: int) -> None:
        bound = agents.bound
        if bound is not None and bound.status == "active":
            bound.status = "exited"
            bound.ended_seq = seq
            if bound.last_state == "running":
                # A turn still running when the session ended never completed; nothing runs.
                bound.last_state = "idle"
        agents.session = None

    def pane_closed(self, agents: PaneAgents, seq: int) -> None:
        self.session_ended(agents, seq)
        if agents.bound is not None and agents.bound.status == "starting":
            agents.bound.status = "exited"


def merge(session: AgentSession) -> None:
    """The session's state from its evidence, by priority (R9.1): the agent's own words (hook
    or program status, the newer of the two) over a screen rule over the process alone. A
    screen rule counts over the agent's own word only when it is newer (beyond
    STRONG_EVIDENCE_WINDOW_S: edges that close together are the same moment), and its input
    prompt never ends a turn the agent itself said is running: the agent says when it ends."""
    screen = session.screen_state if session.screen_rule != session.acknowledged_rule else None
    strong = session.strong_state
    if strong is not None and session.strong_source is not None:
        screen_is_newer = session.screen_at > session.strong_at + STRONG_EVIDENCE_WINDOW_S
        if screen is None or not screen_is_newer or (screen == "idle" and strong == "running"):
            session.state, session.source, session.rule = strong, session.strong_source, None
            return
    if screen is not None:
        session.state, session.source, session.rule = screen, "screen", session.screen_rule
        return
    session.state, session.source, session.rule = "idle", "process", None


def apply_strong(
    agents: PaneAgents,
    state: TaskState | None,
    source: EvidenceSource,
    session_id: str | None,
    message: str | None,
    now: float,
) -> bool:
    """Hook or program evidence. Returns False when it does not apply to this session."""
    session = agents.session
    if session is None:
        return False
    if session_id and session.session_id and session_id != session.session_id:
        # A new provider session in the same process: handled by the caller first.
        return False
    if session_id:
        session.session_id = session_id
        if agents.bound is not None:
            agents.bound.session_id = session_id
    if message is not None and agents.bound is not None:
        agents.bound.last_message = message
    if state is None:
        session.ended = True
        return True
    session.ended = False
    session.ready = True
    session.strong_state, session.strong_source, session.strong_at = state, source, now
    merge(session)
    return True


def apply_screen(agents: PaneAgents, rule_id: str | None, state: str | None, now: float) -> bool:
    """A screen rule edge (``rule_id`` None: no rule matches any more). Returns True when the
    session's state, source or readiness changed."""
    session = agents.session
    if session is None or session.ended:
        return False
    before = (session.state, session.source, session.rule, session.ready)
    parsed = task_state(state) if state is not None else None
    if rule_id is None or parsed is None:
        session.screen_rule = session.screen_state = None
    else:
        session.screen_rule, session.screen_state = rule_id, parsed
        if parsed == "idle":
            session.ready = True  # a rule for the agent's input prompt (R9.3)
    session.screen_at = now
    if session.acknowledged_rule is not None and session.screen_rule != session.acknowledged_rule:
        session.acknowledged_rule = None  # the answered rule stopped matching
    merge(session)
    return before != (session.state, session.source, session.rule, session.ready)


def acknowledge_screen(agents: PaneAgents) -> bool:
    """Input reached an agent whose state came from a screen rule (an approval question, say):
    that state is answered. The rule is ignored until it stops matching."""
    session = agents.session
    if session is None or session.source != "screen" or session.rule is None:
        return False
    session.acknowledged_rule = session.rule
    merge(session)
    return True


def session_state(agents: PaneAgents) -> TaskState | None:
    """The agent overlay for the pane's task state (None: the shell's state shows)."""
    session = agents.session
    if session is None or session.ended:
        return None
    return session.state


def generation_at(
    registry: AgentRegistry, agent: NamedAgent, seq: int
) -> tuple[NamedAgent, int] | None:
    """The agent generation that was current in ``agent``'s pane at state_change_seq ``seq``,
    with the record it belongs to (which may be another agent's, e.g. an earlier start under
    the same name); None when none was (the shell had the pane, or no agent had begun)."""
    current: tuple[int, NamedAgent, int] | None = None
    for record in registry.by_id.values():
        if (record.window_id, record.pane_id) != (agent.window_id, agent.pane_id):
            continue
        for generation, start in record.started_seq.items():
            if start <= seq and (current is None or start > current[0]):
                current = (start, record, generation)
    if current is None:
        return None
    _, record, generation = current
    ended = record.ended_seq
    if ended is not None and ended <= seq and generation == record.generation:
        return None  # that session had ended by then
    return record, generation


def check_generation(agent: NamedAgent, agents: PaneAgents | None, generation: int | None) -> None:
    """Refuse calls bound to a generation that is no longer the live session (R9.4)."""
    details: dict[str, Any] = {
        "agent_id": agent.agent_id,
        "name": agent.name,
        "window_id": agent.window_id,
        "pane_id": agent.pane_id,
        "requested_generation": generation,
        "current_generation": agent.generation,
    }
    live = agents is not None and agents.session is not None and agents.bound is agent
    if agent.status == "replaced" or (
        agents is not None and agents.bound is not agent and agents.session is not None
    ):
        raise PebrelError(
            ErrorCode.AGENT_REPLACED, "another agent session replaced this one in its pane", details
        )
    if generation is not None and generation > agent.generation:
        raise PebrelError(
            ErrorCode.AGENT_IDENTITY_MISMATCH,
            f"agent {agent.agent_id} has no generation {generation}",
            details,
        )
    if generation is not None and generation < agent.generation and live:
        raise PebrelError(
            ErrorCode.AGENT_REPLACED,
            f"generation {generation} was replaced by generation {agent.generation}",
            details,
        )
    if not live or agent.status != "active":
        raise PebrelError(
            ErrorCode.AGENT_EXITED,
            f"agent {agent.name or agent.agent_id} is not running in its pane",
            {**details, "status": agent.status},
        )
