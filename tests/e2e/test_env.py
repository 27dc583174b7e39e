"""The environment contract inside panes and `pebrel env` (R7.1, R7.3, R7.5, R7.6, R7.7)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pebrel import __version__
from pebrel.cli.env_cmd import IN_AGENT_PANE, IN_GIT_REPO, WITH_IDS
from tests.agent_fixtures import fake_agents_env, started_runtime
from tests.conftest import BIN_DIR, PEBREL, Runtime, base_env, stop_and_check

CONTRACT_KEYS = ("WINDOW_ID", "PANE_ID", "CLI", "BIN_DIR")
#: Each example answers in well under a second; a hang is reported, not waited out.
EXAMPLE_TIMEOUT_S = 30


def pane_environ(
    rt: Runtime, tmp_path: Path, pane_id: int = 1, window_id: int = 1
) -> dict[str, str]:
    """What `env` prints inside the pane (run there, written NUL-separated to a file)."""
    out = tmp_path / f"env-{window_id}-{pane_id}.bin"
    result = rt.run(pane_id, f"env -0 > {shlex.quote(str(out))}", window_id)
    assert result["exit_code"] == 0, result
    pairs = [item.split("=", 1) for item in out.read_text().split("\0") if item]
    return {key: value for key, value in pairs}


def env_json(env: dict[str, str], *args: str) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run(
        [PEBREL, "env", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    loaded: dict[str, Any] = json.loads(proc.stdout)
    return proc.returncode, loaded


# -- R7.1 / R7.7 inside a pane ----------------------------------------------------------------


def test_pane_env_has_term_program(runtime: Runtime, tmp_path: Path) -> None:
    """R7.1: TERM_PROGRAM=pebrel and TERM_PROGRAM_VERSION is the Pebrel version."""
    env = pane_environ(runtime, tmp_path)
    assert env["TERM_PROGRAM"] == "pebrel"
    assert env["TERM_PROGRAM_VERSION"] == __version__


def test_pane_env_names_its_window_and_pane(runtime: Runtime, tmp_path: Path) -> None:
    """R7.1, R7.7: PEBREL_WINDOW_ID=1 and PEBREL_PANE_ID=1 in window 1's pane 1."""
    env = pane_environ(runtime, tmp_path)
    assert (env["PEBREL_WINDOW_ID"], env["PEBREL_PANE_ID"]) == ("1", "1")


def test_pane_env_cli_is_absolute_executable_and_first_on_path(
    runtime: Runtime, tmp_path: Path
) -> None:
    """R7.1: PEBREL_CLI is an absolute executable; its directory, PEBREL_BIN_DIR, leads PATH."""
    env = pane_environ(runtime, tmp_path)
    cli = env["PEBREL_CLI"]
    assert os.path.isabs(cli) and os.path.isfile(cli) and os.access(cli, os.X_OK)
    assert os.path.dirname(cli) == env["PEBREL_BIN_DIR"]
    assert env["PATH"].split(os.pathsep)[0] == env["PEBREL_BIN_DIR"]


def test_pane_env_nebula_aliases_mirror(runtime: Runtime, tmp_path: Path) -> None:
    """R7.1, R7.7: every NEBULA_* alias equals its PEBREL_* value."""
    env = pane_environ(runtime, tmp_path)
    for key in CONTRACT_KEYS:
        assert env[f"NEBULA_{key}"] == env[f"PEBREL_{key}"], key


def test_pane_in_window_2_says_window_2(runtime: Runtime, tmp_path: Path) -> None:
    """R7.7: a pane of window 2 has PEBREL_WINDOW_ID=2 (and its alias)."""
    created = runtime.ok("window.create")
    assert created["window_id"] == 2
    env = pane_environ(runtime, tmp_path, created["pane_id"], 2)
    assert env["PEBREL_WINDOW_ID"] == env["NEBULA_WINDOW_ID"] == "2"
    assert env["PEBREL_PANE_ID"] == str(created["pane_id"])


# -- R7.3 nesting ----------------------------------------------------------------------------


@pytest.fixture
def nested_runtime(tmp_path: Path) -> Iterator[Runtime]:
    """A runtime started as if from inside another Pebrel pane (inherited contract values)."""
    env = base_env(tmp_path)
    env["PATH"] = os.pathsep.join([str(BIN_DIR), "/usr/bin", str(BIN_DIR), "/bin"])
    env.update(
        {
            "TERM_PROGRAM": "pebrel",
            "PEBREL_WINDOW_ID": "7",
            "PEBREL_PANE_ID": "99",
            "NEBULA_WINDOW_ID": "7",
            "NEBULA_PANE_ID": "99",
            "PEBREL_CLI": str(BIN_DIR / "pebrel"),
            "PEBREL_BIN_DIR": str(BIN_DIR),
        }
    )
    rt = Runtime(Path(env["PEBREL_DATA_DIR"]), env)
    try:
        started = rt.cli("runtime", "start")
        assert started.code == 0, started
        yield rt
    finally:
        stop_and_check(rt)


def test_nested_runtime_does_not_grow_path(nested_runtime: Runtime, tmp_path: Path) -> None:
    """R7.3: PATH that already holds PEBREL_BIN_DIR (twice) has it exactly once in a pane."""
    env = pane_environ(nested_runtime, tmp_path)
    path = env["PATH"].split(os.pathsep)
    assert path.count(env["PEBREL_BIN_DIR"]) == 1
    assert path[0] == env["PEBREL_BIN_DIR"]


def test_nested_runtime_panes_get_their_own_ids(nested_runtime: Runtime, tmp_path: Path) -> None:
    """R7.3, R7.1: inherited PEBREL_PANE_ID=99 / WINDOW_ID=7 are replaced by the pane's own."""
    env = pane_environ(nested_runtime, tmp_path)
    assert (env["PEBREL_WINDOW_ID"], env["PEBREL_PANE_ID"]) == ("1", "1")
    assert (env["NEBULA_WINDOW_ID"], env["NEBULA_PANE_ID"]) == ("1", "1")


# -- R7.5 pebrel env --------------------------------------------------------------------------


def test_env_without_runtime_succeeds_and_says_what_is_missing(tmp_path: Path) -> None:
    """R7.5: no runtime, outside a pane: exit 0, reachable false, the gaps listed."""
    env = base_env(tmp_path)
    proc = subprocess.run(
        [PEBREL, "env", "--pretty"], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc
    assert proc.stdout.startswith("{\n  ")
    result = json.loads(proc.stdout)["result"]
    assert result["runtime"]["reachable"] is False
    assert result["in_pebrel_pane"] is False
    assert any("runtime" in entry for entry in result["missing"]), result["missing"]
    assert any("pane" in entry for entry in result["missing"]), result["missing"]


def test_env_with_runtime_is_reachable(runtime: Runtime) -> None:
    """R7.5: with a runtime, reachable true with its pid; outside a pane says so."""
    code, envelope = env_json(runtime.env, "--pretty")
    assert code == 0
    result = envelope["result"]
    assert result["runtime"]["reachable"] is True
    assert result["runtime"]["pid"] == runtime.pid
    assert result["in_pebrel_pane"] is False
    assert not any("runtime" in entry for entry in result["missing"])


def test_env_inside_a_pane_reports_its_identity(runtime: Runtime, tmp_path: Path) -> None:
    """R7.5: `pebrel env` run in pane 1 -> in_pebrel_pane, its ids, nothing missing."""
    out = tmp_path / "env.json"
    result = runtime.run(1, f"pebrel env > {shlex.quote(str(out))}")
    assert result["exit_code"] == 0, result
    info = json.loads(out.read_text())["result"]
    assert info["in_pebrel_pane"] is True
    assert (info["window_id"], info["pane_id"]) == (1, 1)
    assert info["runtime"]["reachable"] is True
    assert info["runtime"]["pid"] == runtime.pid
    assert info["missing"] == []
    assert os.path.isabs(info["cli"])


def test_env_falls_back_to_legacy_nebula_variables(runtime: Runtime) -> None:
    """R7.6: with only NEBULA_PANE_ID / NEBULA_WINDOW_ID set, env reports those ids."""
    legacy = {
        **runtime.env,
        "TERM_PROGRAM": "nebula",
        "NEBULA_PANE_ID": "3",
        "NEBULA_WINDOW_ID": "2",
    }
    code, envelope = env_json(legacy)
    assert code == 0
    result = envelope["result"]
    assert result["in_pebrel_pane"] is True
    assert (result["window_id"], result["pane_id"]) == (2, 3)


def test_env_lists_every_cli_command() -> None:
    """R7.5: `pebrel env` has an example for every command of the CLI."""
    import click

    from pebrel.cli.env_cmd import commands
    from pebrel.cli.main import main

    def walk(group: click.Group, prefix: list[str]) -> set[str]:
        # list_commands/get_command, not group.commands: the groups load commands lazily.
        ctx = click.Context(group)
        found: set[str] = set()
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            assert command is not None, name
            if isinstance(command, click.Group):
                found |= walk(command, [*prefix, name])
            else:
                found.add(" ".join([*prefix, name]))
        return found

    listed = {row["command"] for row in commands(1, 1)}
    assert walk(main, []) - listed == set()


def test_every_env_example_runs(tmp_path: Path) -> None:
    """R7.5: each `commands[].example` runs in order and exits 0 (the agent examples with the
    fake AI CLIs of tests/fakes on PATH; `run_in` examples where they say)."""
    env = fake_agents_env(tmp_path)
    repo = tmp_path / "repo"
    repo.mkdir()
    for argv in (
        ["git", "init", "-q"],
        [
            "git",
            "-c",
            "user.email=t@example.invalid",
            "-c",
            "user.name=t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "init",
        ],
    ):
        subprocess.run(argv, cwd=repo, check=True, capture_output=True)
    with started_runtime(env) as runtime:
        code, envelope = env_json(runtime.env)
        assert code == 0
        rows = envelope["result"]["commands"]
        assert rows[-1]["example"] == "pebrel runtime stop"
        failures: list[tuple[str, str]] = []
        ids: dict[str, str] = {}  # the collab examples' $SESSION, $TASK, ... (WITH_IDS)
        for row in rows:
            example, run_in = row["example"], row.get("run_in")
            run_env, cwd = {**runtime.env, **ids}, None
            if run_in == IN_AGENT_PANE:
                helper = runtime.ok("agent.get", {"agent": "helper"})
                run_env["PEBREL_WINDOW_ID"] = str(helper["window_id"])
                run_env["PEBREL_PANE_ID"] = str(helper["pane_id"])
            elif run_in == IN_GIT_REPO:
                cwd = str(repo)
            try:
                proc = subprocess.run(
                    ["bash", "-c", example],
                    env=run_env,
                    cwd=cwd,
                    capture_output=True,
                    text=True,
                    timeout=EXAMPLE_TIMEOUT_S,
                    stdin=subprocess.DEVNULL,
                )
            except subprocess.TimeoutExpired:
                failures.append((example, f"no answer within {EXAMPLE_TIMEOUT_S} s"))
                continue
            if proc.returncode != 0:
                failures.append((example, f"exit {proc.returncode}: {proc.stdout.strip()[:300]}"))
            elif example.startswith("pebrel collab"):
                ids.update(collab_ids(example, json.loads(proc.stdout)["result"]))
        assert failures == []
        assert run_in_kinds(rows) <= {None, IN_AGENT_PANE, IN_GIT_REPO, WITH_IDS}


def run_in_kinds(rows: list[dict[str, Any]]) -> set[str | None]:
    return {row.get("run_in") for row in rows}


def collab_ids(example: str, result: dict[str, Any]) -> dict[str, str]:
    """The ids a collab example's answer gives the examples after it (cli/env_cmd.py WITH_IDS)."""
    found: dict[str, str] = {}
    session = result.get("session")
    if isinstance(session, dict) and "session_id" in session:
        found["SESSION"] = session["session_id"]
    task = result.get("task")
    if isinstance(task, dict) and "task_id" in task:
        found["TASK"] = task["task_id"]
        found["REVISION"] = str(task["revision"])
    for key, name in (("attempt_id", "ATTEMPT"), ("message_id", "MESSAGE"),
                      ("decision_id", "DECISION")):  # fmt: skip
        if isinstance(result.get(key), str):
            found[name] = result[key]
    if " task comment " in f" {example} ":
        found["EVENT"] = result["event_id"]
    return found
