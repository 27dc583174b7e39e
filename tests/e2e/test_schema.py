"""The shipped JSON Schema is the contract: it is valid, closed, and matches real answers.

R1.6 says `runtime-api-v1.schema.json` ships with the code and matches what the server does;
R2.3 says params objects are closed; R2.4 fixes what `runtime.describe` announces.
"""

from __future__ import annotations

import json
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from pebrel import PROTOCOL
from pebrel.schema import SCHEMA_FILE
from tests.agent_fixtures import fake_agents_env
from tests.conftest import Runtime, at_prompt, wait_for

pytestmark = pytest.mark.timeout(90)


@cache
def schema_doc() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return loaded


@cache
def validator_for(ref: str) -> Draft202012Validator:
    """A validator for `ref` with the whole document as root, so local $refs resolve."""
    return Draft202012Validator({**schema_doc(), "$ref": ref})


def problems(instance: Any, ref: str) -> list[str]:
    return [
        f"{ref} at /{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator_for(ref).iter_errors(instance)
    ]


def raw_call(rt: Runtime, line: bytes) -> dict[str, Any]:
    """Send one raw line on an authenticated connection and return the answer to it."""
    with rt.client() as client:
        assert client.call("runtime.describe")["ok"]
        client.sock.sendall(line)
        return client.read_line()


def request_line(rt: Runtime, method: str, params: Any, **overrides: Any) -> bytes:
    token = json.loads((rt.data_dir / "runtime.port").read_text())["token"]
    body: dict[str, Any] = {
        "protocol": PROTOCOL,
        "version": 1,
        "id": "raw",
        "token": token,
        "method": method,
        "params": params,
        **overrides,
    }
    return json.dumps(body).encode() + b"\n"


# ---- the document itself -------------------------------------------------------------------


def test_schema_is_valid_draft_2020_12() -> None:
    """R1.6: the shipped schema is itself a valid JSON Schema (draft 2020-12)."""
    Draft202012Validator.check_schema(schema_doc())
    for name in schema_doc()["methods"]:
        Draft202012Validator.check_schema({**schema_doc(), "$ref": f"#/methods/{name}/result"})


def test_every_params_object_is_closed() -> None:
    """R2.3: every method's params is an object schema with additionalProperties: false."""
    methods = schema_doc()["methods"]
    assert methods, "the schema lists no methods"
    open_ones = [
        name
        for name, spec in methods.items()
        if spec["params"].get("type") != "object"
        or spec["params"].get("additionalProperties") is not False
    ]
    assert open_ones == []
    without_result = [name for name, spec in methods.items() if "result" not in spec]
    assert without_result == []


def test_every_method_error_list_names_known_codes() -> None:
    """R2.2: the error codes a method documents are all in the error_code enum (a collab.*
    method's in collab_error_code, I1-I4, #16)."""
    codes = set(schema_doc()["$defs"]["error_code"]["enum"])
    collab = set(schema_doc()["$defs"]["collab_error_code"]["enum"])
    unknown = {
        (name, code)
        for name, spec in schema_doc()["methods"].items()
        for code in spec.get("errors", [])
        if code not in (collab if name.startswith("collab.") else codes)
    }
    assert unknown == set()


# ---- real answers --------------------------------------------------------------------------


@pytest.fixture
def runtime_env(tmp_path: Path) -> dict[str, str]:
    """The runtime of these tests has the fake AI CLIs (tests/fakes) first on PATH."""
    return fake_agents_env(tmp_path)


def git_repo(path: Path) -> Path:
    """A committed git repository at `path` (for agent.fork)."""
    path.mkdir()
    for argv in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "config", "user.email", "schema@example.invalid"],
        ["git", "config", "user.name", "Schema Test"],
        ["git", "commit", "-q", "--allow-empty", "-m", "initial"],
    ):
        subprocess.run(argv, cwd=path, check=True, capture_output=True)
    return path


def test_real_results_match_the_schema(runtime: Runtime, tmp_path: Path) -> None:
    """R1.6: a real answer of every terminal method validates against methods.<name>.result,
    and every envelope against $defs.response."""
    calls: list[tuple[str, dict[str, Any]]] = []

    def call(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        envelope = runtime.call(method, params or {})
        assert envelope["ok"], json.dumps(envelope)
        calls.append((method, envelope))
        result: dict[str, Any] = envelope["result"]
        return result

    at_prompt(runtime)
    call("runtime.describe")
    call("runtime.snapshot")
    created = call("window.create")
    call("window.focus", {"window_id": 1})
    call("window.focus", {"window_id": 1, "pane_id": 1})
    tab = call("tab.new", {"window_id": 1})
    split = call("pane.split", {"window_id": 1, "pane_id": 1, "direction": "right"})
    call("pane.run", {"window_id": 1, "pane_id": 1, "command": "echo schema-check"})
    started = call(
        "pane.run", {"window_id": 1, "pane_id": 1, "command": "sleep 0.3", "wait": False}
    )
    call(
        "pane.wait",
        {
            "window_id": 1,
            "pane_id": 1,
            "state": "settled",
            "after_seq": started["state_change_seq"],
            "timeout_ms": 15_000,
        },
    )
    # A command that outlives the prompt's answer: a baseline race is not this test's subject.
    prompted = call("pane.prompt", {"window_id": 1, "pane_id": 1, "text": "sleep 0.3"})
    call(
        "pane.wait",
        {
            "window_id": 1,
            "pane_id": 1,
            "state": "settled",
            "after_seq": prompted["state_change_seq"],
            "timeout_ms": 15_000,
        },
    )
    call("pane.paste", {"window_id": 1, "pane_id": 1, "text": "echo pasted", "submit": False})
    keyed = call("pane.send_key", {"window_id": 1, "pane_id": 1, "key": "enter"})
    call(
        "pane.wait",
        {
            "window_id": 1,
            "pane_id": 1,
            "state": "settled",
            "after_seq": keyed["state_change_seq"],
            "timeout_ms": 15_000,
        },
    )
    call("pane.read", {"window_id": 1, "pane_id": 1, "lines": 20})
    call("pane.wait_any", {"targets": [{"window_id": 1, "pane_id": 1}], "state": "settled"})
    call("pane.exec", {"window_id": 1, "pane_id": 1, "argv": ["sh", "-c", "echo o; echo e >&2"]})
    call("pane.procs", {"window_id": 1, "pane_id": 1})
    call("pane.screen", {"window_id": 1, "pane_id": 1})
    call("pane.user_input", {"window_id": 1, "pane_id": 1, "data_b64": "IH8="})  # space, DEL
    call("pane.resize", {"window_id": 1, "pane_id": 1, "ratio": 0.4})
    call("pane.zoom", {"window_id": 1, "pane_id": 1, "zoomed": True})
    call("tab.rename", {"window_id": 1, "tab_index": 0, "name": "schema"})
    call("tab.move", {"window_id": 1, "tab_index": 0, "to_index": 1})
    call("tab.move", {"window_id": 1, "tab_index": 1, "to_index": 0})
    call("events.subscribe", {"since_revision": 0})
    started = call("agent.start", {"name": "schema", "kind": "claude"})
    ref = {"agent": "schema", "generation": started["generation"]}
    call("agents.list")
    call("agent.get", ref)
    sent = call("agent.prompt", {**ref, "text": "check the schema"})
    call(
        "agent.wait",
        {**ref, "state": "settled", "after_seq": sent["state_change_seq"], "timeout_ms": 20000},
    )
    call("agent.read", {**ref, "lines": 10})
    call("agent.paste", {**ref, "text": "typed, not sent", "submit": False})
    helper = call("agent.start", {"name": "schema-helper", "kind": "codex"})
    call(
        "agent.delegate",
        {
            "agent": "schema-helper",
            "text": "a side task",
            "origin_window_id": started["window_id"],
            "origin_pane_id": started["pane_id"],
        },
    )
    assert helper["kind"] == "codex"
    repo = git_repo(tmp_path / "repo")
    call("agent.fork", {"source_cwd": str(repo), "name": "schema-fork", "kind": "claude"})
    call(
        "agent.launch",
        {"name": "schema-launch", "kind": "claude", "argv": ["claude"], "cwd": str(tmp_path)},
    )
    call(
        "runtime.orchestrate",
        {
            "steps": [
                {"id": "side", "op": "split", "direction": "down"},
                {"id": "name", "op": "rename_tab", "name": "orchestrated"},
            ]
        },
    )
    call(
        "agent.hook",
        {
            "window_id": started["window_id"],
            "pane_id": started["pane_id"],
            "event": "start",
            "kind": "claude",
        },
    )
    call("runtime.snapshot")  # now with two windows, two tabs and a split layout
    call("pane.close", {"window_id": 1, "pane_id": split["pane_id"]})
    call("tab.close", {"window_id": 1, "tab_index": tab["tab_index"]})
    call("window.close", {"window_id": created["window_id"]})

    # Every terminal method; the collab.* methods' answers are checked by the collab tests.
    terminal_methods = {name for name in schema_doc()["methods"] if not name.startswith("collab.")}
    assert {method for method, _ in calls if not method.startswith("collab.")} == terminal_methods
    found: list[str] = []
    for method, envelope in calls:
        found += problems(envelope, "#/$defs/response")
        found += problems(envelope["result"], f"#/methods/{method}/result")
    assert found == []


def _busy_pane(rt: Runtime) -> int:
    """Open a second pane in window 1 running a long command; return its id."""
    pane_id: int = rt.ok("pane.split", {"window_id": 1, "pane_id": 1, "direction": "down"})[
        "pane_id"
    ]
    at_prompt(rt, pane_id)
    rt.ok("pane.run", {"window_id": 1, "pane_id": pane_id, "command": "sleep 30", "wait": False})
    wait_for(lambda: rt.pane(pane_id)["task_state"] == "running", 10, f"pane {pane_id} running")
    return pane_id


def test_real_errors_match_the_schema(runtime: Runtime) -> None:
    """R1.6, R2.2: error envelopes validate against $defs.response, and every code the server
    sends is in the schema's error_code enum."""
    busy = _busy_pane(runtime)
    answers: dict[str, dict[str, Any]] = {
        "method_not_found": runtime.call("pane.teleport"),
        "invalid_params": runtime.call("pane.read", {"pane_id": 1, "lines": "ten"}),
        "unknown_field": runtime.call("runtime.snapshot", {"verbose": True}),
        "target_not_found": runtime.call("pane.read", {"window_id": 1, "pane_id": 99}),
        "window_not_found": runtime.call("window.close", {"window_id": 42}),
        "timeout": runtime.call(
            "pane.wait", {"window_id": 1, "pane_id": 1, "state": "running", "timeout_ms": 50}
        ),
        "confirmation_required": runtime.call("pane.close", {"window_id": 1, "pane_id": busy}),
        "invalid_shell": runtime.call("tab.new", {"window_id": 1, "shell": "no-such-shell"}),
        "invalid_request": raw_call(runtime, request_line(runtime, "runtime.snapshot", [1])),
        "not_json": raw_call(runtime, b"not json at all\n"),
        "protocol_version_mismatch": raw_call(
            runtime, request_line(runtime, "runtime.snapshot", {}, version=2)
        ),
    }
    runtime.ok("pane.close", {"window_id": 1, "pane_id": busy, "confirm": True})

    enum = set(schema_doc()["$defs"]["error_code"]["enum"])
    found: list[str] = []
    for name, envelope in answers.items():
        assert envelope["ok"] is False, (name, envelope)
        found += problems(envelope, "#/$defs/response")
        if envelope["error"]["code"] not in enum:
            found.append(f"{name}: code {envelope['error']['code']!r} not in the enum")
    assert found == []
    wrong_code = {
        name: envelope["error"]["code"]
        for name, envelope in answers.items()
        if name in enum and envelope["error"]["code"] != name
    }
    assert wrong_code == {}


# ---- runtime.describe ----------------------------------------------------------------------


def test_describe_announces_the_schema_methods_features_and_env(runtime: Runtime) -> None:
    """R2.4: capabilities are exactly the schema's methods; the required features and the env
    contract are announced."""
    described = runtime.ok("runtime.describe")
    capabilities = described["capabilities"]
    assert len(capabilities) == len(set(capabilities))
    assert sorted(capabilities) == sorted(schema_doc()["methods"])
    assert {"env.pane_identity", "cli.resource_verbs", "pane.wait.after_seq"} <= set(
        described["features"]
    )
    assert {"PEBREL_WINDOW_ID", "PEBREL_PANE_ID"} <= set(described["env"]["variables"])
    assert described["protocol"] == "nebula.runtime"
    assert described["protocol_version"] == 1
    assert described["supported_versions"] == [1]


def test_result_validators_do_reject_wrong_shapes() -> None:
    """R1.6: the `$ref` validators really check (a guard against a vacuous schema test)."""
    assert problems({"ok": "yes"}, "#/$defs/response")
    assert problems(
        {"protocol": PROTOCOL, "version": 1, "id": 1, "ok": False, "error": {"code": "nope"}},
        "#/$defs/response",
    )
    assert problems({"window_id": "1"}, "#/methods/window.create/result")
    assert problems({}, "#/methods/pane.read/result")
