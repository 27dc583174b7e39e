"""Injection: the router cannot start the handler of a `pane.read` request.

`RouterApp.dispatch` hands `start` something that is not a coroutine, as Python 3.12's
`create_task` once refused the 3.11 trampoline (`TypeError: a coroutine was expected`).
Every other method is untouched.
"""

from __future__ import annotations

from typing import Any

from pebrel import messages as m
from pebrel.injection import ROUTER
from pebrel.router.app import RouterApp

FAILING_METHOD = "pane.read"


class NotACoroutine:
    """What a broken start path is handed instead of a coroutine."""


def install(process: str) -> None:
    if process != ROUTER:
        return
    original = RouterApp.dispatch

    def dispatch(self: RouterApp, request: m.HandleRequest) -> Any:
        if request.method == FAILING_METHOD:
            return NotACoroutine()
        return original(self, request)

    RouterApp.dispatch = dispatch  # type: ignore[method-assign]
