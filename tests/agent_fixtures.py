"""Fixtures for agent tests: the fake AI CLIs of tests/fakes on a runtime's PATH.

`agent_runtime` is a started runtime (window 1, one bash pane) whose panes find the fakes
(`claude`, `codex`, ...) first on PATH; it is stopped and checked like the shared `runtime`.
Use it through `pytest_plugins = ["tests.agent_fixtures"]`, or wrap `started_runtime` in a
module's own fixture when a test needs extra environment (e.g. FAKE_AGENT_MODE).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Runtime, base_env, stop_and_check

FAKES_DIR = Path(__file__).resolve().parent / "fakes"


def fake_agents_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """base_env with the fakes first on PATH (plus any extra variables, e.g. FAKE_AGENT_MODE)."""
    env = base_env(tmp_path)
    env["PATH"] = f"{FAKES_DIR}{os.pathsep}{env['PATH']}"
    env.update(extra)
    return env


@contextlib.contextmanager
def started_runtime(env: dict[str, str]) -> Iterator[Runtime]:
    """A runtime of env's data dir, started, then stopped and checked for leftovers."""
    rt = Runtime(Path(env["PEBREL_DATA_DIR"]), env)
    started = rt.cli("runtime", "start", timeout=60)
    try:
        assert started.code == 0, started
        yield rt
    finally:
        stop_and_check(rt)


@pytest.fixture
def fake_agents_path() -> Path:
    """The directory of the fake AI CLIs (prepend it to PATH)."""
    return FAKES_DIR


@pytest.fixture
def agent_runtime(tmp_path: Path) -> Iterator[Runtime]:
    """A started runtime whose panes have the fake AI CLIs first on PATH."""
    with started_runtime(fake_agents_env(tmp_path)) as rt:
        yield rt
