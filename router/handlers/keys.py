"""pane.send_key and pane.paste (R4.2, R4.3)."""

from __future__ import annotations

from collections.abc import Mapping

from pebrel.errors import ErrorCode, PebrelError
from router.handlers import Handler, Params, Result
from router.runtime import Runtime


async def send_key(rt: Runtime, params: Params) -> Result:
    raise PebrelError(ErrorCode.ACTION_FAILED, "pane.send_key is not built yet")


async def paste(rt: Runtime, params: Params) -> Result:
    raise PebrelError(ErrorCode.ACTION_FAILED, "pane.paste is not built yet")


METHODS: Mapping[str, Handler] = {"pane.send_key": send_key, "pane.paste": paste}
