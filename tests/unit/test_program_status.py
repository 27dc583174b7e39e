"""Program-reported status: OSC 1337 SetUserVar and OSC 26 (Terminal Agent Protocol)."""

from __future__ import annotations

import base64
from typing import NamedTuple

import pytest

from pebrel.workers.program_status import ProgramReport, ProgramStatusParser, parse_tap


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


class Case(NamedTuple):
    id: str
    code: int
    payload: str
    expected: ProgramReport | None


def r1337(state: str, session: str | None = None) -> ProgramReport:
    return ProgramReport(state, session, None, "osc1337")


def r26(state: str, session: str | None = None, kind: str | None = None) -> ProgramReport:
    return ProgramReport(state, session, kind, "osc26")


CASES = [
    # OSC 1337 task states
    *(
        Case(f"1337-{s}", 1337, f"SetUserVar=pebrel_agent_state={b64(s)}", r1337(s))
        for s in ("idle", "running", "completed", "failed", "attention", "waiting_input")
    ),
    # OSC 1337 hook words
    Case("1337-start", 1337, f"SetUserVar=pebrel_agent_state={b64('start')}", r1337("idle")),
    Case("1337-prompt", 1337, f"SetUserVar=pebrel_agent_state={b64('prompt')}", r1337("running")),
    Case("1337-stop", 1337, f"SetUserVar=pebrel_agent_state={b64('stop')}", r1337("completed")),
    Case(
        "1337-waiting-input",
        1337,
        f"SetUserVar=pebrel_agent_state={b64('waiting-input')}",
        r1337("waiting_input"),
    ),
    Case("1337-end", 1337, f"SetUserVar=pebrel_agent_state={b64('end')}", r1337("end")),
    Case(
        "1337-case-space",
        1337,
        "SetUserVar=pebrel_agent_state=" + b64(" Running\n"),
        r1337("running"),
    ),
    Case("1337-unpadded", 1337, "SetUserVar=pebrel_agent_state=aWRsZQ", r1337("idle")),
    # OSC 1337 ignored
    Case("1337-plain-not-b64", 1337, "SetUserVar=pebrel_agent_state=running!", None),
    Case("1337-unknown-state", 1337, f"SetUserVar=pebrel_agent_state={b64('busy')}", None),
    Case("1337-other-var", 1337, f"SetUserVar=user_state={b64('running')}", None),
    Case("1337-no-value", 1337, "SetUserVar=pebrel_agent_state", None),
    Case("1337-other-command", 1337, "CurrentDir=/tmp", None),
    Case("1337-session-only", 1337, f"SetUserVar=pebrel_agent_session={b64('s-1')}", None),
    # OSC 26
    Case(
        "26-running",
        26,
        "CodeAgent=claude;SessionId=abc;Status=running",
        r26("running", "abc", "claude"),
    ),
    Case("26-idle", 26, "Status=idle", r26("idle")),
    Case(
        "26-approval",
        26,
        "CodeAgent=codex;Status=awaiting-approval",
        r26("attention", None, "codex"),
    ),
    Case("26-input", 26, "Status=awaiting-input", r26("waiting_input")),
    Case("26-error", 26, "Status=error", r26("failed")),
    Case("26-finished", 26, "Status=finished;TaskProgress=4/4", r26("completed")),
    Case(
        "26-spaces", 26, " CodeAgent=opencode ; Status=running ", r26("running", None, "opencode")
    ),
    Case("26-b64-status", 26, f"Status={b64('finished')}", r26("completed")),
    Case("26-b64-agent", 26, f"CodeAgent={b64('claude')};Status=idle", r26("idle", None, "claude")),
    Case("26-alias-agent", 26, "CodeAgent=claude-code;Status=idle", r26("idle", None, "claude")),
    Case("26-unknown-agent", 26, "CodeAgent=aider;Status=running", r26("running")),
    Case("26-unknown-status", 26, "CodeAgent=claude;Status=thinking", None),
    Case("26-no-status", 26, "CodeAgent=claude;SessionId=x", None),
    Case("26-empty", 26, "", None),
    # other OSCs
    Case("osc-7501", 7501, "Status=running", None),
    Case("osc-9", 9, "4;1;50", None),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_single_report(case: Case) -> None:
    assert ProgramStatusParser().feed(case.code, case.payload) == case.expected


def test_session_var_is_attached_to_later_states_until_end() -> None:
    parser = ProgramStatusParser()
    assert parser.feed(1337, f"SetUserVar=pebrel_agent_session={b64('sess-42')}") is None
    assert parser.feed(1337, f"SetUserVar=pebrel_agent_state={b64('prompt')}") == r1337(
        "running", "sess-42"
    )
    assert parser.feed(1337, f"SetUserVar=pebrel_agent_state={b64('end')}") == r1337(
        "end", "sess-42"
    )
    assert parser.feed(1337, f"SetUserVar=pebrel_agent_state={b64('start')}") == r1337("idle")


def test_empty_session_var_clears_it() -> None:
    parser = ProgramStatusParser()
    parser.feed(1337, f"SetUserVar=pebrel_agent_session={b64('a')}")
    parser.feed(1337, "SetUserVar=pebrel_agent_session=")
    assert parser.session_id is None


def test_tap_first_field_wins() -> None:
    assert parse_tap("Status=running;Status=idle") == r26("running")
