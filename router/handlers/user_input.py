"""pane.user_input: the local user's own keystrokes, as `pebrel attach` forwards them (#21).

A person typing into a pane is not an agent submitting work. This channel writes the bytes as
they are (size-limited, in one write) and nothing else happens: no submit barrier (it never
answers `input_in_progress` and never holds other input back), no running edge and no other
task-state change (typing into vim does not make the pane `running`; a command the user runs
with Enter is seen through the shell's own marks, as any command started in the pane is).

It is the user's alone: the router places the calling process (router/collab_caller.py, as
for `collab.*`) and refuses a caller inside a pane, or one it cannot place, with
`caller_not_user`. Agents type through pane.prompt, pane.send_key and pane.paste.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from pebrel.errors import ErrorCode, PebrelError
from pebrel.method_params import PaneUserInputParams
from pebrel.router.handlers import Handler, Result
from pebrel.router.handlers.input_common import Sent, pane_ids, require_live, write_input
from pebrel.router.runtime import Runtime

#: The most bytes one call writes (a keystroke is a few; a terminal's paste comes in pieces).
USER_INPUT_MAX_BYTES = 4096


def input_bytes(data_b64: str) -> bytes:
    try:
        data = base64.b64decode(data_b64, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise PebrelError(
            ErrorCode.INVALID_PARAMS,
            f"data_b64 is not base64: {exc}",
            {"field": "data_b64", "written": False},
        ) from None
    if not data or len(data) > USER_INPUT_MAX_BYTES:
        raise PebrelError(
            ErrorCode.INVALID_PARAMS,
            f"data_b64 holds {len(data)} bytes; 1 to {USER_INPUT_MAX_BYTES} are allowed",
            {
                "field": "data_b64",
                "bytes": len(data),
                "limit": USER_INPUT_MAX_BYTES,
                "written": False,
            },
        )
    return data


def refuse_caller(caller: Mapping[str, Any]) -> None:
    """`caller_not_user` unless the request came from the local user (not from a pane)."""
    if caller.get("kind") != "user":
        where = (
            f"pane {caller['pane_id']}" if caller.get("kind") == "pane" else "an unplaced process"
        )
        raise PebrelError(
            ErrorCode.CALLER_NOT_USER,
            f"pane.user_input is the local user's channel; the caller is {where}: "
            "use pane.prompt, pane.send_key or pane.paste",
            {"caller": dict(caller), "written": False},
        )


async def user_input(rt: Runtime, params: PaneUserInputParams) -> Result:
    pane = rt.state.pane(params.get("window_id"), params["pane_id"])
    data = input_bytes(params["data_b64"])
    require_live(pane, {"written": False})
    sent = Sent()
    try:
        await write_input(rt, pane, data, sent)
    except PebrelError as exc:
        exc.details.setdefault("written", sent.written)
        raise
    return {**pane_ids(pane), "written_bytes": len(data)}


METHODS: Mapping[str, Handler] = {"pane.user_input": user_input}
