"""agents.list, agent.get|prompt|paste|read|wait and agent.hook (R9.1-R9.4, R9.7).

agent.start and starting an agent in a pane are in agent_start.py.

Every call that names an agent is bound to one generation: a call for a generation that exited
or was replaced fails (`agent_exited`, `agent_replaced`, `agent_identity_mismatch`) and is
never delivered to the session that took its place.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from pebrel import messages as m
from pebrel.agentkinds import DISPLAY_NAMES
from pebrel.errors import ErrorCode, PebrelError
from pebrel.method_params import (
    AgentGetParams,
    AgentHookParams,
    AgentPasteParams,
    AgentPromptParams,
    AgentReadParams,
    AgentsListParams,
    AgentWaitParams,
)
from pebrel.model import WAIT_DEFAULT_TIMEOUT_MS
from pebrel.router import agents, links
from pebrel.router.agents import HOOK_STATES, NamedAgent
from pebrel.router.handlers import Handler, Result
from pebrel.router.handlers.input_common import (
    checked_line,
    not_sent,
    pane_ids,
    press_enter,
    require_live,
    require_unlocked,
    submitted_result,
    worker_link,
    write_input,
    writing,
)
from pebrel.router.handlers.keys import paste_text
from pebrel.router.handlers.pane_io import check_baseline, read_result
from pebrel.router.runtime import Runtime
from pebrel.router.state import Pane

#: How long agent.prompt waits for its text to be echoed before pressing Enter: Ink-based TUIs
#: treat text and Enter in one read as a paste (TRAPS "Shells").
ECHO_TIMEOUT_S = 1.0
ECHO_POLL_S = 0.02
#: How long agent.paste waits for the agent's input to turn bracketed paste back on.
PASTE_MODE_GRACE_S = 1.0


def record(rt: Runtime, agent: NamedAgent) -> Result:
    """The wire shape of an agent (agents.list, agent.get, agent.start)."""
    pane = rt.state.panes.get((agent.window_id, agent.pane_id))
    session = pane.agents.session if pane is not None and pane.agents.bound is agent else None
    live = session is not None and agent.status == "active"
    return {
        "agent_id": agent.agent_id,
        "name": agent.name,
        "kind": agent.kind,
        "display_name": DISPLAY_NAMES.get(agent.kind, agent.kind),
        "window_id": agent.window_id,
        "pane_id": agent.pane_id,
        "generation": max(agent.generation, 1),
        "status": "exited" if agent.status == "active" and not live else agent.status,
        "state": pane.tracker.state if live and pane is not None else agent.last_state,
        "state_change_seq": pane.tracker.seq if pane is not None else 1,
        "state_source": session.source if session is not None else "process",
        "state_rule": session.rule if session is not None else None,
        "ready": live and session is not None and session.ready,
        "session_id": agent.session_id,
        "last_message": agent.last_message,
        "managed": agent.managed,
        "delegations": list(agent.delegations),
        **({"worktree": agent.worktree} if agent.worktree is not None else {}),
    }


def bound(rt: Runtime, ref: str, generation: int | None) -> tuple[NamedAgent, Pane]:
    """Resolve an agent's name or id and check the requested ``generation`` is the live
    session (any generation when None)."""
    agent = rt.state.registry.resolve(ref)
    pane = rt.state.panes.get((agent.window_id, agent.pane_id))
    agents.check_generation(agent, pane.agents if pane is not None else None, generation)
    assert pane is not None
    return agent, pane


def identity(agent: NamedAgent) -> dict[str, Any]:
    return {"agent_id": agent.agent_id, "generation": agent.generation}


async def list_agents(rt: Runtime, params: AgentsListParams) -> Result:
    window_id = params.get("window_id")
    if window_id is not None:
        rt.state.window(window_id)
    found = []
    for pane in rt.state.panes.values():
        if pane.agents.session is None or pane.agents.bound is None:
            continue
        if window_id is not None and pane.window_id != window_id:
            continue
        found.append(record(rt, pane.agents.bound))
    found.sort(key=lambda a: (a["window_id"], a["pane_id"]))
    return {"agents": found}


async def get(rt: Runtime, params: AgentGetParams) -> Result:
    agent = rt.state.registry.resolve(params["agent"])
    generation = params.get("generation")
    if generation is not None:
        pane = rt.state.panes.get((agent.window_id, agent.pane_id))
        agents.check_generation(agent, pane.agents if pane else None, generation)
    return record(rt, agent)


async def wait_for_echo(rt: Runtime, pane: Pane, text: str) -> None:
    """Give an Ink TUI the chance to draw the typed text before Enter arrives."""
    tail = text.strip()[-24:]
    if not tail:
        return
    link = worker_link(rt, pane)
    deadline = time.monotonic() + ECHO_TIMEOUT_S
    while time.monotonic() < deadline:
        reply = await links.request(
            link,
            rt.send,
            lambda rid: m.ReadScreen(request_id=rid, lines=8, max_bytes=65536),
        )
        assert isinstance(reply, m.ScreenRead)
        if any(tail in line for line in reply.lines):
            return
        await rt.next_change(pane, ECHO_POLL_S)


async def prompt_agent(
    rt: Runtime, agent: NamedAgent, pane: Pane, text: str, submit: bool = True
) -> Result:
    """Type a line into the agent's input; Enter once the TUI has drawn it (R9.4)."""
    data = checked_line(text)
    unsent = {**not_sent(), **identity(agent)}
    require_live(pane, unsent)
    require_unlocked(pane, unsent)
    try:
        with writing(pane) as sent:
            if data:
                await write_input(rt, pane, data, sent)
            sent.baseline = pane.tracker.seq
            if submit:
                await wait_for_echo(rt, pane, text)
                agents.check_generation(agent, pane.agents, agent.generation)
                await press_enter(rt, pane, sent)
    except PebrelError as exc:
        exc.details.update(identity(agent))
        raise
    return {**identity(agent), **submitted_result(rt, pane, sent)}


async def prompt(rt: Runtime, params: AgentPromptParams) -> Result:
    agent, pane = bound(rt, params["agent"], params.get("generation"))
    return await prompt_agent(rt, agent, pane, params["text"], params.get("submit", True))


async def paste_agent(
    rt: Runtime, agent: NamedAgent, pane: Pane, text: str, submit: bool = True
) -> Result:
    """A bracketed paste into the agent's input, waiting a moment for the TUI to turn
    bracketed paste back on after a turn (R9.4)."""
    deadline = time.monotonic() + PASTE_MODE_GRACE_S
    while True:
        try:
            sent = await paste_text(rt, pane, text, submit)
            break
        except PebrelError as exc:
            # A TUI re-enables bracketed paste when it redraws its input after a turn; that
            # can come a moment after the stop hook that ended the wait.
            refused = (
                exc.code == ErrorCode.INVALID_STATE and exc.details.get("bracketed_paste") is False
            )
            if not refused or time.monotonic() >= deadline:
                exc.details.update(identity(agent))
                raise
        await asyncio.sleep(ECHO_POLL_S)
        agents.check_generation(agent, pane.agents, agent.generation)
    return {**identity(agent), **sent}


async def paste(rt: Runtime, params: AgentPasteParams) -> Result:
    agent, pane = bound(rt, params["agent"], params.get("generation"))
    return await paste_agent(rt, agent, pane, params["text"], params.get("submit", True))


async def read(rt: Runtime, params: AgentReadParams) -> Result:
    agent, pane = bound(rt, params["agent"], params.get("generation"))
    result = await read_result(rt, pane, params)
    return {**identity(agent), **result}


async def wait(rt: Runtime, params: AgentWaitParams) -> Result:
    """Wait for a transition of one generation (R9.4). Without ``generation`` it is the one
    that was current at ``after_seq`` (else the current one); it must still be current.
    Only that generation's own transitions count (after the seq it began at), and the revert
    of an unconfirmed submit edge is never one: no turn ended there (R9.3)."""
    agent = rt.state.registry.resolve(params["agent"])
    after_seq: int | None = params.get("after_seq")
    generation = params.get("generation")
    if generation is None:
        generation = agent.generation
        if after_seq is not None:
            at = agents.generation_at(rt.state.registry, agent, after_seq)
            if at is not None and at[0] is not agent:
                # The generation current at after_seq was an earlier agent's, in this pane.
                raise PebrelError(
                    ErrorCode.AGENT_REPLACED,
                    "the agent generation current at after_seq is no longer current",
                    {
                        **identity(agent),
                        "after_seq": after_seq,
                        "requested_generation": at[1],
                        "current_generation": agent.generation,
                    },
                )
            if at is not None:
                generation = at[1]
    agent, pane = bound(rt, agent.agent_id, generation)
    target = params["state"]
    deadline = time.monotonic() + params.get("timeout_ms", WAIT_DEFAULT_TIMEOUT_MS) / 1000
    check_baseline(pane, after_seq, identity(agent))
    began = agent.started_seq.get(generation)
    since = max(after_seq or 0, began or 0) if after_seq is not None else None
    unconfirmed = False
    while True:
        if since is None:
            found = pane.tracker.observation(target, None)
        else:
            found, unconfirmed = pane.tracker.turn_observation(target, since)
        ended = agent.ended_seq
        if (
            found is not None
            and (ended is None or found[0] <= ended)
            and agent.generation == generation
        ):
            seq, state = found
            return {
                **identity(agent),
                "state": state,
                "state_change_seq": seq,
                **pane_ids(pane),
                # Only a message that had arrived by that transition belongs to it.
                "last_message": (
                    agent.last_message
                    if agent.message_seq is not None and agent.message_seq <= seq
                    else None
                ),
            }
        agents.check_generation(
            agent, pane.agents if rt.state.panes.get(pane.key) is pane else None, generation
        )
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise PebrelError(
                ErrorCode.TIMEOUT,
                f"agent {agent.name or agent.agent_id} did not reach {target} in time",
                {
                    **identity(agent),
                    **pane_ids(pane),
                    "state": target,
                    "after_seq": after_seq,
                    "observed_state": pane.tracker.state,
                    "observed_state_change_seq": pane.tracker.seq,
                    # The submission's running edge was never confirmed by the agent (so far).
                    **(
                        {"unconfirmed": True}
                        if unconfirmed or pane.tracker.pending is not None
                        else {}
                    ),
                },
            )
        await rt.next_change(pane, remaining)


async def hook(rt: Runtime, params: AgentHookParams) -> Result:
    """A lifecycle edge from the AI CLI's hook in this pane (`pebrel hook`)."""
    pane = rt.state.pane_at(params["window_id"], params["pane_id"])
    state = HOOK_STATES[params["event"]]
    applied = rt.agent_evidence(
        pane, state, "hook", params["kind"], params.get("session_id") or None, params.get("message")
    )
    rt.touched(pane)
    reason = None if applied else "no recognised agent of this kind in the pane (yet)"
    return {"accepted": applied, **pane_ids(pane), "reason": reason}


METHODS: Mapping[str, Handler] = {
    "agents.list": list_agents,
    "agent.get": get,
    "agent.prompt": prompt,
    "agent.paste": paste,
    "agent.read": read,
    "agent.wait": wait,
    "agent.hook": hook,
}
