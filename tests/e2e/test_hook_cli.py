"""`pebrel hook`: always exit 0, silently and fast; never waits on stdin (issue 4.2, TRAPS).

Also `pebrel agent hooks install`: merges into the user's settings file through the CLI, with a
backup, idempotently, and refuses a file it cannot merge.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import PEBREL, Runtime, at_prompt, base_env

PANE_ENV = {"PEBREL_WINDOW_ID": "1", "PEBREL_PANE_ID": "1"}


def hook(
    env: dict[str, str], *args: str, stdin: bytes | None = None, **extra: str
) -> tuple[subprocess.CompletedProcess[bytes], float]:
    started = time.monotonic()
    proc = subprocess.run(
        [PEBREL, "hook", *args],
        env={**env, **extra},
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        timeout=30,
    )
    return proc, time.monotonic() - started


def assert_silent_success(proc: subprocess.CompletedProcess[bytes]) -> None:
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (("stop", "--kind", "claude"), {}),
        (("stop", "--kind", "claude"), PANE_ENV),
        (("stop", "--kind", "not-a-kind"), PANE_ENV),
        (("no-such-event", "--kind", "claude"), PANE_ENV),
        ((), PANE_ENV),
        (("--kind",), PANE_ENV),
        (("stop", "--kind", "codex", "{not json"), PANE_ENV),
        (("stop", "--kind", "codex", "--bogus", "-x", "--help"), PANE_ENV),
        (("stop", "--kind", "claude"), {"PEBREL_WINDOW_ID": "x", "PEBREL_PANE_ID": "-1"}),
    ],
    ids=[
        "outside-a-pane",
        "no-runtime",
        "bad-kind",
        "bad-event",
        "no-arguments",
        "dangling-option",
        "garbage-payload",
        "unknown-options",
        "garbage-pane-ids",
    ],
)
def test_hook_always_exits_0_silently(
    tmp_path: Path, args: tuple[str, ...], extra: dict[str, str]
) -> None:
    proc, elapsed = hook({**base_env(tmp_path), **extra}, *args)
    assert_silent_success(proc)
    assert elapsed < 2


@pytest.mark.parametrize(
    "stdin",
    [b"", b"{garbage", b"\xff\xfe\x00binary", b"[1, 2, 3]", b'{"session_id": 5}', b"x" * 300_000],
    ids=["empty", "broken-json", "binary", "json-array", "wrong-types", "large"],
)
def test_hook_with_garbage_stdin_exits_0(tmp_path: Path, stdin: bytes) -> None:
    proc, elapsed = hook(base_env(tmp_path), "stop", "--kind", "claude", stdin=stdin, **PANE_ENV)
    assert_silent_success(proc)
    assert elapsed < 2


def test_hook_does_not_wait_for_a_stdin_that_never_ends(tmp_path: Path) -> None:
    """A pipe nobody writes to or closes: the hook gives up on it after a short deadline."""
    env = {**base_env(tmp_path), **PANE_ENV}
    read_end, write_end = os.pipe()
    try:
        started = time.monotonic()
        proc = subprocess.run(
            [PEBREL, "hook", "stop", "--kind", "claude"],
            env=env,
            stdin=read_end,
            capture_output=True,
            timeout=30,
        )
        elapsed = time.monotonic() - started
    finally:
        os.close(read_end)
        os.close(write_end)
    assert_silent_success(proc)
    assert elapsed < 1.5


def test_hook_with_closed_empty_stdin_is_fast(tmp_path: Path) -> None:
    proc, elapsed = hook(base_env(tmp_path), "stop", "--kind", "claude", stdin=b"", **PANE_ENV)
    assert_silent_success(proc)
    assert elapsed < 1


def test_hook_inside_a_runtime_pane_exits_0_silently(runtime: Runtime) -> None:
    """Inside a pane the hook reaches the runtime (agent.hook) and still prints nothing."""
    at_prompt(runtime)
    marker_before, marker_after = "HOOK-BEFORE", "HOOK-AFTER"
    command = (
        f"echo {marker_before}; "
        'echo \'{"session_id": "s-1", "last_assistant_message": "done"}\' '
        '| "$PEBREL_CLI" hook stop --kind claude --session-id s-1; '
        f"echo {marker_after}$?"
    )
    result = runtime.run(1, command)
    assert result["exit_code"] == 0
    text = runtime.wait_text(1, f"{marker_after}0")
    between = text.split(f"{marker_before}\n")[-1].split(marker_after)[0]
    assert between == "", f"the hook printed something: {between!r}"


def test_agent_hook_reaches_the_router(runtime: Runtime) -> None:
    """The request the hook sends is one the router understands (accepted or a reason)."""
    answer = runtime.ok(
        "agent.hook", {"window_id": 1, "pane_id": 1, "event": "stop", "kind": "claude"}
    )
    assert answer["accepted"] is False and answer["reason"]


# ---- pebrel agent hooks install ---------------------------------------------------------------


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PEBREL, "agent", "hooks", "install", *args],
        env=base_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )


def test_hooks_install_claude_merges_idempotently_with_a_backup(tmp_path: Path) -> None:
    settings = tmp_path / "home" / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    mine: dict[str, Any] = {
        "model": "x",
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]},
    }
    settings.write_text(json.dumps(mine))
    first = cli(tmp_path, "--kind", "claude")
    assert first.returncode == 0, first
    assert json.loads(first.stdout)["result"]["changed"] is True
    merged = json.loads(settings.read_text())
    assert merged["model"] == "x" and merged["hooks"]["Stop"][0] == mine["hooks"]["Stop"][0]
    commands = [h["command"] for e in merged["hooks"]["Stop"] for h in e["hooks"]]
    assert any("hook stop --kind claude" in c for c in commands)
    backup = settings.with_name("settings.json.pebrel-backup")
    assert json.loads(backup.read_text()) == mine
    text = settings.read_text()
    second = cli(tmp_path, "--kind", "claude")
    assert second.returncode == 0 and json.loads(second.stdout)["result"]["changed"] is False
    assert settings.read_text() == text


def test_hooks_install_refuses_invalid_json_and_changes_nothing(tmp_path: Path) -> None:
    settings = tmp_path / "custom.json"
    settings.write_text("{broken")
    proc = cli(tmp_path, "--kind", "claude", "--settings", str(settings))
    assert proc.returncode == 1
    envelope = json.loads(proc.stdout)
    assert envelope["ok"] is False and "not valid JSON" in envelope["error"]["message"]
    assert settings.read_text() == "{broken"
    assert not settings.with_name("custom.json.pebrel-backup").exists()


def test_hooks_install_codex(tmp_path: Path) -> None:
    config = tmp_path / "home" / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('model = "o3"\n\n[tui]\nnotifications = true\n')
    assert cli(tmp_path, "--kind", "codex").returncode == 0
    parsed = tomllib.loads(config.read_text())
    assert parsed["model"] == "o3" and parsed["tui"] == {"notifications": True}
    assert parsed["notify"][:2] == ["sh", "-c"] and "hook stop --kind codex" in parsed["notify"][2]
    printed = cli(tmp_path, "--kind", "codex", "--print")
    assert printed.stdout.strip() in config.read_text()
    foreign = tmp_path / "foreign.toml"
    foreign.write_text('notify = ["notify-send"]\n')
    refused = cli(tmp_path, "--kind", "codex", "--settings", str(foreign))
    assert refused.returncode == 1 and "notify" in json.loads(refused.stdout)["error"]["message"]
    assert foreign.read_text() == 'notify = ["notify-send"]\n'


def test_hooks_install_print_changes_nothing(tmp_path: Path) -> None:
    proc = cli(tmp_path, "--kind", "claude", "--print")
    assert proc.returncode == 0
    assert set(json.loads(proc.stdout)["hooks"]) >= {"SessionStart", "Stop", "SessionEnd"}
    assert not (tmp_path / "home" / ".claude").exists()


def test_docs_show_exactly_what_print_prints(tmp_path: Path) -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "agents.md").read_text()
    for kind in ("claude", "codex"):
        printed = cli(tmp_path, "--kind", kind, "--print").stdout
        assert printed.strip() in docs, kind
