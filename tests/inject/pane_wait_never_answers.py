"""Injection: the router never answers a `pane.wait` request (R8.1; #14).

The request is taken and its handler waits for ever, so the CLI's own deadline is what ends
the call: it must say `client_timeout` (exit 4), not that no runtime is reachable. Every other
method is untouched.
"""

from __future__ import annotations

import asyncio

from pebrel import messages as m
from pebrel.injection import ROUTER
from pebrel.router.app import RouterApp

SILENT_METHOD = "pane.wait"


def install(process: str) -> None:
    if process != ROUTER:
        return
    original = RouterApp.dispatch

    async def dispatch(self: RouterApp, request: m.HandleRequest) -> None:
        if request.method == SILENT_METHOD:
            await asyncio.Event().wait()  # never answers; cancelled when the runtime stops
        await original(self, request)

    RouterApp.dispatch = dispatch  # type: ignore[method-assign]
