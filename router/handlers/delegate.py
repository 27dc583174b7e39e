"""agent.delegate, and the delivery of the target's answer to its origin (R9.6).

router.delegation keeps the book (records, pending delegations, history); here the task is
typed into the target, and, once the target's turn ends, its answer into the origin.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping

from pebrel.errors import ErrorCode, PebrelError
from pebrel.method_params import AgentDelegateParams
from pebrel.router.delegation import Delegation, one_line
from pebrel.router.handlers import Handler, Result
from pebrel.router.handlers.agent import bound, paste_agent, prompt_agent
from pebrel.router.runtime import Runtime
from pebrel.router.state import Pane

logger = logging.getLogger(__name__)

#: How long a finished delegation waits for its origin to settle before it is dropped.
DELIVERY_PATIENCE_S = 3600.0
RETRY_S = 0.25


async def delegate(rt: Runtime, params: AgentDelegateParams) -> Result:
    """Register, then submit the task; returns once both happened (never waits for the answer).

    A target that is not ready for a new task (mid-turn, asking, or not shown to take input
    yet) is refused with `invalid_state`: the end of its current turn would otherwise be taken
    for the delegated one. The answer is the end of the turn the task started: a completion
    counts only after that turn's own running edge."""
    origin_pane = rt.state.pane(params.get("origin_window_id"), params["origin_pane_id"])
    origin = rt.delegations.origin_of(origin_pane)
    target, target_pane = bound(rt, params["agent"], params.get("generation"))
    generation = target.generation
    text = params["text"]
    rt.delegations.check_free(target, generation)
    rt.delegations.check_ready(target, target_pane)
    # Registered before the task is typed: a fast target's stop hook must find it.
    delegation = rt.delegations.register(target, generation, origin, target_pane.tracker.seq)
    send = paste_agent if "\n" in text else prompt_agent
    try:
        sent = await send(rt, target, target_pane, text)
    except PebrelError as exc:
        rt.delegations.cancel(delegation, f"the task was not submitted ({exc.code})")
        exc.details.setdefault("submitted", False)
        raise
    rt.commit()
    return {
        "delegation_id": delegation.delegation_id,
        "status": delegation.status,
        "submitted": True,
        "state_change_seq": sent["state_change_seq"],
        "target": {
            "agent_id": target.agent_id,
            "generation": generation,
            "window_id": target_pane.window_id,
            "pane_id": target_pane.pane_id,
        },
        "origin": {
            "agent_id": origin.agent_id,
            "generation": origin.generation,
            "window_id": origin.window_id,
            "pane_id": origin.pane_id,
        },
    }


def deliver_answers(rt: Runtime) -> None:
    """From now on, a target whose turn ends has its answer delivered (router.app calls this)."""

    def turn_finished(pane: Pane) -> None:
        found = rt.delegations.finished(pane)
        if found is not None:
            rt.keep(asyncio.get_running_loop().create_task(deliver(rt, *found)))

    rt.turn_listeners.append(turn_finished)


async def deliver(rt: Runtime, delegation: Delegation, text: str) -> None:
    """Paste the answer into the origin once it settles (one line for an origin without
    bracketed paste); drop it when the origin is gone or never settles."""
    deadline = time.monotonic() + DELIVERY_PATIENCE_S
    while True:
        pane = rt.delegations.origin_pane(delegation)
        if pane is None:
            rt.delegations.cancel(delegation, "the origin pane closed or its agent session changed")
            return
        if pane.tracker.state in ("idle", "completed", "failed"):
            session = pane.agents.session
            generation = session.generation if session else delegation.origin.generation
            try:
                try:
                    agent, origin_pane = bound(rt, delegation.origin.agent_id, generation)
                    await paste_agent(rt, agent, origin_pane, text)
                except PebrelError as exc:
                    if exc.details.get("bracketed_paste") is not False:
                        raise
                    # An origin that reads plain lines (no bracketed paste): one line.
                    agent, origin_pane = bound(rt, delegation.origin.agent_id, generation)
                    await prompt_agent(rt, agent, origin_pane, one_line(text))
            except PebrelError as exc:
                if exc.code in (ErrorCode.AGENT_EXITED, ErrorCode.AGENT_REPLACED):
                    rt.delegations.cancel(delegation, f"the origin agent is gone ({exc.code})")
                    return
                logger.info("delegation delivery retried", extra={"code": str(exc.code)})
            else:
                rt.delegations.delivered(delegation)
                rt.commit()
                return
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            rt.delegations.cancel(delegation, "the origin never settled to take the answer")
            return
        # running: wait until it settles; attention/waiting_input: never typed over.
        await rt.next_change(pane, min(remaining, RETRY_S))


METHODS: Mapping[str, Handler] = {"agent.delegate": delegate}
