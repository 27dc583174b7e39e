"""Method handlers, one module per family; `router/methods.py` merges their METHODS tables.

A handler takes the Runtime and its method's params TypedDict (pebrel/method_params.py), and
answers a result or raises PebrelError. What several methods share (typing a line, pasting,
splitting, opening a tab, starting an agent, ...) is a typed function of the family module that
owns it; handlers, runtime.orchestrate, agent.fork and agent.delegate all call those functions,
never each other's handlers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pebrel.envelope import EncodedResult
from pebrel.router.runtime import Runtime

Result = dict[str, Any]
#: A method table's entry. Its params are typed `Any` here only: router.app validated them
#: against the method's schema before the call, and each handler declares its own TypedDict,
#: which tests/unit/test_method_params.py checks against that schema.
Handler = Callable[[Runtime, Any], Awaitable[Result]]
#: A method table's entry that may answer with a result encoded ahead.
Method = Callable[[Runtime, Any], Awaitable[Result | EncodedResult]]
