"""Method handlers, one module per family; `app.py` merges their METHODS tables."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pebrel.envelope import EncodedResult
from pebrel.router.runtime import Runtime

Params = dict[str, Any]
Result = dict[str, Any]
Handler = Callable[[Runtime, Params], Awaitable[Result]]
#: A method table's entry: a few methods answer with a result encoded ahead.
Method = Callable[[Runtime, Params], Awaitable[Result | EncodedResult]]
