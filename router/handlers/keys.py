"""pane.send_key and pane.paste (R4.2, R4.3).

Both go through the same gates as pane.prompt (exited pane, submit barrier) and both can submit:
Enter sent as a key, or the Enter that follows a paste, establishes the synchronous running edge
before its byte is written, so the returned `state_change_seq` is the wait baseline. The worker
encodes keys and judges bracketed paste, because only it knows the terminal's modes after all
pending output.
"""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Mapping
from typing import Any

from pebrel import messages as m
from pebrel.errors import ErrorCode, PebrelError
from pebrel.keys import encode_key
from pebrel.method_params import PanePasteParams, PaneSendKeyParams
from pebrel.model import MAX_PROMPT_BYTES
from pebrel.router import links
from pebrel.router.handlers import Handler, Result
from pebrel.router.handlers.input_common import (
    at_edge,
    not_sent,
    pane_ids,
    press_enter,
    raise_write_error,
    require_live,
    require_unlocked,
    submitted_result,
    worker_link,
    writing,
)
from pebrel.router.runtime import Runtime
from pebrel.router.state import Pane

#: Largest paste, in UTF-8 bytes of the text as sent by the client.
MAX_PASTE_BYTES = MAX_PROMPT_BYTES
#: Characters a paste may carry besides printable text.
PASTE_ALLOWED_CONTROLS = frozenset("\n\t")
#: How long a paste waits for an integrated shell between a command's end and its next prompt
#: (readline turns bracketed paste on only once it reads a line); the first prompt may be slower.
PROMPT_SETTLE_S = 2.0
FIRST_PROMPT_SETTLE_S = 10.0
#: Letters whose control byte a shell takes as Enter (ctrl-m is CR, ctrl-j is LF).
SUBMIT_CONTROL_LETTERS = frozenset({"m", "j"})


def _submits(key: str, control: bool, alt: bool) -> bool:
    """Enter (or ctrl-m / ctrl-j) without alt submits the line like a prompt's Enter."""
    if alt:
        return False
    return key == "enter" or (control and key in SUBMIT_CONTROL_LETTERS)


async def send_key(rt: Runtime, params: PaneSendKeyParams) -> Result:
    """Write a named key `repeat` times, encoded for the terminal's current mode (R4.3)."""
    pane = rt.state.pane(params.get("window_id"), params["pane_id"])
    key = params["key"]
    modifiers = params.get("modifiers", {})
    control = modifiers.get("control", False)
    alt = modifiers.get("alt", False)
    shift = modifiers.get("shift", False)
    repeat = params.get("repeat", 1)
    try:
        encode_key(key, control=control, alt=alt, shift=shift, app_cursor=False)
    except ValueError as exc:
        raise PebrelError(
            ErrorCode.INVALID_PARAMS,
            str(exc),
            {"field": "key", "key": key, "modifiers": modifiers, **not_sent()},
        ) from exc
    require_live(pane, not_sent())
    require_unlocked(pane, not_sent())
    link = worker_link(rt, pane)
    submits = _submits(key, control, alt)
    with writing(pane) as sent:
        if submits:
            at_edge(rt, pane, sent)
        else:
            sent.baseline = pane.tracker.seq
        reply = await links.request(
            link,
            rt.send,
            lambda rid: m.SendKey(
                request_id=rid,
                key=key,
                control=control,
                alt=alt,
                shift=shift,
                repeat=repeat,
            ),
        )
        assert isinstance(reply, m.InputWritten)
        sent.written = reply.written > 0
        raise_write_error(pane, reply.error, reply.written)
        sent.submitted = submits
    return submitted_result(rt, pane, sent)


def check_paste_text(text: str) -> bytes:
    """Multi-line text: no ESC, NUL or other C0/C1 control but LF and tab; CR(LF) becomes LF."""
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > MAX_PASTE_BYTES:
        raise PebrelError(
            ErrorCode.INVALID_PARAMS,
            f"text is {size} bytes; the paste limit is {MAX_PASTE_BYTES}",
            {"field": "text", "bytes": size, "limit": MAX_PASTE_BYTES, **not_sent()},
        )
    for index, char in enumerate(text):
        if char in PASTE_ALLOWED_CONTROLS or char == "\r":
            continue
        if unicodedata.category(char) in ("Cc", "Cs"):
            raise PebrelError(
                ErrorCode.INVALID_PARAMS,
                f"text contains control character U+{ord(char):04X} at {index}; a paste may "
                "hold only newline and tab; use pane.send_key for keys",
                {"field": "text", "index": index, "codepoint": ord(char), **not_sent()},
            )
    return text.replace("\r\n", "\n").replace("\r", "\n").encode("utf-8")


async def _settle_prompt(rt: Runtime, pane: Pane, unsent: dict[str, Any]) -> None:
    """Let an integrated shell between a command's end and its next prompt draw that prompt.

    Readline turns bracketed paste on when it starts reading a line, after the done mark a
    pane.run answers on: judging the mode in that gap would refuse a paste the shell accepts.
    """
    tracker = pane.tracker
    if not pane.integrated:
        return
    limit = time.monotonic() + (PROMPT_SETTLE_S if tracker.prompt_seen else FIRST_PROMPT_SETTLE_S)
    while not tracker.at_prompt and not tracker.command_active and time.monotonic() < limit:
        await rt.next_change(pane, limit - time.monotonic())
        if rt.state.panes.get(pane.key) is not pane:
            raise PebrelError(
                ErrorCode.TARGET_NOT_FOUND,
                f"pane {pane.pane_id} was closed",
                {**pane_ids(pane), **unsent},
            )
        require_live(pane, unsent)
    require_unlocked(pane, unsent)


async def paste_text(rt: Runtime, pane: Pane, text: str, submit: bool = True) -> Result:
    """Bracketed paste, then (with ``submit``) Enter as a separate write (R4.2)."""
    data = check_paste_text(text)
    unsent = not_sent()
    require_live(pane, unsent)
    require_unlocked(pane, unsent)
    await _settle_prompt(rt, pane, unsent)
    link = worker_link(rt, pane)
    with writing(pane) as sent:
        reply = await links.request(
            link, rt.send, lambda rid: m.PasteText(request_id=rid, data=data)
        )
        assert isinstance(reply, m.PasteWritten)
        if not reply.bracketed:
            raise PebrelError(
                ErrorCode.INVALID_STATE,
                f"the program in pane {pane.pane_id} has not enabled bracketed paste; "
                "nothing was written (use pane.prompt for plain text)",
                {**pane_ids(pane), "bracketed_paste": False},
            )
        sent.written = reply.written > 0
        raise_write_error(pane, reply.error, reply.written)
        sent.baseline = pane.tracker.seq
        if submit:
            # The paste is acknowledged; Enter goes as its own write after the edge.
            await press_enter(rt, pane, sent)
    return submitted_result(rt, pane, sent)


async def paste(rt: Runtime, params: PanePasteParams) -> Result:
    pane = rt.state.pane(params.get("window_id"), params["pane_id"])
    return await paste_text(rt, pane, params["text"], params.get("submit", True))


METHODS: Mapping[str, Handler] = {"pane.send_key": send_key, "pane.paste": paste}
