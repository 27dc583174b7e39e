"""Program-reported agent status read from the PTY byte stream (`program` evidence).

Two escape sequences are understood; the OSC scanner hands them over as OscEvents:

- OSC 1337 ``SetUserVar=NAME=BASE64`` (the iTerm2 user-variable form). ``pebrel_agent_state``
  carries a task state (idle, running, completed, failed, attention, waiting_input) or a hook
  word (start, prompt, stop, attention, waiting-input, end); ``pebrel_agent_session`` carries the
  session id that later state reports are attributed to. Other variable names are ignored.
- OSC 26, the proposed Terminal Agent Protocol: ``26;CodeAgent=claude;SessionId=...;Status=...``
  with Status one of idle, running, awaiting-approval, awaiting-input, error, finished. Values
  that are not a known token may be base64-encoded UTF-8 and are decoded. A report without a
  known Status is ignored.

OSC 7501, the Program Status Protocol, is read apart: ``workers/osc7501.py`` and
``workers/status_records.py``.
"""

from __future__ import annotations

import base64
import binascii
import logging
from dataclasses import dataclass

from pebrel.agentkinds import KINDS, SCRIPT_NAMES

logger = logging.getLogger(__name__)

OSC_USER_VAR = 1337
OSC_AGENT_PROTOCOL = 26
STATE_VAR = "pebrel_agent_state"
SESSION_VAR = "pebrel_agent_session"
MAX_VALUE_CHARS = 1024

#: pebrel_agent_state values: task states as they are, hook words as the hook contract maps them.
USER_VAR_STATES: dict[str, str] = {
    "idle": "idle",
    "running": "running",
    "completed": "completed",
    "failed": "failed",
    "attention": "attention",
    "waiting_input": "waiting_input",
    "start": "idle",
    "prompt": "running",
    "stop": "completed",
    "waiting-input": "waiting_input",
    "end": "end",
}

#: OSC 26 Status words.
TAP_STATES: dict[str, str] = {
    "idle": "idle",
    "running": "running",
    "awaiting-approval": "attention",
    "awaiting-input": "waiting_input",
    "error": "failed",
    "finished": "completed",
}


@dataclass(frozen=True, slots=True)
class ProgramReport:
    """One status report: a task state or "end", with what the program said about itself."""

    state: str
    session_id: str | None
    kind: str | None
    origin: str  # "osc1337" or "osc26"


def decode_base64(value: str) -> str | None:
    """Base64 (standard or URL-safe, padding optional) UTF-8 text, or None if it is not that."""
    text = value.strip()
    if not text:
        return None
    padded = text + "=" * (-len(text) % 4)
    try:
        raw = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
        return raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def _token(value: str, known: dict[str, str] | tuple[str, ...]) -> str | None:
    """A known token given plainly, or base64-encoded; None otherwise."""
    plain = value.strip().lower()
    if plain in known:
        return plain
    decoded = decode_base64(value)
    if decoded is not None and decoded.strip().lower() in known:
        return decoded.strip().lower()
    return None


def _kind(value: str) -> str | None:
    for candidate in (value, decode_base64(value) or ""):
        name = candidate.strip().lower()
        kind = name if name in KINDS else SCRIPT_NAMES.get(name)
        if kind is not None:
            return kind
    return None


def _text(value: str) -> str | None:
    """A free-text value (a session id): taken as sent, bounded; empty means none."""
    text = value.strip()[:MAX_VALUE_CHARS]
    return text or None


class ProgramStatusParser:
    """Turns OSC events into ProgramReports; remembers the session id set by OSC 1337."""

    def __init__(self) -> None:
        self.session_id: str | None = None

    def feed(self, code: int, payload: str) -> ProgramReport | None:
        if code == OSC_USER_VAR:
            return self._user_var(payload)
        if code == OSC_AGENT_PROTOCOL:
            return parse_tap(payload)
        return None

    def _user_var(self, payload: str) -> ProgramReport | None:
        command, _, rest = payload.partition("=")
        if command != "SetUserVar":
            return None
        name, sep, encoded = rest.partition("=")
        if not sep:
            return None
        if name == SESSION_VAR:
            value = decode_base64(encoded) if encoded.strip() else ""
            if value is None:
                logger.debug("undecodable %s value ignored", SESSION_VAR)
                return None
            self.session_id = _text(value)
            return None
        if name != STATE_VAR:
            return None
        decoded = decode_base64(encoded)
        state = USER_VAR_STATES.get(decoded.strip().lower()) if decoded is not None else None
        if state is None:
            logger.debug("unknown %s value ignored", STATE_VAR)
            return None
        report = ProgramReport(state, self.session_id, None, "osc1337")
        if state == "end":
            self.session_id = None
        return report


def parse_tap(payload: str) -> ProgramReport | None:
    """An OSC 26 (Terminal Agent Protocol) payload, after the "26;", as a report or None."""
    fields: dict[str, str] = {}
    for item in payload.split(";"):
        key, sep, value = item.partition("=")
        if sep:
            fields.setdefault(key.strip(), value)
    status = _token(fields.get("Status", ""), TAP_STATES)
    if status is None:
        return None
    kind = _kind(fields["CodeAgent"]) if "CodeAgent" in fields else None
    session = fields.get("SessionId")
    return ProgramReport(TAP_STATES[status], _text(session) if session else None, kind, "osc26")
