"""Injection: the start line of an agent named `untyped` cannot be typed (R9.3).

`launch_agent` (agent.start, agent.fork, orchestrate's agent_launch) types the start line
through `prompt_pane`; while the pane is bound to a starting agent of that one name, the write
fails with `action_failed` before any byte is sent, as when the pane's worker goes away
mid-request. Every other name is untouched.
"""

from __future__ import annotations

from typing import Any

from pebrel.errors import ErrorCode, PebrelError
from pebrel.injection import ROUTER

FAILING_NAME = "untyped"


def install(process: str) -> None:
    if process != ROUTER:
        return
    from pebrel.router.handlers import agent_start

    namespace = vars(agent_start)  # the module's globals, where launch_agent finds prompt_pane
    original = namespace["prompt_pane"]

    async def prompt_pane(rt: Any, pane: Any, text: str, submit: bool = True) -> Any:
        bound = pane.agents.bound
        if bound is not None and bound.name == FAILING_NAME and bound.status == "starting":
            raise PebrelError(ErrorCode.ACTION_FAILED, "injected: the start line was not typed")
        return await original(rt, pane, text, submit)

    namespace["prompt_pane"] = prompt_pane
