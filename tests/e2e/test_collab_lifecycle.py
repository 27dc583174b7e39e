"""A task's whole life through `pebrel collab`, with a fake AI CLI as the assignee (#16; I3).

Real runtime, real collab service and SQLite file, the stand-in `claude` of tests/fakes as the
agent: the assignment and a consultation are written into its pane exactly once each (its
FAKE_AGENT_RECEIVED_LOG), the printed respond command works as printed, and the journal holds
every fact once, in a gapless order.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.agent_fixtures import fake_agents_env, started_runtime
from tests.collab_fixtures import (
    collab,
    collab_error,
    delivered,
    received,
    serving,
    stage,
)
from tests.conftest import Runtime, at_prompt, wait_for

pytestmark = pytest.mark.timeout(180)


def start_assignee(rt: Runtime) -> str:
    """A group `team`, the fake `claude` named `worker`, its session in the group."""
    wait_for(lambda: serving(rt), 20, "the collab service")
    rt.ok("agent.start", {"name": "worker", "kind": "claude"})
    collab(rt, "group", "create", "team")
    session = collab(rt, "session", "register", "--agent", "worker", "--group", "team")
    assert session["session"]["online"] is True, session
    return str(session["session"]["session_id"])


def idle(rt: Runtime) -> None:
    wait_for(lambda: rt.ok("agent.get", {"agent": "worker"})["state"] != "running", 30, "idle")


def test_assign_report_accept_comment_respond(tmp_path: Path) -> None:
    log = tmp_path / "received.jsonl"
    env = fake_agents_env(tmp_path, FAKE_AGENT_RECEIVED_LOG=str(log), FAKE_AGENT_WORK_MS="50")
    with started_runtime(env) as rt:
        ses = start_assignee(rt)
        made = collab(
            rt, "task", "create", "--group", "team", "--title", "Fix it",
            "--content", "Please fix MARK-TASK", "--assignee", ses,
        )  # fmt: skip
        task, attempt = made["task"]["task_id"], made["attempt_id"]
        delivered(rt, made["message_id"])
        wait_for(lambda: len(received(log)) == 1, 20, "the assignment typed")
        text = received(log)[0]["text"]
        assert "MARK-TASK" in text and f"task report {task}" in text

        idle(rt)
        report = collab(
            rt, "--session", ses, "task", "report", task, "--attempt", attempt,
            "--status", "complete", "--content", "fixed",
        )  # fmt: skip
        assert report["artifact_id"].startswith("art_")
        collab(rt, "task", "accept", task)
        assert collab(rt, "task", "get", task)["task"]["status"] == "accepted"

        asked = collab(rt, "task", "comment", task, "--content", "Why MARK-Q?")
        delivered(rt, asked["message_id"])
        wait_for(lambda: len(received(log)) == 2, 20, "the consultation typed")
        consultation = received(log)[1]["text"]
        assert "MARK-Q" in consultation
        printed = consultation.strip().splitlines()[-1]
        assert f"--to-event {asked['event_id']}" in printed, consultation
        # Run the printed command as the agent would, with its own answer.
        argv = shlex.split(printed)
        argv[argv.index("--content") + 1] = "because"
        assert argv[:2] == ["pebrel", "collab"]
        answered = collab(rt, *argv[2:])
        got = collab(rt, "task", "get", task)["task"]
        assert got["status"] == "accepted", "a comment and its answer keep acceptance"
        respond = [e for e in got["events"] if e["event_id"] == answered["event_id"]]
        assert respond[0]["kind"] == "task.respond"
        assert respond[0]["reply_to_event_id"] == asked["event_id"]
        # The same printed command again (same idempotency key): one fact, the same answer.
        assert collab(rt, *argv[2:])["event_id"] == answered["event_id"]

        events = collab(rt, "events", "list", "--group", "team", "--limit", "1000")["events"]
        assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
        assert len({e["event_id"] for e in events}) == len(events)
        kinds = [e["kind"] for e in events]
        for kind in ("task.created", "task.assigned", "message.queued", "task.delivery",
                     "task.report", "task.result", "task.accepted", "task.comment",
                     "task.respond"):  # fmt: skip
            assert kind in kinds, kinds
        assert kinds.count("task.respond") == 1
        assert len(received(log)) == 2, "nothing typed twice"


def test_stale_revision_and_a_pane_caller_change_nothing(tmp_path: Path) -> None:
    env = fake_agents_env(tmp_path, FAKE_AGENT_WORK_MS="50")
    with started_runtime(env) as rt:
        ses = start_assignee(rt)
        made = collab(rt, "task", "create", "--group", "team", "--title", "T", "--content", "c")
        task = made["task"]["task_id"]
        before = collab(rt, "task", "get", task)["task"]
        stale = collab_error(rt, "task", "assign", task, "--assignee", ses, "--revision", "7")
        assert stale["code"] == "TASK_CHANGED" and stale["details"]["retryable"] is False
        assert collab(rt, "task", "get", task)["task"] == before

        # A process in a pane with no session of its own may read, never act as the user.
        split = rt.ok("pane.split", {"window_id": 1, "pane_id": 1, "direction": "down"})
        at_prompt(rt, split["pane_id"])
        ran = rt.run(split["pane_id"], f"pebrel collab task accept {task}; echo rc=$?")
        assert ran["exit_code"] == 0
        screen = rt.read_text(split["pane_id"])
        assert "INTEGRATION_PERMISSION_DENIED" in screen and "rc=1" in screen
        assert collab(rt, "task", "get", task)["task"] == before


def test_an_offline_assignee_keeps_the_message_queued_with_its_reason(tmp_path: Path) -> None:
    log = tmp_path / "received.jsonl"
    env = fake_agents_env(tmp_path, FAKE_AGENT_RECEIVED_LOG=str(log), FAKE_AGENT_WORK_MS="50")
    with started_runtime(env) as rt:
        ses = start_assignee(rt)
        agent = rt.ok("agent.get", {"agent": "worker"})
        rt.ok(
            "pane.close",
            {"window_id": agent["window_id"], "pane_id": agent["pane_id"], "confirm": True},
        )
        wait_for(
            lambda: collab(rt, "session", "get", ses)["session"]["online"] is False,
            20,
            "the session offline",
        )
        session = collab(rt, "session", "get", ses)["session"]
        assert session["offline_reason"] in ("pane_gone", "agent_exited"), session
        made = collab(
            rt, "task", "create", "--group", "team", "--title", "T", "--content", "MARK-OFF",
            "--assignee", ses,
        )  # fmt: skip
        message = collab(rt, "message", "get", made["message_id"])["message"]
        wait_for(
            lambda: collab(rt, "message", "get", made["message_id"])["message"]["receipt"].get(
                "reason"
            ),
            20,
            "a waiting reason",
        )
        receipt = collab(rt, "message", "get", made["message_id"])["message"]["receipt"]
        assert receipt["stage"] == "queued" and receipt["reason"] in ("pane_gone", "agent_exited")
        assert message["to_session_id"] == ses
        assert stage(rt, made["message_id"]) == "queued"
        assert not re.search("MARK-OFF", log.read_text() if log.exists() else "")
