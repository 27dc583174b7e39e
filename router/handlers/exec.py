"""pane.exec and pane.procs (R6.3, R6.4)."""

from __future__ import annotations

from collections.abc import Mapping

from pebrel.errors import ErrorCode, PebrelError
from router.handlers import Handler, Params, Result
from router.runtime import Runtime


async def exec_(rt: Runtime, params: Params) -> Result:
    raise PebrelError(ErrorCode.ACTION_FAILED, "pane.exec is not built yet")


async def procs(rt: Runtime, params: Params) -> Result:
    raise PebrelError(ErrorCode.ACTION_FAILED, "pane.procs is not built yet")


METHODS: Mapping[str, Handler] = {"pane.exec": exec_, "pane.procs": procs}
