"""A submission's answer says what happened, end to end against real bash (#14).

- R5.4, R5.5: the snapshot a submission returns is the one of its running edge: in a tight
  loop of instant commands it shows the pane `running` at the returned seq, never the command's
  completion handled before the answer was built; a wait from that seq returns the completion.
- R4.1-R4.3, R9.4: `submitted` means Enter was written; `written` that bytes reached the PTY
  (`pane.prompt`/`pane.paste` with `submit: false`, a key other than Enter, and their errors).
Agents are the stand-in CLIs of tests/fakes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agent_fixtures import fake_agents_env, started_runtime
from tests.conftest import Runtime, at_prompt, wait_for

pytestmark = pytest.mark.timeout(240)

WAIT_MS = 10_000
#: How many instant commands each loop submits: enough for the race to show.
LOOP = 30


def the_pane(snapshot: dict[str, Any], pane_id: int = 1, window_id: int = 1) -> dict[str, Any]:
    pane: dict[str, Any]
    (pane,) = [
        p
        for w in snapshot["windows"]
        for t in w["tabs"]
        for p in t["panes"]
        if (p["window_id"], p["pane_id"]) == (window_id, pane_id)
    ]
    return pane


def wait_settled(rt: Runtime, after_seq: int, pane_id: int = 1) -> dict[str, Any]:
    return rt.ok(
        "pane.wait",
        {"pane_id": pane_id, "state": "settled", "after_seq": after_seq, "timeout_ms": WAIT_MS},
        timeout_s=WAIT_MS / 1000 + 10,
    )


def assert_edge(answer: dict[str, Any], pane_id: int = 1) -> int:
    """The answer shows the pane `running` at its own baseline; return that seq."""
    seq: int = answer["state_change_seq"]
    shown = the_pane(answer["snapshot"], pane_id)
    assert (shown["task_state"], shown["state_change_seq"]) == ("running", seq), answer
    assert (answer["submitted"], answer["written"]) == (True, True)
    return seq


def drawn_prompt(rt: Runtime, pane_id: int = 1) -> None:
    """bash's next prompt is drawn (readline reads a line, bracketed paste is on)."""
    wait_for(
        lambda: rt.ok("pane.read", {"pane_id": pane_id})["lines"][-1].rstrip().endswith(("$", "#")),
        15,
        "bash's prompt",
    )


# -- R5.4, R5.5: the snapshot of the running edge -------------------------------------------------


def test_instant_prompts_answer_the_snapshot_of_their_running_edge(runtime: Runtime) -> None:
    """R5.4, R5.5: 30 `pane.prompt "true"`: each answer shows `running` at its seq, and a
    wait from that seq returns `completed` one later."""
    at_prompt(runtime)
    for _ in range(LOOP):
        seq = assert_edge(runtime.ok("pane.prompt", {"pane_id": 1, "text": "true"}))
        settled = wait_settled(runtime, seq)
        assert (settled["state"], settled["state_change_seq"]) == ("completed", seq + 1)


def test_instant_pastes_and_enter_keys_answer_their_running_edge(runtime: Runtime) -> None:
    """R4.2, R4.3, R5.4: the same for `pane.paste` and for Enter sent as a key."""
    at_prompt(runtime)
    for number in range(LOOP // 2):
        drawn_prompt(runtime)
        if number % 2:
            answer = runtime.ok("pane.paste", {"pane_id": 1, "text": "true"})
        else:
            typed = runtime.ok("pane.prompt", {"pane_id": 1, "text": "true", "submit": False})
            assert (typed["submitted"], typed["written"]) == (False, True)
            answer = runtime.ok("pane.send_key", {"pane_id": 1, "key": "enter"})
        seq = assert_edge(answer)
        assert wait_settled(runtime, seq)["state_change_seq"] == seq + 1


# -- R4.1-R4.3: submitted and written ---------------------------------------------------------


def test_typing_without_enter_is_written_not_submitted(runtime: Runtime) -> None:
    """R4.1, R4.2, R4.3: `submit: false` and a key other than Enter: `written: true`,
    `submitted: false`, no running edge; the text is on the line, not run."""
    at_prompt(runtime)
    drawn_prompt(runtime)
    before = runtime.pane(1)["state_change_seq"]
    answers = [
        runtime.ok("pane.prompt", {"pane_id": 1, "text": "echo typed-$((6*7))", "submit": False}),
        runtime.ok("pane.paste", {"pane_id": 1, "text": " pasted-$((2*3))", "submit": False}),
        runtime.ok("pane.send_key", {"pane_id": 1, "key": "left"}),
        runtime.ok("pane.send_key", {"pane_id": 1, "key": "end"}),
    ]
    for answer in answers:
        assert (answer["submitted"], answer["written"]) == (False, True), answer
        assert answer["state_change_seq"] == before
        assert the_pane(answer["snapshot"])["task_state"] != "running"
    assert runtime.pane(1)["state_change_seq"] == before
    assert runtime.read_text(1).splitlines()[-1].endswith("echo typed-$((6*7)) pasted-$((2*3))")
    entered = runtime.ok("pane.send_key", {"pane_id": 1, "key": "enter"})
    settled = wait_settled(runtime, assert_edge(entered))
    assert settled["state"] == "completed"
    assert "typed-42 pasted-6" in runtime.read_text(1)


def test_refused_inputs_say_nothing_was_written(runtime: Runtime) -> None:
    """R4.1-R4.3, R1.5: input to an exited pane and a bad key: `written: false`,
    `submitted: false` in the error details."""
    pane_id: int = runtime.ok("tab.new", {})["pane_id"]
    at_prompt(runtime, pane_id)
    runtime.ok("pane.prompt", {"pane_id": pane_id, "text": "exit"})
    wait_for(lambda: runtime.pane(pane_id)["exited"], 15, "the shell's exit")
    refused: list[tuple[str, dict[str, Any]]] = [
        ("pane.prompt", {"text": "echo nobody"}),
        ("pane.prompt", {"text": "echo nobody", "submit": False}),
        ("pane.paste", {"text": "echo nobody"}),
        ("pane.send_key", {"key": "enter"}),
    ]
    for method, params in refused:
        error = runtime.error(method, {"pane_id": pane_id, **params})
        assert error["code"] == "invalid_state", (method, error)
        assert (error["details"]["submitted"], error["details"]["written"]) == (False, False)
    bad_key = runtime.error("pane.send_key", {"pane_id": 1, "key": "q"})
    assert bad_key["code"] == "invalid_params"
    assert (bad_key["details"]["submitted"], bad_key["details"]["written"]) == (False, False)


def test_cli_reports_written_and_submitted(runtime: Runtime) -> None:
    """R8.1, R4.1: `pane send --no-submit` and `pane key` print the same fields."""
    at_prompt(runtime)
    typed = runtime.cli("pane", "send", "1", "echo cli-typed", "--no-submit", check=True)
    assert (typed.json["result"]["submitted"], typed.json["result"]["written"]) == (False, True)
    keyed = runtime.cli("pane", "key", "1", "enter", check=True).json["result"]
    assert (keyed["submitted"], keyed["written"]) == (True, True)
    assert wait_settled(runtime, keyed["state_change_seq"])["state"] == "completed"


# -- R9.4: agent.prompt and agent.paste ------------------------------------------------------------


@pytest.fixture
def agent_rt(tmp_path: Path) -> Iterator[Runtime]:
    with started_runtime(fake_agents_env(tmp_path)) as runtime:
        yield runtime


def test_agent_prompt_and_paste_answer_their_edge_and_fields(agent_rt: Runtime) -> None:
    """R9.4, R5.4: agent.prompt / agent.paste without Enter are written, not submitted; with
    Enter their snapshot shows the agent's pane `running` at the returned seq, and the turn's
    completion comes after it."""
    rt = agent_rt
    started = rt.ok("agent.start", {"name": "demo", "kind": "claude"}, timeout_s=60)
    pane_id = started["pane_id"]
    wait_for(
        lambda: rt.ok("agent.get", {"agent": "demo"})["state_source"] == "hook", 15, "start hook"
    )
    for method, text in (("agent.prompt", "first"), ("agent.paste", "second\nlines")):
        typed = rt.ok(method, {"agent": "demo", "text": text, "submit": False})
        assert (typed["submitted"], typed["written"]) == (False, True), typed
        assert the_pane(typed["snapshot"], pane_id)["task_state"] != "running"
        entered = rt.ok("pane.send_key", {"pane_id": pane_id, "key": "enter"})
        assert agent_turn(rt, assert_edge(entered, pane_id)) == f"final: {text}"
    for number in range(5):
        method = "agent.paste" if number % 2 else "agent.prompt"
        answer = rt.ok(method, {"agent": "demo", "text": f"turn {number}"})
        assert answer["generation"] == 1
        assert agent_turn(rt, assert_edge(answer, pane_id)) == f"final: turn {number}"


def agent_turn(rt: Runtime, seq: int) -> str | None:
    """Wait for the turn that started at ``seq`` to complete; its last message."""
    done = rt.ok(
        "agent.wait",
        {
            "agent": "demo",
            "generation": 1,
            "state": "completed",
            "after_seq": seq,
            "timeout_ms": WAIT_MS,
        },
        timeout_s=WAIT_MS / 1000 + 10,
    )
    assert done["state_change_seq"] > seq
    message: str | None = done["last_message"]
    return message
