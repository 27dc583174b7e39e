"""The method table: every JSON method's handler, and the legacy text lines' (R1, R2).

Each handler is typed with its method's params TypedDict (pebrel/method_params.py);
tests/unit/test_method_params.py checks every one against the schema.
"""

from __future__ import annotations

from collections.abc import Mapping

from pebrel.router.handlers import (
    Handler,
    Method,
    agent,
    agent_launch,
    agent_start,
    delegate,
    events,
    fork,
    keys,
    layout_ops,
    orchestrate,
    pane_io,
    screen_read,
    tab,
    user_input,
    wait_any,
    window,
)
from pebrel.router.handlers import exec as exec_handlers
from pebrel.router.handlers import pane as pane_handlers
from pebrel.router.handlers import runtime as runtime_handlers

METHODS: dict[str, Method] = {
    **runtime_handlers.METHODS,
    **window.METHODS,
    **tab.METHODS,
    **pane_handlers.METHODS,
    **pane_io.METHODS,
    **screen_read.METHODS,
    **wait_any.METHODS,
    **exec_handlers.METHODS,
    **keys.METHODS,
    **user_input.METHODS,
    **layout_ops.METHODS,
    **events.METHODS,
    **agent.METHODS,
    **agent_start.METHODS,
    **agent_launch.METHODS,
    **delegate.METHODS,
    **fork.METHODS,
    **orchestrate.METHODS,
}
#: Reached only through the legacy text lines, never as a JSON method.
LEGACY: Mapping[str, Handler] = {"legacy.attach": window.attach}
