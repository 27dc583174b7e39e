"""The fake AI CLIs as delivery targets and sessions (I3.4, I4; #16 item 4).

What the collab delivery engine sends a named agent, exactly as it sends it (one line through
agent.prompt, anything else through agent.paste, bound to the generation), arrives as one
whole input, once: the fake logs each submitted prompt to FAKE_AGENT_RECEIVED_LOG and echoes it
on its screen. End-to-end delivery tests check a delivered text the same way. With
FAKE_AGENT_SESSION_AFTER_PROMPT the fake's native session id appears only with its first
prompt (a collab session stays `binding_pending` until then); `--resume ID` resumes ID.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agent_fixtures import fake_agents_env, started_runtime
from tests.collab_fixtures import received
from tests.conftest import wait_for

pytestmark = pytest.mark.timeout(120)


def test_a_named_fake_takes_each_input_whole_and_once(tmp_path: Path) -> None:
    log = tmp_path / "received.jsonl"
    env = fake_agents_env(
        tmp_path,
        FAKE_AGENT_RECEIVED_LOG=str(log),
        FAKE_AGENT_WORK_MS="50",
        FAKE_AGENT_SESSION_AFTER_PROMPT="1",
    )
    with started_runtime(env) as rt:
        started = rt.ok("agent.start", {"name": "worker", "kind": "claude"})
        assert (started["ready"], started["session_id"]) == (True, None)
        target = {"agent": started["agent_id"], "generation": started["generation"]}
        one = rt.ok("agent.prompt", {**target, "text": "one line MARK-1", "submit": True})
        assert (one["written"], one["submitted"]) == (True, True)
        wait_for(lambda: len(received(log)) == 1, 20, "the first input")
        native = wait_for(lambda: rt.ok("agent.get", target)["session_id"], 20, "a native id")
        assert native == received(log)[0]["session"]
        wait_for(lambda: rt.ok("agent.get", target)["state"] != "running", 20, "the turn's end")
        text = "task MARK-2\nsecond line\n\tindented"
        two = rt.ok("agent.paste", {**target, "text": text, "submit": True})
        assert (two["written"], two["submitted"]) == (True, True)
        wait_for(lambda: len(received(log)) == 2, 20, "the pasted input")
        assert [entry["text"] for entry in received(log)] == ["one line MARK-1", text]
        screen = rt.read_text(started["pane_id"], started["window_id"])
        assert screen.count("MARK-1") == 1 and screen.count("task MARK-2") == 1


def test_a_resumed_fake_reports_its_session_at_once(tmp_path: Path) -> None:
    env = fake_agents_env(tmp_path, FAKE_AGENT_SESSION_AFTER_PROMPT="1")
    with started_runtime(env) as rt:
        started = rt.ok(
            "agent.start", {"name": "back", "kind": "claude", "resume_session_id": "uuid-back"}
        )
        assert started["ready"] is True
        wait_for(
            lambda: rt.ok("agent.get", {"agent": "back"})["session_id"] == "uuid-back",
            20,
            "the resumed session id",
        )
