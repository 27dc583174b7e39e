"""agent.launch: a named agent's own command line in a shell of its own (I4.2, #18).

Against a real runtime with the fake AI CLIs of tests/fakes first on PATH (stand-ins). Each
refusal answers `invalid_state` with its `details.reason` and types nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agent_fixtures import fake_agents_env
from tests.conftest import Runtime, at_prompt, started_runtime, wait_for

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    with started_runtime(fake_agents_env(tmp_path)) as started:
        yield started


def window_ids(rt: Runtime) -> list[int]:
    return [w["window_id"] for w in rt.snapshot()["windows"]]


def refused(rt: Runtime, params: dict[str, Any], reason: str) -> dict[str, Any]:
    before = rt.snapshot()["windows"]
    error = rt.error("agent.launch", params)
    assert error["code"] == "invalid_state" and error["details"]["reason"] == reason, error
    after = rt.snapshot()["windows"]
    assert [w["window_id"] for w in after] == [w["window_id"] for w in before]
    return error


def test_a_new_window_gets_the_quoted_command_and_the_named_agent(
    rt: Runtime, tmp_path: Path
) -> None:
    work = tmp_path / "a dir; with spaces"
    work.mkdir()
    before = window_ids(rt)
    launched = rt.ok(
        "agent.launch",
        {
            "name": "launched",
            "kind": "claude",
            "argv": ["claude", "--model", "x y"],
            "cwd": str(work),
        },
    )
    assert launched["window_id"] not in before and launched["tab_index"] == 0
    assert launched["runtime_id"] == rt.snapshot()["runtime_id"]
    assert launched["agent"]["name"] == "launched" and launched["agent"]["kind"] == "claude"
    pane = rt.pane(launched["pane_id"], launched["window_id"])
    assert pane["cwd"] == str(work) and pane["pid"] == launched["shell_pid"]
    wait_for(
        lambda: rt.pane(launched["pane_id"], launched["window_id"]).get("agent", {}).get("pid"),
        20,
        "the agent seen, with its process group",
    )
    agent = rt.ok("agent.get", {"agent": "launched"})
    assert agent["agent_id"] == launched["agent"]["agent_id"]
    # The name is held now.
    error = rt.error(
        "agent.launch", {"name": "launched", "kind": "claude", "argv": ["claude"], "cwd": str(work)}
    )
    assert error["code"] == "agent_name_conflict"


def test_refusals_type_nothing(rt: Runtime, tmp_path: Path) -> None:
    at_prompt(rt)
    cwd = str(tmp_path)
    base = {"kind": "claude", "argv": ["claude"], "cwd": cwd}
    error = rt.error("agent.launch", {**base, "name": "k", "kind": "no-such-kind"})
    assert error["code"] == "invalid_params"
    error = rt.error("agent.launch", {**base, "name": "c", "argv": ["claude", "a\x1b[2J"]})
    assert error["code"] == "invalid_params"
    shell = rt.pane(1)["pid"]
    refused(
        rt,
        {**base, "name": "s", "window_id": 1, "pane_id": 1, "shell_pid": shell + 1},
        "shell_changed",
    )
    rt.ok("pane.prompt", {"window_id": 1, "pane_id": 1, "text": "sleep 300", "submit": True})
    wait_for(lambda: rt.pane(1)["task_state"] == "running", 20, "the pane busy")
    refused(rt, {**base, "name": "b", "window_id": 1, "pane_id": 1}, "not_at_prompt")
    rt.ok(
        "pane.send_key", {"window_id": 1, "pane_id": 1, "key": "c", "modifiers": {"control": True}}
    )
    wait_for(lambda: rt.pane(1)["task_state"] != "running", 20, "the pane idle")
    rt.ok("pane.split", {"window_id": 1, "pane_id": 1, "direction": "left_right"})
    refused(rt, {**base, "name": "t", "window_id": 1, "pane_id": 1}, "not_single_pane")
    assert (
        "agent" not in rt.pane(1)
        and rt.error("agent.get", {"agent": "t"})["code"] == "target_not_found"
    )


def test_a_pane_alone_in_its_window_is_reused_with_a_cd(rt: Runtime, tmp_path: Path) -> None:
    at_prompt(rt)
    launched = rt.ok(
        "agent.launch",
        {
            "name": "reused",
            "kind": "claude",
            "argv": ["claude"],
            "cwd": str(tmp_path),
            "window_id": 1,
            "pane_id": 1,
            "shell_pid": rt.pane(1)["pid"],
        },
    )
    assert (launched["window_id"], launched["pane_id"]) == (1, 1) and window_ids(rt) == [1]
    wait_for(lambda: rt.pane(1).get("agent", {}).get("name") == "reused", 20, "the agent")
    pid = wait_for(lambda: rt.pane(1)["agent"].get("pid"), 20, "the agent's process group")
    assert os.readlink(f"/proc/{pid}/cwd") == str(tmp_path)  # typed after `cd -- CWD &&`
