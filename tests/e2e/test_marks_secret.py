"""Only the pane's own shell integration can mark commands (R5, R6.1, R6.2).

Every mark the injected bash/zsh/fish integration prints carries the pane's secret; a mark
without it (a `cat` of a recorded terminal log, a nested shell's own integration, fish 4's
built-in marks, a test suite printing escapes) is just output: it never ends a command, fakes
an exit code, settles a wait, aborts a run or moves the pane's cwd.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Runtime, at_prompt, base_env, started_runtime, wait_for

pytestmark = pytest.mark.timeout(120)

SHELLS = ("bash", "zsh", "fish")
#: A key of some other pane, as a recorded log or a guessing program would carry.
OTHER_KEY = "0123456789abcdef0123456789abcdef"
#: What a recorded session (or a nested shell with its own integration) prints: unkeyed marks,
#: marks with another pane's key, a cwd report.
RECORDED = (
    b"\x1b]133;A\x07$ \x1b]133;B\x07make\r\n\x1b]133;C\x07built\r\n\x1b]133;D;0\x07"
    b"\x1b]7;file://elsewhere/etc\x07"
    b"\x1b]133;A;k=" + OTHER_KEY.encode() + b"\x07$ \x1b]133;B;k=" + OTHER_KEY.encode() + b"\x07"
    b"\x1b]133;C;k=" + OTHER_KEY.encode() + b"\x07ok\r\n"
    b"\x1b]133;D;0;k=" + OTHER_KEY.encode() + b"\x07"
    b"\x1b]7;file://elsewhere/etc;k=" + OTHER_KEY.encode() + b"\x07"
    b"recorded-log-end\r\n"
)


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    """A runtime whose processes use a private TMPDIR, where key files would be left."""
    env = base_env(tmp_path)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env["TMPDIR"] = str(tmp)
    with started_runtime(env) as runtime:
        yield runtime


def shell_pane(rt: Runtime, shell: str) -> int:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed (shutil.which found no binary)")
    pane_id: int = rt.ok("tab.new", {"shell": shell})["pane_id"]
    at_prompt(rt, pane_id)
    return pane_id


def prompt(rt: Runtime, pane_id: int, text: str) -> dict[str, Any]:
    return rt.ok("pane.prompt", {"window_id": 1, "pane_id": pane_id, "text": text})


def wait_settled(rt: Runtime, pane_id: int, after_seq: int, timeout_ms: int) -> dict[str, Any]:
    params: dict[str, Any] = {"pane_id": pane_id, "state": "settled", "after_seq": after_seq}
    return rt.call(
        "pane.wait", {**params, "timeout_ms": timeout_ms}, timeout_s=timeout_ms / 1000 + 30
    )


@pytest.mark.parametrize("shell", SHELLS)
def test_a_printed_done_mark_does_not_fake_the_exit_code(rt: Runtime, shell: str) -> None:
    """R6.2: a printed `133;D;0`, then a command that exits 7: the run reports 7 and failed."""
    pane_id = shell_pane(rt, shell)
    result = rt.run(pane_id, "printf '\\033]133;D;0\\007'; sleep 0.3; sh -c 'exit 7'")
    assert (result["status"], result["exit_code"]) == ("failed", 7)
    assert rt.pane(pane_id)["task_state"] == "failed"


@pytest.mark.parametrize("shell", SHELLS)
def test_printed_prompt_marks_do_not_settle_a_running_command(rt: Runtime, shell: str) -> None:
    """R5.3: a printed `133;A` and `133;B` during `sleep 2` leave the pane running."""
    pane_id = shell_pane(rt, shell)
    started = time.monotonic()
    sent = prompt(
        rt, pane_id, "printf 'marks-%s' printed '\\033]133;A\\007\\033]133;B\\007'; sleep 2"
    )
    running_seq: int = sent["state_change_seq"]
    rt.wait_text(pane_id, "marks-printed")
    # The marks came in the same output as the text, so the router has taken them in.
    assert rt.pane(pane_id)["task_state"] == "running"
    early = wait_settled(rt, pane_id, running_seq, 500)
    assert early["error"]["code"] == "timeout", json.dumps(early)
    settled = wait_settled(rt, pane_id, running_seq, 15_000)
    assert settled["ok"], json.dumps(settled)
    assert settled["result"]["state"] == "completed"
    assert time.monotonic() - started >= 2.0


@pytest.mark.parametrize("shell", SHELLS)
def test_a_printed_command_start_does_not_abort_the_run(rt: Runtime, shell: str) -> None:
    """R6.2: a printed `133;C` inside the command is output, not a second command."""
    pane_id = shell_pane(rt, shell)
    result = rt.run(pane_id, "printf '\\033]133;C\\007'; true")
    assert (result["status"], result["exit_code"]) == ("finished", 0)


@pytest.mark.parametrize("shell", SHELLS)
def test_cat_of_a_recorded_session_then_false_reports_1(
    rt: Runtime, shell: str, tmp_path: Path
) -> None:
    """R6.2, R6.1: a log holding another session's marks (unkeyed and with another pane's key)
    changes neither the exit code nor the pane's cwd."""
    pane_id = shell_pane(rt, shell)
    log = tmp_path / "recorded.log"
    log.write_bytes(RECORDED)
    cwd_before = rt.pane(pane_id)["cwd"]
    result = rt.run(pane_id, f"cat {log}; false")
    assert (result["status"], result["exit_code"]) == ("failed", 1)
    assert "recorded-log-end" in rt.read_text(pane_id)
    pane = rt.pane(pane_id)
    assert pane["task_state"] == "failed"
    assert pane["cwd"] == cwd_before != "/etc"


@pytest.mark.parametrize("shell", SHELLS)
def test_the_secret_stays_private(rt: Runtime, shell: str, tmp_path: Path) -> None:
    """The key file is gone once the shell runs, no variable names it, and the secret never
    shows in a snapshot or a read."""
    pane_id = shell_pane(rt, shell)
    assert not list(Path(rt.env["TMPDIR"]).glob("pebrel-key-*"))
    saved = tmp_path / "key.txt"
    rt.run(pane_id, f"echo $__pebrel_key > {saved}")
    key = saved.read_text().strip()
    assert len(key) == 32
    out = tmp_path / "env.txt"
    rt.run(pane_id, f"env > {out}")
    assert "PEBREL_SHELL_KEY_FILE" not in out.read_text()
    assert key not in out.read_text()
    rt.run(pane_id, "cd /")
    assert key not in json.dumps(rt.snapshot())
    read = rt.ok("pane.read", {"pane_id": pane_id, "lines": 500})
    assert key not in json.dumps(read)


def test_fish_4_marks_of_its_own_are_ignored(rt: Runtime) -> None:
    """R6.1: fish 4 prints OSC 133 marks itself, without the key (faked here by a config.fish
    that prints them the way fish 4 does, plus a wrong exit status); Pebrel's own marks decide."""
    config = Path(rt.env["HOME"]) / ".config" / "fish" / "config.fish"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        "function __fish4_prompt --on-event fish_prompt\n"
        "    printf '\\e]133;A;click_events=1\\a'\n"
        "end\n"
        "function __fish4_preexec --on-event fish_preexec\n"
        "    printf '\\e]133;C;cmdline_url=%s\\a' (string escape --style=url -- $argv)\n"
        "end\n"
        "function __fish4_postexec --on-event fish_postexec\n"
        "    printf '\\e]133;D;0\\a'\n"
        "end\n"
    )
    pane_id = shell_pane(rt, "fish")
    result = rt.run(pane_id, "false")
    assert (result["status"], result["exit_code"]) == ("failed", 1)
    result = rt.run(pane_id, "sh -c 'exit 3'")
    assert (result["status"], result["exit_code"]) == ("failed", 3)
    result = rt.run(pane_id, "true")
    assert (result["status"], result["exit_code"]) == ("finished", 0)


def test_marks_printed_in_a_shell_without_integration_change_nothing(rt: Runtime) -> None:
    """R5.1 fallback: sh has no integration, so no mark counts there: a printed D and A do not
    end `sleep 2`; the pane settles when sh owns the terminal again, with no exit code."""
    pane_id: int = rt.ok("tab.new", {"shell": "sh"})["pane_id"]
    wait_for(lambda: rt.read_text(pane_id).strip() != "", 15, "sh's first prompt")
    started = time.monotonic()
    sent = prompt(rt, pane_id, "printf '\\033]133;D;0\\007\\033]133;A\\007'; sleep 2")
    settled = wait_settled(rt, pane_id, sent["state_change_seq"], 15_000)
    assert settled["ok"], json.dumps(settled)
    assert settled["result"]["state"] == "idle"
    assert time.monotonic() - started >= 1.9


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_an_exported_ps1_never_carries_the_secret_to_children(tmp_path: Path, shell: str) -> None:
    """R6.1: a PS1 exported into the runtime's environment (a virtualenv's `activate` does
    that) is un-exported once the marks are in it: no child sees the secret, and a nested
    `bash --norc` prints no mark that could settle the pane while it runs."""
    env = base_env(tmp_path)
    env["PS1"] = "user-prompt> "
    with started_runtime(env) as rt:
        pane_id = shell_pane(rt, shell)
        saved, out = tmp_path / "key.txt", tmp_path / "env.txt"
        rt.run(pane_id, f"echo $__pebrel_key > {saved}; env > {out}")
        key = saved.read_text().strip()
        assert len(key) == 32
        assert key not in out.read_text() and "133;" not in out.read_text()
        sent = prompt(rt, pane_id, "bash --norc")
        rt.wait_text(pane_id, "bash-")  # bash's own default prompt: no PS1 was inherited
        early = wait_settled(rt, pane_id, sent["state_change_seq"], 800)
        assert early["error"]["code"] == "timeout", json.dumps(early)
        prompt(rt, pane_id, "exit")
        settled = wait_settled(rt, pane_id, sent["state_change_seq"], 15_000)
        assert settled["ok"], json.dumps(settled)
        assert settled["result"]["state"] == "completed"
