"""runtime.orchestrate end to end (issue 5 item 3: R10.1-R10.5).

The agents are the fake AI CLIs of tests/fakes (stand-ins for real CLIs, put first on PATH by
tests/agent_fixtures.py); FAKE_AGENT_WORK_MS keeps their turns short.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from pebrel.schema import load_schema
from tests.agent_fixtures import (
    FORMULA,
    SPEC_WORKFLOW,
    WEATHER,
    fake_agents_env,
    started_runtime,
)
from tests.conftest import PEBREL, Runtime, at_prompt, wait_for


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    with started_runtime(fake_agents_env(tmp_path, FAKE_AGENT_WORK_MS="50")) as runtime:
        at_prompt(runtime)
        yield runtime


def orchestrate(rt: Runtime, params: dict[str, Any]) -> dict[str, Any]:
    """A receipt (the envelope is ok even when a step failed); checked against the schema."""
    receipt = rt.ok("runtime.orchestrate", params, timeout_s=120)
    schema = {**load_schema(), "$ref": "#/methods/runtime.orchestrate/result"}
    problems = [e.message for e in Draft202012Validator(schema).iter_errors(receipt)]
    assert problems == [], problems
    return receipt


def statuses(receipt: dict[str, Any]) -> dict[str, str]:
    return {s["id"]: s["status"] for s in receipt["steps"]}


def step(receipt: dict[str, Any], step_id: str) -> dict[str, Any]:
    found: dict[str, Any] = next(s for s in receipt["steps"] if s["id"] == step_id)
    return found


def pane_count(snapshot: dict[str, Any]) -> int:
    return sum(len(t["panes"]) for w in snapshot["windows"] for t in w["tabs"])


def test_the_spec_workflow(rt: Runtime) -> None:
    """R10.1, R10.3, R10.5: the spec's exact workflow lays out two agents, both ready, both
    prompts delivered; the receipt carries only the necessary fields, no snapshots."""
    receipt = orchestrate(rt, SPEC_WORKFLOW)
    assert receipt["ok"] is True, receipt
    assert (receipt["failed_step"], receipt["error"], receipt["partial"]) == (None, None, False)
    assert statuses(receipt) == dict.fromkeys(("right", "weather", "bottom", "formula"), "ok")
    assert step(receipt, "right")["result"] == {"window_id": 1, "tab_index": 0, "pane_id": 2}
    assert step(receipt, "bottom")["result"] == {"window_id": 1, "tab_index": 0, "pane_id": 3}
    for step_id, pane_id in (("weather", 2), ("formula", 3)):
        launched = step(receipt, step_id)["result"]
        assert set(launched) == {
            "window_id",
            "pane_id",
            "agent_id",
            "generation",
            "ready",
            "state",
            "submitted",
        }
        assert (launched["window_id"], launched["pane_id"]) == (1, pane_id)
        assert launched["ready"] is True and launched["submitted"] is True
        assert launched["generation"] == 1 and launched["state"] != "running"
    text = json.dumps(receipt)
    assert "snapshot" not in text and "layout" not in text and len(text) < 3000

    tab = rt.snapshot()["windows"][0]["tabs"][0]
    assert tab["layout"]["split"] == "right" and tab["layout"]["first"] == {"pane_id": 1}
    right = tab["layout"]["second"]
    assert right["split"] == "down"
    assert (right["first"], right["second"]) == ({"pane_id": 2}, {"pane_id": 3})

    listed = {a["name"]: a for a in rt.ok("agents.list")["agents"]}
    assert {n: (a["kind"], a["pane_id"]) for n, a in listed.items()} == {
        "weather": ("claude", 2),
        "formula": ("codex", 3),
    }
    for name, prompt in (("weather", WEATHER), ("formula", FORMULA)):
        agent_id = step(receipt, name)["result"]["agent_id"]
        assert listed[name]["agent_id"] == agent_id

        def answered(a: str = agent_id, p: str = prompt) -> dict[str, Any] | None:
            got = rt.ok("agent.get", {"agent": a})
            return got if got["last_message"] == f"final: {p}" else None

        got = wait_for(answered, 20, f"the answer of {name}")
        assert got["generation"] == 1
    rt.wait_text(2, "answer: ")
    rt.wait_text(3, "answer: ")


REFUSED: list[tuple[str, list[dict[str, Any]], str, str | None]] = [
    (
        "duplicate ids",
        [
            {"id": "a", "op": "split", "direction": "right"},
            {"id": "a", "op": "split", "direction": "down"},
        ],
        "invalid_params",
        None,
    ),
    (
        "unknown op",
        [{"id": "a", "op": "explode", "target": {"pane_id": 1}}],
        "invalid_params",
        None,
    ),
    (
        "unknown field",
        [
            {"id": "a", "op": "split", "direction": "right"},
            {"id": "b", "op": "zoom", "target": {"pane_id": 1}, "colour": "red"},
        ],
        "invalid_params",
        None,
    ),
    (
        "future reference",
        [
            {"id": "a", "op": "split", "direction": "right"},
            {
                "id": "b",
                "op": "split",
                "direction": "down",
                "target": {"step": "c", "field": "pane_id"},
            },
            {"id": "c", "op": "split", "direction": "down"},
        ],
        "invalid_reference",
        "future_step",
    ),
    (
        "self reference",
        [
            {
                "id": "a",
                "op": "split",
                "direction": "down",
                "target": {"step": "a", "field": "pane_id"},
            }
        ],
        "invalid_reference",
        "future_step",
    ),
    (
        "missing step",
        [
            {"id": "a", "op": "split", "direction": "right"},
            {
                "id": "b",
                "op": "prompt",
                "target": {"step": "nope", "field": "pane_id"},
                "text": "x",
            },
        ],
        "invalid_reference",
        "missing_step",
    ),
    (
        "reference without a field",
        [
            {"id": "a", "op": "split", "direction": "right"},
            {"id": "b", "op": "split", "direction": "down", "target": {"step": "a"}},
        ],
        "invalid_reference",
        "missing_field",
    ),
    (
        "field the op does not produce",
        [
            {"id": "a", "op": "split", "direction": "right"},
            {
                "id": "b",
                "op": "split",
                "direction": "down",
                "target": {"step": "a", "field": "agent_id"},
            },
        ],
        "invalid_reference",
        "unknown_field",
    ),
    (
        "field the slot cannot use",
        [
            {"id": "a", "op": "new_tab"},
            {"id": "b", "op": "new_tab", "window": {"step": "a", "field": "pane_id"}},
        ],
        "invalid_reference",
        "field_not_usable",
    ),
    (
        "two launches of one name",
        [
            {
                "id": "a",
                "op": "agent_launch",
                "target": {"pane_id": 1},
                "name": "x",
                "kind": "claude",
            },
            {"id": "b", "op": "split", "direction": "right"},
            {
                "id": "c",
                "op": "agent_launch",
                "target": {"step": "b", "field": "pane_id"},
                "name": "x",
                "kind": "codex",
            },
        ],
        "invalid_params",
        None,
    ),
    (
        "empty field",
        [
            {"id": "a", "op": "split", "direction": "right"},
            {"id": "b", "op": "zoom", "target": {"step": "a", "field": ""}},
        ],
        "invalid_reference",
        "missing_field",
    ),
    (
        "a step id no step has",
        [
            {"id": "a", "op": "split", "direction": "right"},
            {"id": "b", "op": "zoom", "target": {"step": "no such step", "field": "pane_id"}},
        ],
        "invalid_reference",
        "missing_step",
    ),
    (
        "unknown field on the only step",
        [{"id": "a", "op": "split", "direction": "right", "x": 1}],
        "invalid_params",
        None,
    ),
    ("no steps", [], "invalid_params", None),
]


def test_invalid_workflows_change_nothing(rt: Runtime) -> None:
    """R10.2: duplicate ids, unknown ops or fields (invalid_params), future, missing or
    fieldless references (invalid_reference) are refused before any action: the snapshot
    revision and the pane count stay the same."""
    for what, steps, code, reason in REFUSED:
        before = rt.snapshot()
        error = rt.error("runtime.orchestrate", {"steps": steps})
        after = rt.snapshot()
        assert error["code"] == code, (what, error)
        if reason is not None:
            assert error["details"]["reason"] == reason, (what, error)
        assert after["revision"] == before["revision"], what
        assert pane_count(after) == pane_count(before) == 1, what
    bad_mode = {"steps": [{"id": "a", "op": "split", "direction": "right"}], "on_error": "maybe"}
    assert rt.error("runtime.orchestrate", bad_mode)["code"] == "invalid_params"
    extra = {"steps": bad_mode["steps"], "rollback": True}
    assert rt.error("runtime.orchestrate", extra)["code"] == "invalid_params"
    assert rt.ok("agents.list")["agents"] == [] and pane_count(rt.snapshot()) == 1


def test_on_error_stop(rt: Runtime) -> None:
    """R10.4: the first failure stops the workflow; later steps are skipped; done steps stay."""
    receipt = orchestrate(
        rt,
        {
            "steps": [
                {"id": "tab", "op": "new_tab"},
                {
                    "id": "grow",
                    "op": "resize",
                    "target": {"step": "tab", "field": "pane_id"},
                    "ratio": 0.3,
                },
                {
                    "id": "half",
                    "op": "split",
                    "direction": "right",
                    "target": {"step": "tab", "field": "pane_id"},
                },
            ]
        },
    )
    assert statuses(receipt) == {"tab": "ok", "grow": "failed", "half": "skipped"}
    assert receipt["ok"] is False and receipt["partial"] is True
    assert receipt["failed_step"] == "grow" and receipt["error"]["code"] == "invalid_state"
    assert step(receipt, "grow")["error"]["code"] == "invalid_state"
    tabs = rt.snapshot()["windows"][0]["tabs"]
    assert len(tabs) == 2 and tabs[1]["layout"] == {"pane_id": 2}  # no rollback, no split


def test_on_error_continue(rt: Runtime) -> None:
    """R10.4: with continue, later steps run; a step referencing a failed one fails with
    invalid_reference; the receipt names the first failure."""
    receipt = orchestrate(
        rt,
        {
            "on_error": "continue",
            "steps": [
                {
                    "id": "ghost",
                    "op": "prompt",
                    "target": {"window_id": 1, "pane_id": 99},
                    "text": "echo never",
                },
                {"id": "side", "op": "split", "direction": "down"},
                {"id": "zoom", "op": "zoom", "target": {"step": "ghost", "field": "pane_id"}},
                {
                    "id": "size",
                    "op": "resize",
                    "target": {"step": "side", "field": "pane_id"},
                    "ratio": 0.25,
                },
            ],
        },
    )
    assert statuses(receipt) == {"ghost": "failed", "side": "ok", "zoom": "failed", "size": "ok"}
    assert receipt["failed_step"] == "ghost" and receipt["error"]["code"] == "target_not_found"
    assert step(receipt, "zoom")["error"]["code"] == "invalid_reference"
    assert receipt["ok"] is False and receipt["partial"] is True
    layout = rt.snapshot()["windows"][0]["tabs"][0]["layout"]
    assert layout["split"] == "down" and layout["ratio"] == pytest.approx(0.75)


def test_every_op(rt: Runtime) -> None:
    """R10.1: new_tab, run, split, prompt, resize, zoom, rename_tab and focus, bound by
    references, each with its observable effect."""
    receipt = orchestrate(
        rt,
        {
            "steps": [
                {"id": "tab", "op": "new_tab", "window": 1},
                {
                    "id": "calc",
                    "op": "run",
                    "target": {"step": "tab", "field": "pane_id"},
                    "command": "echo orch-$((6*7))",
                },
                {
                    "id": "no",
                    "op": "run",
                    "target": {"step": "tab", "field": "pane_id"},
                    "command": "false",
                },
                {
                    "id": "low",
                    "op": "split",
                    "direction": "top_bottom",
                    "target": {"step": "tab", "field": "pane_id"},
                },
                {
                    "id": "say",
                    "op": "prompt",
                    "target": {"step": "low", "field": "pane_id"},
                    "text": "echo said-$((2+3))",
                },
                {
                    "id": "size",
                    "op": "resize",
                    "target": {"step": "low", "field": "pane_id"},
                    "ratio": 0.3,
                },
                {"id": "big", "op": "zoom", "target": {"step": "low", "field": "pane_id"}},
                {
                    "id": "name",
                    "op": "rename_tab",
                    "tab_index": {"step": "tab", "field": "tab_index"},
                    "name": "orchestrated",
                },
                {"id": "back", "op": "focus", "target": {"window_id": 1, "pane_id": 1}},
            ]
        },
    )
    assert receipt["ok"] is True, receipt
    assert step(receipt, "calc")["result"]["exit_code"] == 0
    assert step(receipt, "no")["result"]["status"] == "failed"  # an exit code is a result
    assert step(receipt, "say")["result"]["submitted"] is True
    assert "snapshot" not in json.dumps(receipt)
    rt.wait_text(2, "orch-42")
    rt.wait_text(3, "said-5")
    win = rt.snapshot()["windows"][0]
    assert win["focused"] is True
    first, second = win["tabs"]
    assert first["active"] is True
    assert [p["pane_id"] for p in first["panes"] if p["focused"]] == [1]
    assert second["custom_name"] == "orchestrated" and second["zoomed_pane_id"] == 3
    assert second["layout"]["split"] == "down"
    assert second["layout"]["ratio"] == pytest.approx(0.7)


def test_deadline_gives_runtime_timeout(rt: Runtime) -> None:
    """The workflow's timeout_ms: the step running at the deadline fails with
    runtime_timeout; steps never started are skipped with the same error."""
    receipt = orchestrate(
        rt,
        {
            "timeout_ms": 400,
            "steps": [
                {"id": "slow", "op": "run", "target": {"pane_id": 1}, "command": "sleep 2"},
                {"id": "after", "op": "split", "direction": "right"},
            ],
        },
    )
    assert statuses(receipt) == {"slow": "failed", "after": "skipped"}
    assert receipt["error"]["code"] == "runtime_timeout"
    assert step(receipt, "after")["error"]["code"] == "runtime_timeout"
    assert pane_count(rt.snapshot()) == 1


def test_cli_orchestrate_file(rt: Runtime, tmp_path: Path) -> None:
    """R10.1 through `pebrel ctl orchestrate --file` (and `-` for stdin)."""
    workflow = tmp_path / "workflow.json"
    workflow.write_text(
        json.dumps({"steps": [{"id": "r", "op": "split", "direction": "right"}]}), "utf-8"
    )
    done = rt.cli("ctl", "orchestrate", "--file", str(workflow), "--timeout-ms", "60000")
    assert done.code == 0, done
    assert done.json["result"]["steps"][0]["result"]["pane_id"] == 2
    bad = json.dumps({"steps": [{"id": "r", "op": "split", "direction": "sideways"}]})
    refused = subprocess.run(
        [PEBREL, "ctl", "orchestrate", "--file", "-"],
        input=bad,
        env=rt.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1
    assert json.loads(refused.stdout)["error"]["code"] == "invalid_params"
    assert rt.cli("ctl", "orchestrate", "--file", str(tmp_path / "missing.json")).code == 2
    assert pane_count(rt.snapshot()) == 2


def test_launch_phase_and_its_failures(rt: Runtime) -> None:
    """R10.5: a prompt step into a launching agent's pane waits for the launch phase (the agent
    is ready first, then the text reaches it); launch failures are per step: a name already
    taken (agent_name_conflict), a busy pane (invalid_state), no readiness in time
    (agent_ready_timeout)."""
    rt.ok("agent.start", {"name": "taken", "kind": "claude"})
    rt.ok("pane.run", {"window_id": 1, "pane_id": 1, "command": "sleep 30", "wait": False})
    receipt = orchestrate(
        rt,
        {
            "on_error": "continue",
            "steps": [
                {
                    "id": "p",
                    "op": "split",
                    "direction": "right",
                    "target": {"pane_id": 1, "window_id": 1},
                },
                {
                    "id": "a",
                    "op": "agent_launch",
                    "target": {"step": "p", "field": "pane_id"},
                    "name": "talker",
                    "kind": "codex",
                },
                {
                    "id": "hi",
                    "op": "prompt",
                    "target": {"step": "a", "field": "pane_id"},
                    "text": "hello there",
                },
                {
                    "id": "dup",
                    "op": "agent_launch",
                    "target": {"step": "p", "field": "pane_id"},
                    "name": "taken",
                    "kind": "claude",
                },
                {
                    "id": "busy",
                    "op": "agent_launch",
                    "target": {"window_id": 1, "pane_id": 1},
                    "name": "busy",
                    "kind": "claude",
                },
                {
                    "id": "q",
                    "op": "split",
                    "direction": "down",
                    "target": {"step": "p", "field": "pane_id"},
                },
                {  # the fakes leave this pane's PATH: `pi` is not found, never ready
                    "id": "nopath",
                    "op": "run",
                    "target": {"step": "q", "field": "pane_id"},
                    "command": "PATH=/usr/bin:/bin",
                },
                {
                    "id": "slow",
                    "op": "agent_launch",
                    "target": {"step": "q", "field": "pane_id"},
                    "name": "slow",
                    "kind": "pi",
                    "ready_timeout_ms": 1500,
                    "initial_prompt": "never",
                },
            ],
        },
    )
    assert statuses(receipt) == {
        "p": "ok",
        "a": "ok",
        "hi": "ok",
        "dup": "failed",
        "busy": "failed",
        "q": "ok",
        "nopath": "ok",
        "slow": "failed",
    }
    assert step(receipt, "a")["result"]["submitted"] is False  # no initial_prompt
    assert step(receipt, "dup")["error"]["code"] == "agent_name_conflict"
    assert step(receipt, "busy")["error"]["code"] == "invalid_state"
    assert step(receipt, "slow")["error"]["code"] == "agent_ready_timeout"
    assert receipt["failed_step"] == "dup" and receipt["partial"] is True
    talker = step(receipt, "a")["result"]["agent_id"]
    wait_for(
        lambda: rt.ok("agent.get", {"agent": talker})["last_message"] == "final: hello there",
        20,
        "the agent's answer to the prompt step",
    )
    assert "never" not in rt.read_text(step(receipt, "q")["result"]["pane_id"])
