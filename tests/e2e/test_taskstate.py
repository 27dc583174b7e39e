"""Task state, state_change_seq, pane.wait and pane.run against real shells (R5, R6.2).

bash panes carry Pebrel's OSC 133 integration; `sh` (dash) panes have none, so their state
comes only from the PTY's foreground process group and the 2 s submit-edge fallback.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import psutil
import pytest

from tests.conftest import Runtime, at_prompt, prompt_read, wait_for

#: Bound of every wait here: far above what `true` or `sleep 3` need, short enough to fail fast.
WAIT_MS = 10_000


def prompt(rt: Runtime, text: str, pane_id: int = 1, window_id: int = 1) -> dict[str, Any]:
    return rt.ok("pane.prompt", {"window_id": window_id, "pane_id": pane_id, "text": text})


def wait_settled(rt: Runtime, after_seq: int, pane_id: int = 1) -> dict[str, Any]:
    return rt.ok(
        "pane.wait",
        {"pane_id": pane_id, "state": "settled", "after_seq": after_seq, "timeout_ms": WAIT_MS},
        timeout_s=WAIT_MS / 1000 + 10,
    )


def prompt_drawn(rt: Runtime, pane_id: int = 1) -> None:
    """Wait until the shell has drawn its first prompt, without running anything (seq stays 1)."""
    wait_for(lambda: rt.read_text(pane_id).strip(), 15, f"a prompt in pane {pane_id}")


def sh_tab(rt: Runtime) -> int:
    """A new tab running `sh` (no integration); its pane id, once sh shows its prompt."""
    pane_id: int = rt.ok("tab.new", {"shell": "sh"})["pane_id"]
    wait_for(
        lambda: rt.read_text(pane_id).rstrip().endswith(("$", "#")),
        15,
        f"sh's prompt ($ or #) in pane {pane_id}",
    )
    return pane_id


def has_child(rt: Runtime, pane_id: int, name: str) -> bool:
    shell = psutil.Process(rt.pane(pane_id)["pid"])
    return any(child.name() == name for child in shell.children(recursive=True))


# -- R5.2 state_change_seq -----------------------------------------------------------------------


def test_seq_counts_every_transition_of_true_false_true(runtime: Runtime) -> None:
    """R5.2, R5.3, R5.4: idle@1; the running edges are 2, 4, 6; results 3, 5, 7 exactly."""
    prompt_drawn(runtime)
    first = runtime.pane(1)
    assert (first["task_state"], first["state_change_seq"]) == ("idle", 1)
    observed = []
    for command in ("true", "false", "true"):
        sent = prompt(runtime, command)
        assert sent["submitted"] is True
        waited = wait_settled(runtime, sent["state_change_seq"])
        observed.append((sent["state_change_seq"], waited["state"], waited["state_change_seq"]))
    assert observed == [(2, "completed", 3), (4, "failed", 5), (6, "completed", 7)]
    last = runtime.pane(1)
    assert (last["task_state"], last["state_change_seq"]) == ("completed", 7)


def test_the_pane_record_says_the_last_exit_code(runtime: Runtime) -> None:
    """#21: `last_exit_code` is the last command's own exit code, null before one."""
    prompt_drawn(runtime)
    assert runtime.pane(1)["last_exit_code"] is None
    assert runtime.run(1, "(exit 7)")["exit_code"] == 7
    assert runtime.pane(1)["last_exit_code"] == 7
    assert runtime.run(1, "true")["exit_code"] == 0
    assert runtime.pane(1)["last_exit_code"] == 0


def test_every_prompt_response_carries_its_running_edge(runtime: Runtime) -> None:
    """R5.4, R5.3: ten quick `true`s: each prompt returns the seq of its own running edge.

    The baseline must be the edge (4, 6, 8, ...), never a later seq: a command that finished
    before the response was built would otherwise be invisible to `wait(after_seq=...)`. The
    response's snapshot is the edge's: `running` at that seq (#14).
    """
    at_prompt(runtime)  # running@2, completed@3
    expected = [4 + 2 * number for number in range(10)]
    returned = []
    for edge in expected:
        sent = prompt(runtime, "true")
        returned.append(sent["state_change_seq"])
        (pane,) = [p for w in sent["snapshot"]["windows"] for t in w["tabs"] for p in t["panes"]]
        assert (pane["task_state"], pane["state_change_seq"]) == ("running", edge)
        assert wait_settled(runtime, edge)["state_change_seq"] == edge + 1
    assert returned == expected


def test_prompt_response_carries_the_running_edge_and_snapshot(runtime: Runtime) -> None:
    """R5.4: the prompt's own snapshot already shows `running` at the returned seq."""
    sent = prompt(runtime, "sleep 1")
    assert sent["state_change_seq"] == 2
    (pane,) = [p for w in sent["snapshot"]["windows"] for t in w["tabs"] for p in t["panes"]]
    assert (pane["task_state"], pane["state_change_seq"]) == ("running", 2)
    assert wait_settled(runtime, 2)["state_change_seq"] == 3


def test_cli_send_and_ctl_prompt_wait_from_the_post_submit_baseline(runtime: Runtime) -> None:
    """R5.5: `pane send --wait` and `ctl prompt --wait settled` return the settled result."""
    steps = [
        ("pane", "send", "1", "true", "--wait"),
        ("ctl", "prompt", "--window", "1", "--pane", "1", "--text", "false", "--wait", "settled"),
        ("pane", "send", "1", "true", "--wait"),
    ]
    bound = ("--timeout-ms", str(WAIT_MS))  # fail in seconds, not after the 10 min default
    prompt_drawn(runtime)
    observed = []
    for args in steps:
        done = runtime.cli(*args[:2], *bound, *args[2:], check=True)
        result = done.json["result"]
        assert (result["submitted"], result["written"]) == (True, True)
        observed.append((result["state"], result["state_change_seq"]))
    assert observed == [("completed", 3), ("failed", 5), ("completed", 7)]


CLI_NO_SUBMIT = [
    ("pane", "send", "1", "echo nosubmit-marker", "--no-submit", "--wait"),
    ("ctl", "prompt", "--pane", "1", "--text", "echo nosubmit-marker", "--no-submit", "--wait"),
]


@pytest.mark.parametrize("args", CLI_NO_SUBMIT, ids=["pane-send", "ctl-prompt"])
def test_cli_no_submit_with_wait_is_a_usage_error(runtime: Runtime, args: tuple[str, ...]) -> None:
    """R5.5: `--no-submit` with `--wait` -> exit 2, and nothing is typed into the pane."""
    at_prompt(runtime)
    before = prompt_read(runtime)
    done = runtime.cli(*args)
    assert done.code == 2, done
    after = runtime.ok("pane.read", {"pane_id": 1})
    assert "nosubmit-marker" not in after["text"]
    assert after["text"] == before["text"]
    assert after["state_change_seq"] == before["state_change_seq"]


# -- R5.3 pane.wait --------------------------------------------------------------------------------


def test_wait_timeout_reports_the_baseline_and_observed_seq(runtime: Runtime) -> None:
    """R5.3: a wait that times out -> `timeout` with after_seq and observed_state_change_seq."""
    envelope = runtime.call(
        "pane.wait", {"pane_id": 1, "state": "running", "after_seq": 1, "timeout_ms": 300}
    )
    assert not envelope["ok"]
    error = envelope["error"]
    assert error["code"] == "timeout"
    assert error["details"]["after_seq"] == 1
    assert error["details"]["observed_state_change_seq"] == 1


def test_wait_after_seq_zero_is_invalid_params(runtime: Runtime) -> None:
    """R5.2: 0 is not a valid baseline."""
    error = runtime.error("pane.wait", {"pane_id": 1, "state": "settled", "after_seq": 0})
    assert error["code"] == "invalid_params"


def test_wait_running_sees_a_submitted_sleep(runtime: Runtime) -> None:
    """R5.3, R5.4: waiting for `running` right after prompting `sleep 1` returns running."""
    sent = prompt(runtime, "sleep 1")
    waited = runtime.ok("pane.wait", {"pane_id": 1, "state": "running", "timeout_ms": WAIT_MS})
    assert (waited["state"], waited["state_change_seq"]) == ("running", sent["state_change_seq"])
    assert wait_settled(runtime, sent["state_change_seq"])["state"] == "completed"


def test_wait_settled_on_an_idle_pane_returns_at_once(runtime: Runtime) -> None:
    """R5.3: without after_seq the current state counts: an idle pane is already settled."""
    started = time.monotonic()
    waited = runtime.ok("pane.wait", {"pane_id": 1, "state": "settled", "timeout_ms": 60_000})
    assert time.monotonic() - started < 5
    assert waited == {"state": "idle", "state_change_seq": 1, "window_id": 1, "pane_id": 1}


# -- R5.4 submit barrier and the no-integration fallback -------------------------------------------


def test_second_prompt_inside_the_submit_barrier_is_refused(runtime: Runtime) -> None:
    """R5.4: an unconfirmed submit (sh, `read x`) blocks a second input, then reverts at 2 s."""
    pane_id = sh_tab(runtime)
    assert runtime.pane(pane_id)["state_change_seq"] == 1
    sent = prompt(runtime, "read x", pane_id)
    assert sent["state_change_seq"] == 2
    error = runtime.error("pane.prompt", {"pane_id": pane_id, "text": "echo second"})
    assert error["code"] == "input_in_progress"
    assert error["details"]["submitted"] is False
    reverted = wait_settled(runtime, 2, pane_id)
    assert (reverted["state"], reverted["state_change_seq"]) == ("idle", 3)
    assert "second" not in runtime.read_text(pane_id)


def test_sh_command_ends_by_foreground_group_without_exit_code(runtime: Runtime) -> None:
    """R5.1 fallback: in sh, `sleep 3` is running until the shell owns the foreground again."""
    pane_id = sh_tab(runtime)
    started = time.monotonic()
    sent = prompt(runtime, "sleep 3", pane_id)
    assert sent["state_change_seq"] == 2
    wait_for(lambda: has_child(runtime, pane_id, "sleep"), 10, "sleep under sh")
    settled = wait_settled(runtime, 2, pane_id)
    # `idle` (no exit code), and not the 2 s revert: sleep 3 cannot end before 3 s have passed.
    assert (settled["state"], settled["state_change_seq"]) == ("idle", 3)
    assert time.monotonic() - started >= 2.9
    assert runtime.pane(pane_id)["last_exit_code"] is None  # sh without integration: unknown


def test_run_in_a_shell_without_integration_is_exit_code_unavailable(runtime: Runtime) -> None:
    """R6.2: pane.run never fabricates an exit code: sh -> exit_code_unavailable, not sent."""
    pane_id = sh_tab(runtime)
    before = runtime.pane(pane_id)
    error = runtime.error("pane.run", {"pane_id": pane_id, "command": "echo run-marker"})
    assert error["code"] == "exit_code_unavailable"
    assert error["details"]["submitted"] is False
    assert runtime.pane(pane_id)["state_change_seq"] == before["state_change_seq"]
    assert "run-marker" not in runtime.read_text(pane_id)


# -- R6.2 pane.run ---------------------------------------------------------------------------------


def test_run_without_wait_returns_started(runtime: Runtime) -> None:
    """R6.2: `wait: false` returns `started` at the running edge; a later wait sees the end."""
    at_prompt(runtime)
    started = runtime.ok("pane.run", {"pane_id": 1, "command": "sleep 0.5", "wait": False})
    assert started["status"] == "started"
    assert started["exit_code"] is None
    assert runtime.pane(1)["task_state"] == "running"
    done = wait_settled(runtime, started["state_change_seq"])
    assert (done["state"], done["state_change_seq"]) == (
        "completed",
        started["state_change_seq"] + 1,
    )


def test_run_of_exit_aborts_and_marks_the_pane_exited(runtime: Runtime) -> None:
    """R6.2, R4.4: `exit 3` ends the shell: run_aborted, snapshot exited with a reason."""
    at_prompt(runtime)
    error = runtime.error("pane.run", {"pane_id": 1, "command": "exit 3"})
    assert error["code"] == "run_aborted"
    assert error["details"]["submitted"] is True
    pane = runtime.pane(1)
    assert pane["exited"] is True
    assert isinstance(pane["exit_reason"], str) and pane["exit_reason"]


def test_run_while_a_command_runs_is_invalid_state(runtime: Runtime) -> None:
    """R6.2: pane.run while `sleep 5` runs -> invalid_state, nothing submitted."""
    at_prompt(runtime)
    sent = prompt(runtime, "sleep 5")
    runtime.ok(
        "pane.wait",
        {"pane_id": 1, "state": "running", "after_seq": sent["state_change_seq"] - 1},
    )
    wait_for(lambda: has_child(runtime, 1, "sleep"), 10, "sleep under bash")

    def past_barrier() -> dict[str, Any] | None:
        # The C mark that confirms the edge may still be in flight: until then the barrier
        # answers input_in_progress (and changes nothing either).
        error = runtime.error("pane.run", {"pane_id": 1, "command": "echo run-marker"})
        return None if error["code"] == "input_in_progress" else error

    error: dict[str, Any] = wait_for(past_barrier, 5, "the submit edge to be confirmed")
    assert error["code"] == "invalid_state"
    assert error["details"]["submitted"] is False
    assert "run-marker" not in runtime.read_text(1)


class BadCommand(NamedTuple):
    id: str
    command: str


BAD_COMMANDS = [
    BadCommand("newline", "echo a\necho b"),
    BadCommand("carriage-return", "echo a\recho b"),
    BadCommand("escape", "echo \x1b[31m"),
]


@pytest.mark.parametrize("case", BAD_COMMANDS, ids=[c.id for c in BAD_COMMANDS])
def test_run_of_a_multiline_command_is_invalid_params(runtime: Runtime, case: BadCommand) -> None:
    """R6.2, R4.1: a command with a newline or control char -> invalid_params, nothing typed."""
    at_prompt(runtime)
    before = runtime.pane(1)["state_change_seq"]
    error = runtime.error("pane.run", {"pane_id": 1, "command": case.command})
    assert error["code"] == "invalid_params"
    # Found the pane, typed nothing: the details say so, as for every pane.run error (R4.1).
    assert (error["details"]["submitted"], error["details"]["written"]) == (False, False)
    refused = runtime.error("pane.prompt", {"pane_id": 1, "text": case.command})
    assert refused["code"] == "invalid_params"
    assert (refused["details"]["submitted"], refused["details"]["written"]) == (False, False)
    assert runtime.pane(1)["state_change_seq"] == before
