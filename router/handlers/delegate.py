"""agent.delegate (R9.6): see router.delegation for the lifecycle."""

from __future__ import annotations

from collections.abc import Mapping

from pebrel.errors import PebrelError
from pebrel.router.handlers import Handler, Params, Result
from pebrel.router.handlers import agent as agent_handlers
from pebrel.router.runtime import Runtime


async def delegate(rt: Runtime, params: Params) -> Result:
    """Register, then submit the task; returns once both happened (never waits for the answer)."""
    assert rt.delegations is not None
    origin_pane = rt.state.pane(params["origin_window_id"], params["origin_pane_id"])
    origin = rt.delegations.origin_of(origin_pane)
    target, target_pane = agent_handlers.bound(rt, params)
    generation = target.generation
    text: str = params["text"]
    # Registered before the task is typed: a fast target's stop hook must find it.
    delegation = rt.delegations.register(target, generation, origin)
    method = agent_handlers.paste if "\n" in text else agent_handlers.prompt
    try:
        sent = await method(rt, {"agent": target.agent_id, "generation": generation, "text": text})
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


METHODS: Mapping[str, Handler] = {"agent.delegate": delegate}
