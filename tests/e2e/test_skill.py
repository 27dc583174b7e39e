"""The Skill's copy-and-run commands run, top to bottom, against a fresh runtime (R7.8).

Every `pebrel ...` line of a fenced block in docs/skills/pebrel-runtime/SKILL.md is run with
bash, in order, against a runtime whose panes find the fake AI CLIs (tests/fakes) on PATH, and
must exit 0 with an envelope that says ok (or, for `--print`, the printed snippet).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent_fixtures import fake_agents_env, started_runtime
from tests.conftest import Runtime

SKILL = Path(__file__).resolve().parents[2] / "docs" / "skills" / "pebrel-runtime" / "SKILL.md"
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def skill_commands() -> list[str]:
    blocks = FENCE.findall(SKILL.read_text(encoding="utf-8"))
    return [
        line.strip()
        for block in blocks
        for line in block.splitlines()
        if line.strip().startswith("pebrel ")
    ]


@pytest.fixture
def agent_rt(tmp_path: Path) -> Iterator[Runtime]:
    with started_runtime(fake_agents_env(tmp_path)) as rt:
        yield rt


def test_skill_has_the_commands_it_promises() -> None:
    commands = skill_commands()
    for needed in ("pebrel env", "pebrel pane list", "pebrel pane exec", "pebrel agent start"):
        assert any(c.startswith(needed) for c in commands), needed
    assert any(c.startswith("pebrel agent send") and "--wait" in c for c in commands)
    assert any(c.startswith("pebrel agent read") for c in commands)


def collab_ids(rt: Runtime, tmp_path: Path) -> dict[str, str]:
    """What an agent's delivered texts give it: a session with a task assigned and a
    consultation on it (the Skill's collab commands read them from shell variables, #16)."""
    rt.ok("agent.start", {"name": "skill-agent", "kind": "claude"})
    rt.ok("collab.group.create", {"name": "skill"})
    session = rt.ok("collab.session.register", {"agent": "skill-agent", "group": "skill"})
    session_id = session["session"]["session_id"]
    made = rt.ok(
        "collab.task.create",
        {"group": "skill", "title": "README", "content": "Summarise it", "assignee": session_id},
    )
    task_id = made["task"]["task_id"]
    asked = rt.ok("collab.task.comment", {"task": task_id, "content": "Why?"})
    (tmp_path / "result.md").write_text("The README, summarised.\n")
    return {
        "SESSION": session_id,
        "TASK": task_id,
        "ATTEMPT": made["attempt_id"],
        "EVENT": asked["event_id"],
        "MESSAGE": asked["message_id"],
    }


def test_skill_commands_run_top_to_bottom(agent_rt: Runtime, tmp_path: Path) -> None:
    ids: dict[str, str] = {}
    for command in skill_commands():
        if "$TASK" in command and not ids:
            ids = collab_ids(agent_rt, tmp_path)
        proc = subprocess.run(
            ["bash", "-c", command],
            env={**agent_rt.env, **ids},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 0, f"{command} -> {proc.returncode}: {proc.stdout}{proc.stderr}"
        if "--print" in command:
            continue
        envelope = json.loads(proc.stdout)
        assert envelope["ok"], (command, envelope)
        if command.startswith("pebrel agent send"):
            assert envelope["result"]["state"] == "completed", envelope
            assert envelope["result"]["last_message"].startswith("final: "), envelope
