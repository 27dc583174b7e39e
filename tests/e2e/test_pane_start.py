"""Starting panes (R2.1, R3.2): profiles from settings.toml, shells that cannot start, and
requests sent to a pane right after it was created (its worker may still be connecting)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pebrel.client import Client
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


def test_a_run_given_up_before_the_first_prompt_is_never_typed(runtime_env: dict[str, str]) -> None:
    """R6.2: pane.run on a shell that has not drawn its first prompt leaves the line with the
    pane's worker, to be typed at the prompt. Given up at its deadline, it is `invalid_state`
    with `submitted: false`, and stays untyped when the prompt comes later."""
    home = Path(runtime_env["HOME"])
    hold = home / "hold"
    hold.touch()
    (home / ".bashrc").write_text(f"while [ -e {hold} ]; do sleep 0.02; done\n")
    with started_runtime(runtime_env) as rt:
        error = rt.error(
            "pane.run", {"pane_id": 1, "command": "echo typed-$((6*7))", "timeout_ms": 300}
        )
        assert error["code"] == "invalid_state"
        assert error["details"]["submitted"] is False
        hold.unlink()
        # Typed at the first prompt had it not been dropped, it would come before this one.
        assert rt.run(1, "echo after-$((6*7))")["exit_code"] == 0
        screen = rt.read_text(1)
        assert "after-42" in screen
        assert "typed" not in screen


def test_a_failed_split_gives_the_split_pane_its_size_back(profiled: Runtime) -> None:
    """R3.4: the split pane is told its new size before the new shell starts; a split whose
    shell cannot start puts the old size back."""
    pane = profiled.pane(1)
    split = {"window_id": 1, "pane_id": 1, "direction": "right", "shell": "broken"}
    assert profiled.error("pane.split", split)["code"] == "action_failed"
    assert profiled.run(1, "echo before=$(stty size)")["exit_code"] == 0
    assert f"before={pane['rows']} {pane['cols']}" in profiled.read_text(1)
    ok = profiled.ok("pane.split", {"window_id": 1, "pane_id": 1, "direction": "right"})
    half, other = profiled.pane(1), profiled.pane(ok["pane_id"])
    assert half["cols"] + other["cols"] == pane["cols"]
    assert profiled.run(1, "echo after=$(stty size)")["exit_code"] == 0
    assert f"after={half['rows']} {half['cols']}" in profiled.read_text(1)
    assert profiled.run(ok["pane_id"], "echo new=$(stty size)")["exit_code"] == 0
    assert f"new={other['rows']} {other['cols']}" in profiled.read_text(ok["pane_id"])


def test_a_run_on_a_shell_that_exits_before_its_prompt_says_it_exited(
    runtime_env: dict[str, str],
) -> None:
    """R6.2: the line waits in the worker for a prompt that never comes: `invalid_state`
    with the pane's exit, not a bare "not at a prompt"."""
    home = Path(runtime_env["HOME"])
    with started_runtime(runtime_env) as rt:
        rt.run(1, "true")
        (home / ".bashrc").write_text("sleep 0.3; exit 3\n")
        pane_id = rt.ok("pane.split", {"pane_id": 1, "direction": "down"})["pane_id"]
        error = rt.error("pane.run", {"pane_id": pane_id, "command": "echo never"})
        assert error["code"] == "invalid_state"
        assert error["details"]["exited"] is True and error["details"]["submitted"] is False
        assert "status 3" in error["details"]["exit_reason"]


def test_a_run_waiting_for_the_first_prompt_of_a_pane_closed_meanwhile(
    runtime_env: dict[str, str],
) -> None:
    """R6.2, R3.4: another client closes the pane while pane.run waits for its first prompt:
    `target_not_found`, not submitted."""
    home = Path(runtime_env["HOME"])
    hold = home / "hold"
    with started_runtime(runtime_env) as rt:
        rt.run(1, "true")
        hold.touch()
        (home / ".bashrc").write_text(f"while [ -e {hold} ]; do sleep 0.02; done\n")
        pane_id = rt.ok("pane.split", {"pane_id": 1, "direction": "down"})["pane_id"]
        with Client(rt.data_dir) as waiting:
            request_id = waiting.send("pane.run", {"pane_id": pane_id, "command": "echo never"})
            # Requests of one connection are handled in order: once this is answered, the run
            # has armed its line (its first step runs as it is handled).
            assert waiting.call("runtime.snapshot")["ok"]
            refused = rt.error("pane.prompt", {"pane_id": pane_id, "text": "x"})
            assert refused["code"] == "input_in_progress"  # the waiting line holds the input
            rt.ok("pane.close", {"pane_id": pane_id, "confirm": True})
            answer = waiting.read_line()
        assert answer["id"] == request_id
        error = answer["error"]
        assert error["code"] == "target_not_found"
        assert error["details"]["submitted"] is False
