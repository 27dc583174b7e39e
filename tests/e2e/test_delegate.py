"""agent.delegate between two fake agents (R9.6).

The fakes (tests/fakes) are stand-ins for real AI CLIs: they answer a line with
"final: <line>" as the final message of their stop hook.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pebrel.router.delegation import MAX_RESULT_CHARS, clean_result
from tests.agent_fixtures import fake_agents_env, started_runtime
from tests.conftest import Runtime, wait_for


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    with started_runtime(fake_agents_env(tmp_path, FAKE_AGENT_WORK_MS="200")) as runtime:
        yield runtime


def start(rt: Runtime, name: str, kind: str) -> dict[str, Any]:
    agent = rt.ok("agent.start", {"name": name, "kind": kind})
    # The start hook gives the session its id: wait for it so identities are complete.
    wait_for(
        lambda: rt.ok("agent.get", {"agent": name})["state_source"] == "hook", 10, f"{name} hook"
    )
    return agent


@contextlib.contextmanager
def lead_and_worker(tmp_path: Path, work_ms: str) -> Iterator[tuple[Runtime, dict[str, Any]]]:
    """A runtime whose fakes work for work_ms, with agents "lead" (claude) and "worker" (codex)."""
    with started_runtime(fake_agents_env(tmp_path, FAKE_AGENT_WORK_MS=work_ms)) as rt:
        lead = start(rt, "lead", "claude")
        start(rt, "worker", "codex")
        yield rt, lead


def delegate(rt: Runtime, origin: dict[str, Any], target: str, text: str) -> dict[str, Any]:
    return rt.call(
        "agent.delegate",
        {
            "agent": target,
            "text": text,
            "origin_window_id": origin["window_id"],
            "origin_pane_id": origin["pane_id"],
        },
    )


def lead_turns(rt: Runtime, lead: dict[str, Any]) -> int:
    text = rt.read_text(lead["pane_id"], lead["window_id"], lines=400)
    return text.count("answer: ")


def test_worker_answer_reaches_the_origin_once(rt: Runtime) -> None:
    """R9.6: the worker's final message is pasted into the origin as an untrusted block, once."""
    lead = start(rt, "lead", "claude")
    start(rt, "worker", "codex")
    sent = delegate(rt, lead, "worker", "count the tests")
    assert sent["ok"], sent
    result = sent["result"]
    assert result["submitted"] is True and result["status"] == "pending"
    assert result["target"]["generation"] == 1 and result["origin"]["agent_id"] == lead["agent_id"]

    def delivered() -> str | None:
        message = rt.ok("agent.get", {"agent": "lead"})["last_message"] or ""
        return message if "worker_output" in message else None

    message = wait_for(delivered, 20, "the worker's answer in the lead's turn")
    assert 'agent="worker"' in message and 'untrusted="true"' in message
    assert "final: count the tests" in message
    history = rt.ok("agent.get", {"agent": "worker"})["delegations"]
    assert [d["status"] for d in history] == ["delivered"]
    turns = lead_turns(rt, lead)

    # A duplicate completion (a second stop hook) never delivers twice.
    worker = rt.ok("agent.get", {"agent": "worker"})
    hook = {"window_id": worker["window_id"], "pane_id": worker["pane_id"], "kind": "codex"}
    rt.ok("agent.hook", {**hook, "event": "stop", "message": "again"})
    rt.ok("pane.run", {"window_id": 1, "pane_id": 1, "command": "true"})  # a round trip
    assert lead_turns(rt, lead) == turns
    assert rt.ok("agent.get", {"agent": "lead"})["last_message"] == message


def test_origin_must_be_an_agent(rt: Runtime) -> None:
    """R9.6: a plain shell pane as origin -> origin_not_agent; nothing is typed."""
    start(rt, "worker", "codex")
    before = rt.ok("agent.get", {"agent": "worker"})["state_change_seq"]
    error = delegate(rt, {"window_id": 1, "pane_id": 1}, "worker", "hello")
    assert error["ok"] is False and error["error"]["code"] == "origin_not_agent"
    assert rt.ok("agent.get", {"agent": "worker"})["state_change_seq"] == before


def test_unmanaged_origin_without_session_id(rt: Runtime) -> None:
    """R9.6: an agent that reported no session id cannot be bound as origin."""
    start(rt, "worker", "codex")
    rt.ok("pane.prompt", {"window_id": 1, "pane_id": 1, "text": "FAKE_AGENT_MODE=none claude"})
    wait_for(lambda: "agent" in rt.pane(1), 10, "the unmanaged fake recognised")
    error = delegate(rt, {"window_id": 1, "pane_id": 1}, "worker", "hello")
    assert error["error"]["code"] == "origin_identity_unavailable"


def test_one_pending_delegation_per_target_generation(tmp_path: Path) -> None:
    """R9.6: a second delegation to a busy target generation -> delegation_in_progress."""
    with lead_and_worker(tmp_path, "3000") as (rt, lead):
        assert delegate(rt, lead, "worker", "slow task")["ok"]
        second = delegate(rt, lead, "worker", "another task")
        assert second["error"]["code"] in ("delegation_in_progress", "input_in_progress")
        wait_for(
            lambda: rt.ok("agent.get", {"agent": "worker"})["state"] == "running",
            10,
            "the worker running",
        )
        third = delegate(rt, lead, "worker", "yet another")
        assert third["error"]["code"] == "delegation_in_progress"


def test_origin_closed_drops_the_answer(tmp_path: Path) -> None:
    """R9.6: a closed origin pane drops the callback, recorded on the target."""
    with lead_and_worker(tmp_path, "1500") as (rt, lead):
        assert delegate(rt, lead, "worker", "task")["ok"]
        rt.ok("pane.close", {**{k: lead[k] for k in ("window_id", "pane_id")}, "confirm": True})

        def dropped() -> list[dict[str, Any]]:
            history = rt.ok("agent.get", {"agent": "worker"})["delegations"]
            return [d for d in history if d["status"] == "dropped"]

        entry = wait_for(dropped, 20, "the delegation dropped")[0]
        assert "origin" in (entry["reason"] or "")


def test_attention_is_never_typed_over(tmp_path: Path) -> None:
    """R9.6: an origin waiting for approval gets the answer only after it settles."""
    with lead_and_worker(tmp_path, "200") as (rt, lead):
        rt.ok("agent.prompt", {"agent": "lead", "text": "approve the plan"})
        wait_for(
            lambda: rt.ok("agent.get", {"agent": "lead"})["state"] == "attention",
            10,
            "lead asking for approval",
        )
        assert delegate(rt, lead, "worker", "side task")["ok"]
        wait_for(
            lambda: (
                rt.ok("agent.get", {"agent": "worker"})["delegations"][-1]["status"] == "delivering"
            ),
            20,
            "the worker finished",
        )
        assert rt.ok("agent.get", {"agent": "lead"})["state"] == "attention"
        assert "worker_output" not in rt.read_text(lead["pane_id"], lead["window_id"])
        rt.ok("agent.prompt", {"agent": "lead", "text": "y"})

        def delivered() -> bool:
            message = rt.ok("agent.get", {"agent": "lead"})["last_message"] or ""
            return "worker_output" in message

        wait_for(delivered, 20, "the answer after the approval")


def test_clean_result_cuts_and_strips() -> None:
    """R9.6: controls and ESC are stripped (newline and tab kept); 4000 characters at most,
    the cut marker included."""
    assert clean_result("a\x1b[31mb\x07c\td\ne\r\nf") == "a[31mbc\td\ne\nf"
    long = clean_result("x" * 5000)
    assert len(long) <= MAX_RESULT_CHARS, len(long)  # the cut marker included
    kept = long.count("x")
    assert long == "x" * kept + f"\n[... {5000 - kept} more characters cut by Pebrel]"
    assert len(clean_result("y" * MAX_RESULT_CHARS)) == MAX_RESULT_CHARS
    assert clean_result(None) == ""
