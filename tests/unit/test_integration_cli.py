"""`pebrel integration` against services that lack a feature, and what it sends (I1.1, I1.5;
#17). The runtime is replaced by a fake `Client` that answers capabilities as told and records
every request; what a real runtime does is tests/e2e/test_integration_admin.py's."""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner, Result

from pebrel.cli import integration_cmd
from pebrel.cli.main import main
from pebrel.integration_wire import token_hash
from pebrel.schema import validate_params

pytestmark = pytest.mark.timeout(30)

ALL_FEATURES = {
    "principals": True,
    "integration_policy_update": True,
    "startup_input_conditions": True,
}


class FakeClient:
    """Answers collab.capabilities with `features`, everything else ok (or `refuse`)."""

    features: ClassVar[dict[str, Any]] = {}
    sent: ClassVar[list[tuple[str, dict[str, Any]]]] = []
    refuse: ClassVar[str | None] = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        FakeClient.sent.append((method, params))
        validate_params(method, params)
        if method == "collab.capabilities":
            return {"ok": True, "result": {"features": FakeClient.features}}
        if FakeClient.refuse is not None:
            return {"ok": False, "error": {"code": FakeClient.refuse, "details": {}}}
        return {"ok": True, "result": {"principal": {"principal_id": "bridge"}}}


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[FakeClient]]:
    monkeypatch.setattr(integration_cmd, "Client", FakeClient)
    FakeClient.features = dict(ALL_FEATURES)
    FakeClient.sent = []
    FakeClient.refuse = None
    yield FakeClient


def invoke(argv: str) -> Result:
    return CliRunner().invoke(main, shlex.split(argv), prog_name="pebrel")


def policy_file(tmp_path: Path, gated: bool = False) -> Path:
    profile: dict[str, Any] = {
        "id": "p",
        "agentSlug": "claude",
        "executable": "/bin/agent",
        "argv": [],
        "cwdRoots": ["/srv"],
        "resumeArgv": ["{sessionId}", "{launchArgs}"],
    }
    if gated:
        profile["startupInput"] = {"allOf": ["ready"]}
    path = tmp_path / "policy.json"
    path.write_text(
        json.dumps(
            {"id": "bridge", "groupId": "grp_1", "permissions": [], "launchProfiles": [profile]}
        )
    )
    return path


VERBS = ["groups", "list", "revoke bridge", "update --file {policy}", "create --file {policy}"]


@pytest.mark.parametrize("verb", VERBS)
def test_a_service_without_principals_is_refused(
    fake: type[FakeClient], tmp_path: Path, verb: str
) -> None:
    """I1.5: an upgraded CLI against an older service configures nothing."""
    fake.features = {"tasks": True}
    out = tmp_path / "c.json"
    argv = verb.format(policy=policy_file(tmp_path))
    if argv.startswith("create"):
        argv += f" --credential-file {out}"
    result = invoke(f"integration {argv}")
    assert result.exit_code == 1, result.output
    error = json.loads(result.output)["error"]
    assert error["code"] == "FEATURE_UNSUPPORTED" and error["details"]["feature"] == "principals"
    assert [m for m, _ in fake.sent] == ["collab.capabilities"]
    assert not out.exists()


def test_update_needs_the_policy_update_feature(fake: type[FakeClient], tmp_path: Path) -> None:
    fake.features = {**ALL_FEATURES, "integration_policy_update": False}
    result = invoke(f"integration update --file {policy_file(tmp_path)}")
    assert result.exit_code == 1
    error = json.loads(result.output)["error"]
    assert error["details"]["feature"] == "integration_policy_update"
    assert [m for m, _ in fake.sent] == ["collab.capabilities"]


@pytest.mark.parametrize("verb", ["create", "update"])
def test_a_startup_condition_needs_the_feature(
    fake: type[FakeClient], tmp_path: Path, verb: str
) -> None:
    """I1.5, I4.4: a startupInput is never dropped silently by a service that cannot wait."""
    fake.features = {**ALL_FEATURES, "startup_input_conditions": False}
    out = tmp_path / "c.json"
    extra = f" --credential-file {out}" if verb == "create" else ""
    result = invoke(f"integration {verb} --file {policy_file(tmp_path, gated=True)}{extra}")
    assert result.exit_code == 1
    assert json.loads(result.output)["error"]["details"]["feature"] == "startup_input_conditions"
    assert [m for m, _ in fake.sent] == ["collab.capabilities"]
    assert not out.exists()


def test_create_sends_the_hash_and_prints_the_id_and_path(
    fake: type[FakeClient], tmp_path: Path
) -> None:
    out = tmp_path / "c.json"
    result = invoke(f"integration create --file {policy_file(tmp_path)} --credential-file {out}")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["result"] == {
        "principal_id": "bridge",
        "credential_file": str(out),
    }
    token = json.loads(out.read_text())["token"]
    method, params = fake.sent[-1]
    assert method == "collab.integration.create"
    assert params["token_sha256"] == hashlib.sha256(token.encode()).hexdigest()
    assert params["token_sha256"] == token_hash(token)  # what the service compares
    assert token not in json.dumps(fake.sent) and token not in result.output


def test_a_refused_create_removes_its_file(fake: type[FakeClient], tmp_path: Path) -> None:
    fake.refuse = "INTEGRATION_EXISTS"
    out = tmp_path / "c.json"
    result = invoke(f"integration create --file {policy_file(tmp_path)} --credential-file {out}")
    assert result.exit_code == 1
    assert not out.exists()


def test_a_lost_answer_keeps_the_file_and_says_so(
    fake: type[FakeClient], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The create may have happened: the credential stays, the error tells how to find out."""
    from pebrel.client import RuntimeUnavailable

    def lost(self: FakeClient, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "collab.integration.create":
            raise RuntimeUnavailable("the runtime closed the connection")
        return {"ok": True, "result": {"features": ALL_FEATURES}}

    monkeypatch.setattr(FakeClient, "call", lost)
    out = tmp_path / "c.json"
    result = invoke(f"integration create --file {policy_file(tmp_path)} --credential-file {out}")
    assert result.exit_code == 3
    details = json.loads(result.output)["error"]["details"]
    assert details["outcome"] == "unknown" and details["credential_file"] == str(out)
    assert out.exists()
    assert json.loads(out.read_text())["token"] not in result.output
