"""Named agents end to end with the fake AI CLIs (issue 4: R9.1-R9.4, R9.7).

The fakes (tests/fakes, stand-ins for real CLIs) report through hooks, program status (OSC 1337
SetUserVar), or nothing at all (screen rules only), per FAKE_AGENT_MODE in the runtime's env.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agent_fixtures import fake_agents_env, started_runtime
from tests.conftest import Runtime, at_prompt, wait_for


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    with started_runtime(fake_agents_env(tmp_path)) as runtime:
        yield runtime


def runtime_in_mode(tmp_path: Path, mode: str) -> Any:
    return started_runtime(fake_agents_env(tmp_path, FAKE_AGENT_MODE=mode))


def cli_ok(rt: Runtime, *args: str) -> dict[str, Any]:
    result = rt.cli(*args)
    assert result.code == 0, f"pebrel {' '.join(args)} -> {result.code}: {result.stdout}"
    envelope = result.json
    assert envelope["ok"], envelope
    payload: dict[str, Any] = envelope["result"]
    return payload


def cli_error(rt: Runtime, *args: str) -> dict[str, Any]:
    result = rt.cli(*args)
    assert result.code == 1, f"pebrel {' '.join(args)} -> {result.code}: {result.stdout}"
    envelope = result.json
    assert envelope["ok"] is False, envelope
    error: dict[str, Any] = envelope["error"]
    return error


def agents(rt: Runtime) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = cli_ok(rt, "agent", "list")["agents"]
    return listed


def test_start_send_wait_read(rt: Runtime) -> None:
    started = cli_ok(rt, "agent", "start", "demo", "--kind", "claude")
    assert (started["name"], started["kind"], started["generation"]) == ("demo", "claude", 1)
    assert started["status"] == "active" and started["state"] != "running"
    assert started["agent_id"].startswith("agt_") or started["agent_id"]
    listed = agents(rt)
    assert [(a["name"], a["kind"]) for a in listed] == [("demo", "claude")]
    # Ready may be seen from the process before the start hook lands; the hook follows.
    hooked = wait_for(
        lambda: [a for a in agents(rt) if a["state_source"] == "hook"], 10, "the start hook"
    )
    assert hooked[0]["session_id"] and hooked[0]["state"] == "idle"

    done = cli_ok(rt, "agent", "send", "demo", "hello world", "--wait")
    assert done["state"] == "completed" and done["submitted"] is True
    assert done["generation"] == 1 and done["last_message"] == "final: hello world"
    text = cli_ok(rt, "agent", "read", "demo", "--lines", "40")["text"]
    assert "answer: dlrow olleh" in text

    by_id = cli_ok(rt, "ctl", "agent-get", "--agent", started["agent_id"], "--generation", "1")
    assert by_id["name"] == "demo" and by_id["last_message"] == "final: hello world"
    ctl_read = cli_ok(rt, "ctl", "agent-read", "--agent", "demo", "--generation", "1")
    assert "answer: dlrow olleh" in ctl_read["text"]
    assert [a["name"] for a in cli_ok(rt, "ctl", "agents")["agents"]] == ["demo"]


def test_ctl_prompt_then_wait_and_paste(rt: Runtime) -> None:
    cli_ok(rt, "agent", "start", "demo", "--kind", "codex")
    sent = cli_ok(
        rt, "ctl", "agent-prompt", "--agent", "demo", "--generation", "1", "--text", "abc"
    )
    assert sent["submitted"] is True
    waited = cli_ok(
        rt,
        "ctl",
        "agent-wait",
        "--agent",
        "demo",
        "--generation",
        "1",
        "--state",
        "completed",
        "--after-seq",
        str(sent["state_change_seq"]),
    )
    assert waited["last_message"] == "final: abc"
    pasted = cli_ok(rt, "agent", "paste", "demo", "line one\nline two", "--wait")
    assert pasted["state"] == "completed"
    assert pasted["last_message"] == "final: line one\nline two"


def test_no_submit_with_wait_is_a_usage_error(rt: Runtime) -> None:
    assert rt.cli("agent", "send", "demo", "x", "--no-submit", "--wait").code == 2


def test_approval_gives_attention_from_hooks(rt: Runtime) -> None:
    cli_ok(rt, "agent", "start", "demo", "--kind", "claude")
    asked = cli_ok(rt, "agent", "send", "demo", "please approve this", "--wait")
    assert asked["state"] == "attention"
    listed = agents(rt)[0]
    assert (listed["state"], listed["state_source"]) == ("attention", "hook")
    done = cli_ok(rt, "agent", "send", "demo", "y", "--wait")
    assert done["state"] == "completed"
    assert done["last_message"] == "final: please approve this"


def test_screen_rules_when_the_agent_reports_nothing(tmp_path: Path) -> None:
    with runtime_in_mode(tmp_path, "none") as rt:
        cli_ok(rt, "agent", "start", "demo", "--kind", "claude")
        asked = cli_ok(rt, "agent", "send", "demo", "approve it", "--wait", "attention")
        assert asked["state"] == "attention"
        listed = agents(rt)[0]
        assert listed["state"] == "attention"
        assert listed["state_source"] == "screen" and listed["state_rule"]
        done = cli_ok(rt, "agent", "send", "demo", "y", "--wait")
        assert done["state"] != "running"
        assert agents(rt)[0]["state"] not in ("attention", "completed")


@pytest.mark.parametrize("mode", ["program", "osc26"])
def test_program_status(tmp_path: Path, mode: str) -> None:
    with runtime_in_mode(tmp_path, mode) as rt:
        cli_ok(rt, "agent", "start", "demo", "--kind", "claude")
        done = cli_ok(rt, "agent", "send", "demo", "ping", "--wait")
        assert done["state"] == "completed"
        listed = agents(rt)[0]
        assert (listed["state"], listed["state_source"]) == ("completed", "program")
        assert listed["session_id"]


def test_exit_and_restart_give_a_new_generation(rt: Runtime) -> None:
    started = cli_ok(rt, "agent", "start", "demo", "--kind", "claude")
    pane = str(started["pane_id"])
    cli_ok(rt, "agent", "send", "demo", "/exit")

    def exited() -> dict[str, Any] | None:
        result = rt.cli("agent", "get", "demo", "--generation", "1")
        return result.json["error"] if result.code == 1 else None

    assert wait_for(exited, 15, "agent_exited")["code"] == "agent_exited"
    assert agents(rt) == []
    refused = cli_error(rt, "agent", "send", "demo", "hello", "--generation", "1")
    assert refused["code"] == "agent_exited"
    assert "hello" not in rt.read_text(int(pane))

    cli_ok(rt, "pane", "send", pane, "claude")

    def regenerated() -> dict[str, Any] | None:
        result = rt.cli("agent", "get", "demo")
        got: dict[str, Any] | None = result.json.get("result") if result.code == 0 else None
        return got if got and got["generation"] == 2 and got["state"] == "idle" else None

    second = wait_for(regenerated, 20, "generation 2")
    assert second["agent_id"] == started["agent_id"]
    for verb in (("send", "demo", "to the old one"), ("read", "demo"), ("get", "demo")):
        error = cli_error(rt, "agent", *verb, "--generation", "1")
        assert error["code"] == "agent_replaced", error
    error = cli_error(rt, "agent", "wait", "demo", "--generation", "1", "--timeout-ms", "1000")
    assert error["code"] == "agent_replaced"
    assert "to the old one" not in rt.read_text(int(pane))
    done = cli_ok(rt, "agent", "send", "demo", "again", "--generation", "2", "--wait")
    assert (done["generation"], done["last_message"]) == (2, "final: again")


def test_two_agents_in_parallel(rt: Runtime) -> None:
    cli_ok(rt, "agent", "start", "one", "--kind", "claude")
    cli_ok(rt, "agent", "start", "two", "--kind", "codex")
    assert sorted((a["name"], a["kind"]) for a in agents(rt)) == [
        ("one", "claude"),
        ("two", "codex"),
    ]
    procs = [
        subprocess.Popen(
            ["pebrel", "agent", "send", name, f"task for {name}", "--wait"],
            env=rt.env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in ("one", "two")
    ]
    outputs = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
    assert [o["result"]["last_message"] for o in outputs] == [
        "final: task for one",
        "final: task for two",
    ]


def test_name_conflict_and_unknown_kind(rt: Runtime) -> None:
    cli_ok(rt, "agent", "start", "demo", "--kind", "claude")
    assert cli_error(rt, "agent", "start", "demo", "--kind", "codex")["code"] == (
        "agent_name_conflict"
    )
    assert cli_error(rt, "agent", "start", "x", "--kind", "gpt")["code"] == "invalid_params"
    resume = cli_error(rt, "agent", "start", "y", "--kind", "pi", "--resume", "abc")
    assert resume["code"] == "invalid_params"
    assert cli_error(rt, "agent", "get", "nobody")["code"] == "target_not_found"


@pytest.mark.parametrize("kind", ["opencode", "cursor", "pi", "omp", "kimi"])
def test_every_kind_starts(rt: Runtime, kind: str) -> None:
    started = cli_ok(rt, "agent", "start", f"a-{kind}", "--kind", kind)
    assert started["kind"] == kind
    assert [a["kind"] for a in agents(rt)] == [kind]


def test_ordinary_commands_are_never_agents(rt: Runtime, tmp_path: Path) -> None:
    at_prompt(rt)
    (tmp_path / "claude.md").write_text("claude\n" * 5)
    (tmp_path / "codex.py").write_text("print('codex')\n")
    viewer = "vim" if shutil.which("vim") else "less"
    commands = [
        "sleep 30",
        "bash -c 'sleep 20; echo make done'",
        f"{viewer} {tmp_path / 'codex.py'}",
        f"cat {tmp_path / 'claude.md'} && sleep 20",
        "grep claude",
    ]
    panes = [1]
    for _ in commands[1:]:
        panes.append(rt.ok("tab.new", {"window_id": 1})["pane_id"])
    for pane_id, command in zip(panes, commands, strict=True):
        at_prompt(rt, pane_id)
        rt.ok("pane.prompt", {"window_id": 1, "pane_id": pane_id, "text": command})
    wait_for(lambda: all(rt.pane(p)["task_state"] == "running" for p in panes), 15, "all running")
    # A real (fake) agent started afterwards is recognised, so detection had its chance.
    cli_ok(rt, "agent", "start", "control", "--kind", "claude")
    assert [a["name"] for a in agents(rt)] == ["control"]
    assert all("agent" not in rt.pane(p) for p in panes)
    assert all(rt.pane(p)["task_state"] == "running" for p in panes)
