"""Refusals that say what is wrong instead of pretending, end to end (#14).

- R5.3, R9.4: a wait baseline ahead of the pane's seq is `invalid_params` at once, with the
  current seq, instead of a wait that runs out its timeout.
- R3.3: a tab name with a control character is `invalid_params`, and the name stays.
- R8.1: the CLI's own deadline passing is `client_timeout`, exit 4 (not "no runtime", 3).
Agents are the stand-in CLIs of tests/fakes.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.agent_fixtures import fake_agents_env
from tests.conftest import Runtime, at_prompt, base_env, inject_env, started_runtime

pytestmark = pytest.mark.timeout(120)

#: A wait timeout far above how fast a refusal must come.
LONG_WAIT_MS = 30_000
#: How fast "at once" is, on a loaded machine.
AT_ONCE_S = 5.0


# -- R5.3, R9.4: a baseline from the future ------------------------------------------------------


def test_pane_wait_from_a_future_seq_is_refused_at_once(runtime: Runtime) -> None:
    """R5.3: `pane.wait` with `after_seq` past the pane's seq -> `invalid_params` at once,
    `details.state_change_seq` the current seq; a baseline equal to it still waits."""
    at_prompt(runtime)
    current = runtime.pane(1)["state_change_seq"]
    for after_seq in (current + 1, current + 1000):
        started = time.monotonic()
        error = runtime.error(
            "pane.wait",
            {"pane_id": 1, "state": "settled", "after_seq": after_seq, "timeout_ms": LONG_WAIT_MS},
        )
        assert time.monotonic() - started < AT_ONCE_S
        assert error["code"] == "invalid_params", error
        assert error["details"]["state_change_seq"] == current
        assert error["details"]["after_seq"] == after_seq
        assert error["details"]["field"] == "after_seq"
    same = runtime.error(
        "pane.wait", {"pane_id": 1, "state": "settled", "after_seq": current, "timeout_ms": 300}
    )
    assert same["code"] == "timeout"  # a real baseline: waits for the next transition
    cli = runtime.cli(
        "pane", "wait", "1", "--after-seq", str(current + 5), "--timeout-ms", str(LONG_WAIT_MS)
    )
    assert cli.code == 1, cli
    assert cli.json["error"]["code"] == "invalid_params"
    assert runtime.pane(1)["state_change_seq"] == current


def test_agent_wait_from_a_future_seq_is_refused_at_once(tmp_path: Path) -> None:
    """R9.4, R5.3: the same for `agent.wait` (and `pebrel agent wait`)."""
    with started_runtime(fake_agents_env(tmp_path)) as rt:
        started = rt.ok("agent.start", {"name": "demo", "kind": "claude"}, timeout_s=60)
        pane = rt.pane(started["pane_id"])
        current = pane["state_change_seq"]
        params = {"agent": "demo", "generation": 1, "state": "completed"}
        began = time.monotonic()
        error = rt.error(
            "agent.wait", {**params, "after_seq": current + 3, "timeout_ms": LONG_WAIT_MS}
        )
        assert time.monotonic() - began < AT_ONCE_S
        assert error["code"] == "invalid_params", error
        assert error["details"]["state_change_seq"] == current
        assert (error["details"]["agent_id"], error["details"]["generation"]) == (
            started["agent_id"],
            1,
        )
        cli = rt.cli("agent", "wait", "demo", "--generation", "1", "--after-seq", str(current + 3))
        assert cli.code == 1 and cli.json["error"]["code"] == "invalid_params", cli


# -- R3.3: tab names -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["two\nlines", "red \x1b[31mname", "tab\there", "bell\x07", "del\x7f", "csi\x9b1m", "nul\x00"],
    ids=["newline", "esc", "tab", "bel", "del", "c1", "nul"],
)
def test_tab_rename_refuses_control_characters(runtime: Runtime, name: str) -> None:
    """R3.3: a name with a C0/C1 control character -> `invalid_params` naming it; the tab's
    name and the snapshot's revision stay as they were."""
    runtime.ok("tab.rename", {"window_id": 1, "tab_index": 0, "name": "kept"})
    before = runtime.snapshot()
    error = runtime.error("tab.rename", {"window_id": 1, "tab_index": 0, "name": name})
    assert error["code"] == "invalid_params", error
    assert error["details"]["field"] == "name"
    assert error["details"]["codepoint"] == ord(next(c for c in name if not c.isprintable()))
    after = runtime.snapshot()
    assert after["revision"] == before["revision"]
    assert after["windows"][0]["tabs"][0]["name"] == "kept"


def test_cli_tab_rename_refuses_control_characters(runtime: Runtime) -> None:
    """R3.3, R8.1: the same through `pebrel tab rename`; plain Unicode names still work."""
    refused = runtime.cli("tab", "rename", "0", "evil\x1b]0;title\x07")
    assert refused.code == 1 and refused.json["error"]["code"] == "invalid_params", refused
    named = runtime.cli("tab", "rename", "0", "测试 ✓ tab", check=True).json["result"]
    assert named["custom_name"] == "测试 ✓ tab"


# -- R8.1: the CLI's own deadline ------------------------------------------------------------


def test_cli_client_timeout_is_its_own_error_and_exit_status(tmp_path: Path) -> None:
    """R8.1 (DESIGN "Result shapes"): the runtime takes a `pane.wait` and never answers
    (tests/inject/pane_wait_never_answers.py); once the CLI's deadline (the wait's timeout
    plus its margin) passes it prints `client_timeout` and exits 4; the runtime still
    answers other calls."""
    env = {**base_env(tmp_path), **inject_env("pane_wait_never_answers")}
    with started_runtime(env) as rt:
        at_prompt(rt)
        done = rt.cli("pane", "wait", "1", "--timeout-ms", "0", timeout=60)
        assert done.code == 4, done
        error = done.json["error"]
        assert error["code"] == "client_timeout"
        assert error["details"]["method"] == "pane.wait"
        assert rt.cli("ctl", "describe").code == 0
