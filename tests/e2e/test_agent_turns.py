"""Answers bound to their own turn and generation, and readiness only on evidence (issue 14:
R9.3, R9.4, R9.6).

The fakes (tests/fakes) are stand-ins for real AI CLIs. FAKE_AGENT_START_MS makes one start
slowly and drop input typed before its prompt; FAKE_AGENT_PROMPT_DELAY_MS makes it report a
submitted turn late (after Pebrel's submit edge has reverted for lack of confirmation).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.agent_fixtures import fake_agents_env, started_runtime
from tests.conftest import Runtime, assert_never, at_prompt, inject_env, wait_for


def get(rt: Runtime, name: str, **extra: Any) -> dict[str, Any]:
    return rt.ok("agent.get", {"agent": name, **extra})


def delegate(rt: Runtime, origin: dict[str, Any], target: str, text: str) -> dict[str, Any]:
    """agent.delegate with only origin_pane_id (origin_window_id is optional, R9.6)."""
    return rt.call(
        "agent.delegate", {"agent": target, "text": text, "origin_pane_id": origin["pane_id"]}
    )


def start_hooked(rt: Runtime, name: str, kind: str) -> dict[str, Any]:
    started = rt.ok("agent.start", {"name": name, "kind": kind})
    assert started["ready"] is True  # R9.3: answered only once ready
    wait_for(lambda: get(rt, name)["session_id"], 10, f"{name}'s session id")
    return started


# -- R9.6: a delegation gets the answer of the turn it started ----------------------------------


def test_delegation_to_a_busy_target_is_refused(tmp_path: Path) -> None:
    """R9.6: a target mid-turn on its own task -> invalid_state, nothing typed; once it has
    settled, the delegation returns the delegated turn's answer, never the earlier turn's."""
    env = fake_agents_env(tmp_path, FAKE_AGENT_WORK_MS="2500")
    with started_runtime(env) as rt:
        lead = start_hooked(rt, "lead", "claude")
        start_hooked(rt, "worker", "codex")
        own = rt.ok("agent.prompt", {"agent": "worker", "text": "its own task"})
        wait_for(lambda: get(rt, "worker")["state"] == "running", 10, "the worker's own turn")
        refused = delegate(rt, lead, "worker", "the delegated task")
        assert refused["ok"] is False, refused
        error = refused["error"]
        assert error["code"] == "invalid_state" and error["details"]["state"] == "running"
        assert error["details"]["submitted"] is False
        assert get(rt, "worker")["delegations"] == []
        worker = get(rt, "worker")
        assert "the delegated task" not in rt.read_text(worker["pane_id"], worker["window_id"])

        done = rt.ok(
            "agent.wait",
            {"agent": "worker", "state": "completed", "after_seq": own["state_change_seq"]},
        )
        assert done["last_message"] == "final: its own task"
        sent = delegate(rt, lead, "worker", "the delegated task")
        assert sent["ok"], sent

        def delivered() -> str | None:
            message = get(rt, "lead")["last_message"] or ""
            return message if "worker_output" in message else None

        message = wait_for(delivered, 30, "the delegated answer in the lead")
        assert "final: the delegated task" in message and "its own task" not in message


def test_delegation_origin_pane_id_alone_is_resolved_or_ambiguous(tmp_path: Path) -> None:
    """R9.6 / R2.8: origin_window_id is optional; an origin_pane_id that exists in two windows
    is ambiguous_target, and nothing is typed."""
    with started_runtime(fake_agents_env(tmp_path)) as rt:
        start_hooked(rt, "worker", "codex")
        rt.ok("window.create", {})
        error = delegate(rt, {"pane_id": 1}, "worker", "which origin?")
        assert error["ok"] is False and error["error"]["code"] == "ambiguous_target", error
        assert get(rt, "worker")["delegations"] == []


def test_delegation_is_cancelled_when_the_target_exits(tmp_path: Path) -> None:
    """R9.6: a pending delegation whose target exits is dropped with a reason (not pending)."""
    env = fake_agents_env(tmp_path, FAKE_AGENT_WORK_MS="20000")
    with started_runtime(env) as rt:
        lead = start_hooked(rt, "lead", "claude")
        worker = start_hooked(rt, "worker", "codex")
        assert delegate(rt, lead, "worker", "a long task")["ok"]
        ids = {"window_id": worker["window_id"], "pane_id": worker["pane_id"]}
        wait_for(
            lambda: "esc to interrupt" in rt.read_text(ids["pane_id"], ids["window_id"]),
            10,
            "the worker working",
        )
        rt.ok("pane.send_key", {**ids, "key": "c", "modifiers": {"control": True}})

        def dropped() -> dict[str, Any] | None:
            history = get(rt, "worker")["delegations"]
            return history[-1] if history and history[-1]["status"] == "dropped" else None

        entry = wait_for(dropped, 20, "the delegation cancelled")
        assert "exited" in (entry["reason"] or ""), entry
        assert get(rt, "lead")["delegations"][-1]["status"] == "dropped"
        assert "worker_output" not in rt.read_text(lead["pane_id"], lead["window_id"])


# -- R9.4: agent.wait bound to its generation ---------------------------------------------------


def test_wait_never_answers_with_an_earlier_generation(tmp_path: Path) -> None:
    """R9.4: after /exit and a restart, a wait for generation 2 with an older after_seq never
    returns generation 1's completion; the exited record never shows a stale `running`;
    `agent wait NAME --after-seq N` without --generation means the generation current at N."""
    with started_runtime(fake_agents_env(tmp_path, FAKE_AGENT_WORK_MS="100")) as rt:
        first = start_hooked(rt, "demo", "claude")
        older = get(rt, "demo")["state_change_seq"]
        one = rt.ok("agent.prompt", {"agent": "demo", "text": "one"})
        done = rt.ok(
            "agent.wait",
            {"agent": "demo", "state": "completed", "after_seq": one["state_change_seq"]},
        )
        assert (done["generation"], done["last_message"]) == (1, "final: one")
        rt.ok("agent.prompt", {"agent": "demo", "text": "/exit"})
        exited = wait_for(
            lambda: (lambda a: a if a["status"] == "exited" else None)(get(rt, "demo")),
            15,
            "generation 1 exited",
        )
        assert exited["state"] != "running" and exited["ready"] is False
        rt.ok("pane.prompt", {**{k: first[k] for k in ("window_id", "pane_id")}, "text": "claude"})
        wait_for(
            lambda: get(rt, "demo")["generation"] == 2 and get(rt, "demo")["ready"],
            20,
            "generation 2 ready",
        )

        early = rt.call(
            "agent.wait",
            {
                "agent": "demo",
                "generation": 2,
                "state": "completed",
                "after_seq": older,
                "timeout_ms": 1500,
            },
        )
        assert early["ok"] is False and early["error"]["code"] == "timeout", early

        # The spec's line: no --generation; N from generation 1 -> agent_replaced.
        replaced = rt.cli("agent", "wait", "demo", "--after-seq", str(older), "--timeout-ms", "500")
        assert replaced.code == 1 and replaced.json["error"]["code"] == "agent_replaced"

        two = rt.ok("agent.prompt", {"agent": "demo", "text": "two"})
        waited = rt.cli("agent", "wait", "demo", "--after-seq", str(two["state_change_seq"]))
        assert waited.code == 0, waited.stdout
        result = waited.json["result"]
        assert (result["generation"], result["last_message"]) == (2, "final: two")
        assert result["state"] == "completed"


def test_spec_wait_line_after_a_restart_under_the_same_name(tmp_path: Path) -> None:
    """R9.4: `agent wait NAME --after-seq N` (no --generation) after the name was started again
    in the same pane: N from the first start's generation -> agent_replaced, never a silent
    switch to the new record; a wait that answers an earlier transition does not carry a
    message written after it."""
    with started_runtime(fake_agents_env(tmp_path, FAKE_AGENT_WORK_MS="100")) as rt:
        first = start_hooked(rt, "demo", "claude")
        one = rt.ok("agent.prompt", {"agent": "demo", "text": "one"})
        older = one["state_change_seq"]
        rt.ok("agent.wait", {"agent": "demo", "state": "completed", "after_seq": older})
        rt.ok("agent.prompt", {"agent": "demo", "text": "/exit"})
        wait_for(lambda: get(rt, "demo")["status"] == "exited", 15, "generation 1 exited")
        # The agent's exit is seen before its shell is back at the prompt: agent.start refuses
        # a shell that is not idle (invalid_state), so wait for the prompt first.
        at_prompt(rt, first["pane_id"], first["window_id"])
        again = rt.ok(
            "agent.start", {"name": "demo", "kind": "claude", "pane_id": first["pane_id"]}
        )
        assert again["agent_id"] != first["agent_id"] and again["generation"] == 2
        begun = get(rt, "demo")["state_change_seq"]

        replaced = rt.cli("agent", "wait", "demo", "--after-seq", str(older), "--timeout-ms", "500")
        assert replaced.code == 1, replaced.stdout
        error = replaced.json["error"]
        assert error["code"] == "agent_replaced"
        assert (
            error["details"]["requested_generation"],
            error["details"]["current_generation"],
        ) == (
            1,
            2,
        )

        two = rt.ok("agent.prompt", {"agent": "demo", "text": "two"})
        done = rt.ok(
            "agent.wait",
            {"agent": "demo", "state": "completed", "after_seq": two["state_change_seq"]},
        )
        assert (done["generation"], done["last_message"]) == (2, "final: two")
        # The generation's first settled transition came before "two" was answered.
        early = rt.ok("agent.wait", {"agent": "demo", "state": "settled", "after_seq": begun - 1})
        assert early["state_change_seq"] < two["state_change_seq"]
        assert early["last_message"] is None


def test_start_line_not_typed_frees_the_name(tmp_path: Path) -> None:
    """R9.3: an agent.start whose start line could not be typed leaves the name exited, so a
    retry is not agent_name_conflict."""
    env = {**fake_agents_env(tmp_path), **inject_env("agent_start_line_fails")}
    with started_runtime(env) as rt:
        failed = rt.call("agent.start", {"name": "untyped", "kind": "claude", "pane_id": 1})
        assert failed["ok"] is False and failed["error"]["code"] == "action_failed", failed
        assert get(rt, "untyped")["status"] == "exited"
        again = rt.call("agent.start", {"name": "untyped", "kind": "claude", "pane_id": 1})
        assert again["error"]["code"] == "action_failed", again  # not agent_name_conflict
        assert rt.ok("agent.start", {"name": "typed", "kind": "claude", "pane_id": 1})["ready"]


# -- R9.3 / R10: ready only on evidence; a reverted submit edge is no turn -----------------------


@pytest.mark.parametrize(
    ("start_ms", "mode"), [("500", "hooks"), ("2500", "hooks"), ("2500", "none")]
)
def test_slow_start_is_waited_for(tmp_path: Path, start_ms: str, mode: str) -> None:
    """R9.3: agent.start answers only once the CLI shows it takes input (start hook, or the
    input-prompt screen rule when it reports nothing); the first prompt then gets its turn."""
    env = fake_agents_env(tmp_path, FAKE_AGENT_START_MS=start_ms, FAKE_AGENT_MODE=mode)
    with started_runtime(env) as rt:
        began = time.monotonic()
        started = rt.ok("agent.start", {"name": "slow", "kind": "claude"})
        assert time.monotonic() - began >= int(start_ms) / 1000
        assert started["ready"] is True and started["state"] == "idle"
        if mode == "none":
            assert (started["state_source"], started["state_rule"]) == ("screen", "claude.input")
        result = rt.cli("agent", "send", "slow", "hi", "--wait", "--timeout-ms", "20000")
        assert result.code == 0, result.stdout
        answer = result.json["result"]
        if mode == "hooks":
            assert (answer["state"], answer["last_message"]) == ("completed", "final: hi")
        pane = rt.read_text(started["pane_id"], started["window_id"])
        assert "answer: ih" in pane


def test_an_input_prompt_left_on_screen_is_no_readiness(tmp_path: Path) -> None:
    """R9.3: a previous agent's input prompt still on screen (here printed by the shell) does
    not make a CLI that is still loading ready: only what the new CLI draws counts."""
    env = fake_agents_env(tmp_path, FAKE_AGENT_START_MS="2500", FAKE_AGENT_MODE="none")
    with started_runtime(env) as rt:
        rt.run(1, "clear; printf '? for shortcuts\\n'")
        rt.wait_text(1, "? for shortcuts")
        began = time.monotonic()
        started = rt.ok("agent.start", {"name": "late", "kind": "claude", "pane_id": 1})
        assert time.monotonic() - began >= 2.5
        assert started["ready"] is True
        assert (started["state_source"], started["state_rule"]) == ("screen", "claude.input")
        result = rt.cli("agent", "send", "late", "hi", "--wait", "--timeout-ms", "20000")
        assert result.code == 0, result.stdout
        wait_for(lambda: "answer: ih" in rt.read_text(1), 10, "the prompt's answer")


def test_not_ready_in_time_types_nothing(tmp_path: Path) -> None:
    """R9.3: an 8 s start against a 3 s ready_timeout_ms -> agent_ready_timeout with
    `ready: false`; a wider budget waits it out; orchestrate's agent_launch types its prompt
    only once the agent is ready."""
    env = fake_agents_env(tmp_path, FAKE_AGENT_START_MS="8000")
    with started_runtime(env) as rt:
        error = rt.call("agent.start", {"name": "late", "kind": "claude", "ready_timeout_ms": 3000})
        assert error["error"]["code"] == "agent_ready_timeout", error
        details = error["error"]["details"]
        assert details["recognised"] is True and details["ready"] is False
        # The snapshot's pane agent says the same while the CLI still draws its banner.
        pane_agent = rt.pane(details["pane_id"])["agent"]
        assert (pane_agent["agent_id"], pane_agent["ready"]) == (details["agent_id"], False)
        workflow = {
            "steps": [
                {"id": "tab", "op": "new_tab"},
                {
                    "id": "a",
                    "op": "agent_launch",
                    "target": {"step": "tab", "field": "pane_id"},
                    "name": "orchestrated",
                    "kind": "codex",
                    "initial_prompt": "first words",
                    "ready_timeout_ms": 30000,
                },
            ]
        }
        receipt = rt.ok("runtime.orchestrate", workflow, timeout_s=60)
        step = receipt["steps"][1]
        assert step["status"] == "ok" and step["result"]["ready"] is True, step
        done = rt.ok(
            "agent.wait",
            {"agent": "orchestrated", "state": "completed", "timeout_ms": 20000, "after_seq": 1},
        )
        assert done["last_message"] == "final: first words"


def test_reverted_submit_edge_is_no_turn(tmp_path: Path) -> None:
    """R9.3: a submit edge that reverts for lack of confirmation is never a completed turn:
    `agent send --wait` keeps waiting for the turn's own evidence, or answers `timeout` with
    details.unconfirmed when it never comes in time."""
    env = fake_agents_env(tmp_path, FAKE_AGENT_PROMPT_DELAY_MS="3000", FAKE_AGENT_WORK_MS="100")
    with started_runtime(env) as rt:
        start_hooked(rt, "late", "claude")
        result = rt.cli("agent", "send", "late", "hi", "--wait", "--timeout-ms", "20000")
        assert result.code == 0, result.stdout
        answer = result.json["result"]
        assert (answer["state"], answer["last_message"]) == ("completed", "final: hi")

        short = rt.cli("agent", "send", "late", "again", "--wait", "--timeout-ms", "2500")
        assert short.code == 1, short.stdout
        error = short.json["error"]
        assert error["code"] == "timeout" and error["details"]["unconfirmed"] is True, error
        wait_for(lambda: get(rt, "late")["last_message"] == "final: again", 20, "the late turn")


def test_screen_rule_never_overrides_fresher_hook_evidence(tmp_path: Path) -> None:
    """R9.1: evidence merges by priority: the input-prompt screen rule, back on screen while a
    hooked agent has not said its turn is over, never ends the turn its own hook said is
    running (the fake erases its working line 1.5 s into the turn and reports `stop` 1 s
    later)."""
    env = fake_agents_env(tmp_path, FAKE_AGENT_WORK_MS="1500", FAKE_AGENT_STOP_DELAY_MS="1500")
    with started_runtime(env) as rt:
        started = start_hooked(rt, "busy", "claude")
        sent = rt.ok("agent.prompt", {"agent": "busy", "text": "work"})
        wait_for(
            lambda: "answer: krow" in rt.read_text(started["pane_id"], started["window_id"]),
            10,
            "the working line erased and the answer printed",
        )
        assert_never(
            lambda: get(rt, "busy")["state"] != "running",
            1.0,
            "its stop hook comes 1.5 s after the answer; the screen rule edge within 0.1 s",
        )
        done = rt.ok(
            "agent.wait",
            {"agent": "busy", "state": "settled", "after_seq": sent["state_change_seq"]},
        )
        assert (done["state"], done["last_message"]) == ("completed", "final: work")
        assert done["state_change_seq"] == sent["state_change_seq"] + 1  # no idle in between


def test_agent_start_right_after_a_run_waits_for_the_prompt(tmp_path: Path) -> None:
    """R9.3: pane.run answers on its command's done mark, before the shell draws its next
    prompt; an agent.start sent at once waits for that prompt (here held back 1 s by a busy
    loop in the shell's PROMPT_COMMAND, the shell staying in the foreground) instead of
    refusing the pane as not idle."""
    now = "${EPOCHREALTIME/./}"
    hold = f"__e=$(( {now} + 1000000 )); while (( {now} < __e )); do :; done"
    with started_runtime(fake_agents_env(tmp_path)) as rt:
        rt.run(1, f"PROMPT_COMMAND=\"${{PROMPT_COMMAND:-:}}\"'; {hold}'")
        rt.run(1, "true")  # answered on its done mark; the prompt comes 1 s later
        started = rt.ok("agent.start", {"name": "quick", "kind": "claude", "pane_id": 1})
        assert started["ready"] is True
