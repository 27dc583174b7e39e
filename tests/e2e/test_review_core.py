"""Reviewer's black-box checks of the core and surface issues (#2, #3) against the docs.

Each test drives a real runtime through the installed CLI or the socket, the way the hidden
acceptance suite does. Tests named after a discrepancy fail until the product (or its docs)
is fixed; the rest pin behaviour that was probed and found right.
"""

from __future__ import annotations

from tests.conftest import Runtime, at_prompt


def _pane_cmd_names(runtime: Runtime) -> set[str]:
    result = runtime.cli("env", check=True).json["result"]
    return {entry["command"] for entry in result["commands"]}


def test_send_wait_running_reaches_running(runtime: Runtime) -> None:
    """R5.5 / README tour: `pebrel pane send 2 "sleep 3" --wait running` waits for that state.

    The synchronous running edge is the post-submit baseline itself: a wait for `running` must
    count it, or it never sees `running` and times out once the command has ended.
    """
    at_prompt(runtime)
    result = runtime.cli(
        *("pane", "send", "1", "--window", "1", "sleep 3"),
        *("--wait", "running", "--timeout-ms", "8000"),
        timeout=30,
    )
    assert result.code == 0, result.stdout
    assert result.json["result"]["state"] == "running", result.stdout


def test_ctl_prompt_wait_running_reaches_running(runtime: Runtime) -> None:
    """R5.5 / R8.3: `pebrel ctl prompt --wait running` (same baseline rule) sees the command run."""
    at_prompt(runtime)
    result = runtime.cli(
        "ctl",
        "prompt",
        "--window",
        "1",
        "--pane",
        "1",
        "--text",
        "sleep 3",
        "--wait",
        "running",
        "--timeout-ms",
        "8000",
        timeout=30,
    )
    assert result.code == 0, result.stdout
    assert result.json["result"]["state"] == "running", result.stdout


def test_env_lists_every_command(runtime: Runtime) -> None:
    """R7.5: `pebrel env` lists every command with a copy-and-run example.

    The issue #3 verbs (pane exec|procs|key|paste|zoom|resize, tab rename|move, ctl
    subscribe|exec-pane|procs|send-key|paste) are missing from its `commands`.
    """
    names = _pane_cmd_names(runtime)
    wanted = {
        "pane exec",
        "pane procs",
        "pane key",
        "pane paste",
        "pane zoom",
        "pane resize",
        "tab rename",
        "tab move",
        "ctl subscribe",
        "ctl exec-pane",
        "ctl procs",
        "ctl send-key",
        "ctl paste",
    }
    assert not wanted - names, f"missing from pebrel env: {sorted(wanted - names)}"


def test_window_create_cli_takes_size(runtime: Runtime) -> None:
    """R3.5 / issue #3 item 5+8: the tab size settable on window.create has a CLI verb."""
    result = runtime.cli("window", "create", "--cols", "80", "--rows", "24")
    assert result.code == 0, result.stdout + result.stderr
    window_id = result.json["result"]["window_id"]
    assert (runtime.pane(1, window_id)["cols"], runtime.pane(1, window_id)["rows"]) == (80, 24)


def test_tab_new_cli_takes_size(runtime: Runtime) -> None:
    """R3.5 / issue #3 item 5+8: the tab size settable on tab.new has a CLI verb."""
    result = runtime.cli("tab", "new", "--window", "1", "--cols", "80", "--rows", "24")
    assert result.code == 0, result.stdout + result.stderr
    pane_id = result.json["result"]["pane_id"]
    assert (runtime.pane(pane_id)["cols"], runtime.pane(pane_id)["rows"]) == (80, 24)


# --- probed and found right (kept as regression guards) ---------------------------------------


def test_cli_send_wait_seq_sequence(runtime: Runtime) -> None:
    """R5.2/R5.5: fresh pane idle@1; `true`, `false`, `true` via `pane send --wait` -> 3, 5, 7."""
    assert runtime.pane(1)["state_change_seq"] == 1
    seen = []
    for command in ("true", "false", "true"):
        result = runtime.cli("pane", "send", "1", command, "--wait", check=True).json["result"]
        seen.append((result["state"], result["state_change_seq"]))
    assert seen == [("completed", 3), ("failed", 5), ("completed", 7)]


def test_exec_exit_code_statuses(runtime: Runtime) -> None:
    """R6.3: `pane exec --exit-code` passes 7 through, 124 on timeout, 128+N on signal,
    125 on failure."""
    assert runtime.cli("pane", "exec", "1", "--exit-code", "--", "sh", "-c", "exit 7").code == 7
    assert (
        runtime.cli(
            "pane", "exec", "1", "--exit-code", "--timeout-ms", "500", "--", "sleep", "30"
        ).code
        == 124
    )
    assert (
        runtime.cli("pane", "exec", "1", "--exit-code", "--", "sh", "-c", "kill -TERM $$").code
        == 143
    )
    assert runtime.cli("pane", "exec", "1", "--exit-code", "--", "/nonexistent-x").code == 125
