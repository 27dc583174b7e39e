"""Injection: `agent.fork`'s tab-and-agent dispatch never confirms (R9.5).

The dispatch waits for ever instead of opening the tab, and the dispatch deadline is cut to
0.2 s, so the fork answers `runtime_timeout` with `cleanup_deferred` and keeps the checkout.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pebrel.injection import ROUTER

DEADLINE_S = 0.2


def install(process: str) -> None:
    if process != ROUTER:
        return
    from pebrel.router.handlers import fork

    async def dispatch(*args: Any, **kwargs: Any) -> Any:
        await asyncio.Event().wait()  # never confirms; cancelled when the runtime stops

    fork.dispatch = dispatch
    fork.DISPATCH_TIMEOUT_S = DEADLINE_S
