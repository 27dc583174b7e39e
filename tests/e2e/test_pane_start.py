"""Starting panes (R2.1, R3.2): profiles from settings.toml, shells that cannot start, and
requests sent to a pane right after it was created (its worker may still be connecting)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent_fixtures import started_runtime
from tests.conftest import Runtime, wait_for

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def profiled(tmp_path: Path, runtime_env: dict[str, str]) -> Iterator[Runtime]:
    """A runtime whose settings.toml has a working profile and a broken one."""
    data_dir = Path(runtime_env["PEBREL_DATA_DIR"])
    not_executable = tmp_path / "not-a-shell"
    not_executable.write_text("#!/bin/sh\necho never\n")
    not_executable.chmod(0o644)
    (data_dir / "settings.toml").write_text(
        f'[profiles.py]\nargv = ["{sys.executable}", "-q"]\nenv = {{ PROFILE_MARK = "p1" }}\n'
        f'[profiles.broken]\nargv = ["{not_executable}"]\n'
    )
    with started_runtime(runtime_env) as rt:
        yield rt


def pane_ids(rt: Runtime) -> list[int]:
    tabs = rt.snapshot()["windows"][0]["tabs"]
    return sorted(p["pane_id"] for tab in tabs for p in tab["panes"])


def test_a_profile_pane_runs_its_program(profiled: Runtime) -> None:
    split = {"window_id": 1, "pane_id": 1, "direction": "right", "shell": "py"}
    pane_id = profiled.ok("pane.split", split)["pane_id"]
    code = "import os; print(os.environ['PROFILE_MARK'] * 2)"
    profiled.ok("pane.prompt", {"window_id": 1, "pane_id": pane_id, "text": code})
    wait_for(lambda: "p1p1" in profiled.read_text(pane_id), 10, "the profile's python answered")


def test_a_shell_that_cannot_start_is_action_failed_and_adds_no_pane(profiled: Runtime) -> None:
    before = pane_ids(profiled)
    split = {"window_id": 1, "pane_id": 1, "direction": "down", "shell": "broken"}
    error = profiled.error("pane.split", split)
    assert error["code"] == "action_failed"
    assert "could not start the shell" in error["message"]
    assert pane_ids(profiled) == before


def test_requests_right_after_a_split_reach_the_new_pane(runtime: Runtime) -> None:
    """pane.split answers once the shell runs; the worker may still be connecting, and
    requests sent at once wait for it instead of failing."""
    created = []
    for _ in range(6):
        split = {"window_id": 1, "pane_id": 1, "direction": "right"}
        pane_id = runtime.ok("pane.split", split)["pane_id"]
        runtime.ok("pane.read", {"window_id": 1, "pane_id": pane_id})
        created.append(pane_id)
    for pane_id in created:
        assert runtime.run(pane_id, f"echo started-{pane_id}")["exit_code"] == 0
        assert f"started-{pane_id}" in runtime.read_text(pane_id)


def test_a_pane_config_larger_than_a_pipe_reaches_the_spare(runtime_env: dict[str, str]) -> None:
    """R3.4: the fork server hands a new pane's config (the runtime's environment included)
    to its spare through a 64 KiB pipe; a 240 KB environment arrives whole, in every pane."""
    big = {f"BIG_ENV_{i}": str(i) * 60_000 for i in range(4)}  # one string < 128 KiB
    script = 'printf %s "$BIG_ENV_0$BIG_ENV_1$BIG_ENV_2$BIG_ENV_3"'
    with started_runtime({**runtime_env, **big}) as rt:
        split = rt.ok("pane.split", {"pane_id": 1, "direction": "down"})
        for pane_id in (1, split["pane_id"]):
            result = rt.ok(
                "pane.exec", {"pane_id": pane_id, "argv": ["sh", "-c", script + " | wc -c"]}
            )
            assert result["exit_code"] == 0
            assert result["stdout"].strip() == str(sum(map(len, big.values())))
