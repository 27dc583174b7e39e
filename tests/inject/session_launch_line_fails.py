"""Injection: while `<data dir>/launch-line-fails` exists, the start line of an agent launched
for a collab session (named `ses_...`) cannot be typed (I4.3, #18).

As in agent_start_line_fails.py, `prompt_pane` fails with `action_failed` before any byte is
sent (as when the pane's worker goes away mid-request); the collab service answers
SESSION_LAUNCH_FAILED. Other agents, and every launch once the file is gone, are untouched.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pebrel.errors import ErrorCode, PebrelError
from pebrel.injection import ROUTER

FLAG = "launch-line-fails"


def install(process: str) -> None:
    if process != ROUTER:
        return
    from pebrel.router.handlers import agent_start

    flag = Path(os.environ["PEBREL_DATA_DIR"]) / FLAG
    namespace = vars(agent_start)  # the module's globals, where launch_agent finds prompt_pane
    original = namespace["prompt_pane"]

    async def prompt_pane(rt: Any, pane: Any, text: str, submit: bool = True) -> Any:
        bound = pane.agents.bound
        if bound is not None and bound.name.startswith("ses_") and flag.exists():
            raise PebrelError(ErrorCode.ACTION_FAILED, "injected: the start line was not typed")
        return await original(rt, pane, text, submit)

    namespace["prompt_pane"] = prompt_pane
