"""Fixtures for agent tests: the fake AI CLIs of tests/fakes on a runtime's PATH.

`agent_runtime` is a started runtime (window 1, one bash pane) whose panes find the fakes
(`claude`, `codex`, ...) first on PATH; it is stopped and checked like the shared `runtime`.
Use it through `pytest_plugins = ["tests.agent_fixtures"]`, or wrap `started_runtime` in a
module's own fixture when a test needs extra environment (e.g. FAKE_AGENT_MODE).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Runtime, base_env, started_runtime

__all__ = [
    "FAKES_DIR",
    "FORMULA",
    "SPEC_WORKFLOW",
    "WEATHER",
    "fake_agents_env",
    "started_runtime",
]

FAKES_DIR = Path(__file__).resolve().parent / "fakes"

# Shared by test_orchestrate (tests/fakes) and test_review_agents (tests/review_fakes).
WEATHER = "查询并简要回答今天的天气"
FORMULA = "输出几组复杂数学公式供终端渲染测试"
#: The workflow of the spec's "单请求编排" section, word for word.
SPEC_WORKFLOW: dict[str, Any] = {
    "steps": [
        {"id": "right", "op": "split", "direction": "left_right"},
        {
            "id": "weather",
            "op": "agent_launch",
            "target": {"step": "right", "field": "pane_id"},
            "name": "weather",
            "kind": "claude",
            "initial_prompt": WEATHER,
        },
        {
            "id": "bottom",
            "op": "split",
            "target": {"step": "right", "field": "pane_id"},
            "direction": "top_bottom",
        },
        {
            "id": "formula",
            "op": "agent_launch",
            "target": {"step": "bottom", "field": "pane_id"},
            "name": "formula",
            "kind": "codex",
            "initial_prompt": FORMULA,
        },
    ],
    "on_error": "stop",
}


def fake_agents_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """base_env with the fakes first on PATH (plus any extra variables, e.g. FAKE_AGENT_MODE)."""
    env = base_env(tmp_path)
    env["PATH"] = f"{FAKES_DIR}{os.pathsep}{env['PATH']}"
    env.update(extra)
    return env


@pytest.fixture
def fake_agents_path() -> Path:
    """The directory of the fake AI CLIs (prepend it to PATH)."""
    return FAKES_DIR


@pytest.fixture
def agent_runtime(tmp_path: Path) -> Iterator[Runtime]:
    """A started runtime whose panes have the fake AI CLIs first on PATH."""
    with started_runtime(fake_agents_env(tmp_path)) as rt:
        yield rt
