"""`pebrel integration ...` against a real runtime (FEATURES I1.1-I1.5, #17).

The admin's walk-through (groups, create, list, update, revoke) and the credential file's
rules: OUT must not exist (a file, a dangling or live symbolic link, a missing directory: all
refused before anything is sent), is created 0600 with the credential JSON, and only the id
and path are printed; the token is nowhere else (output, logs, the database holds its SHA-256
only). A refused create removes OUT. An update cannot change the group, a revoked identity
cannot be updated or created again. The verbs are the user's: a process in a pane is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.collab_fixtures import collab, serving
from tests.conftest import (
    CliResult,
    Runtime,
    at_prompt,
    base_env,
    inject_env,
    started_runtime,
    wait_for,
)

pytestmark = pytest.mark.timeout(120)

PERMISSIONS = ["task.read", "task.create", "task.comment", "events.read"]


def a_policy(group_id: str, principal_id: str = "report-bridge", **more: Any) -> dict[str, Any]:
    return {
        "id": principal_id,
        "groupId": group_id,
        "permissions": PERMISSIONS,
        "launchProfiles": [
            {
                "id": "report-agent",
                "agentSlug": "claude",
                "executable": "/opt/wrappers/report-agent",
                "argv": ["--model", "m", "-C", "{cwd}"],
                "cwdRoots": ["/srv/runs"],
                "resumeArgv": ["--resume", "{sessionId}", "{launchArgs}"],
            }
        ],
        **more,
    }


def write_json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def team(rt: Runtime) -> str:
    wait_for(lambda: serving(rt), 20, "the collab service")
    return str(collab(rt, "group", "create", "team")["group"]["group_id"])


def integration(rt: Runtime, *args: str) -> CliResult:
    return rt.cli("integration", *args)


def ok(done: CliResult) -> dict[str, Any]:
    assert done.code == 0, done
    envelope = done.json
    assert envelope["ok"], envelope
    result: dict[str, Any] = envelope["result"]
    return result


def refused(done: CliResult, code: str) -> dict[str, Any]:
    assert done.code == 1, done
    error: dict[str, Any] = done.json["error"]
    assert error["code"] == code, error
    return error


def stored_hashes(rt: Runtime) -> dict[str, str]:
    db = sqlite3.connect(rt.data_dir / "collab" / "collab.db")
    try:
        return dict(db.execute("SELECT id, token_hash FROM principals").fetchall())
    finally:
        db.close()


def everything_written(rt: Runtime) -> str:
    """Every file of the data dir as text (logs, the database and its WAL)."""
    out = []
    for path in rt.data_dir.rglob("*"):
        if path.is_file() and not path.is_socket():
            out.append(path.read_bytes().decode("utf-8", "replace"))
    return "\n".join(out)


def test_admin_walk_through(runtime: Runtime, tmp_path: Path) -> None:
    """I1.1-I1.5: groups -> create -> list -> update -> revoke, with the credential rules."""
    group_id = team(runtime)
    assert ok(integration(runtime, "groups")) == {
        "groups": [{"group_id": group_id, "name": "team"}]
    }
    policy = write_json(tmp_path / "policy.json", a_policy(group_id))
    out = tmp_path / "private" / "bridge-credential.json"
    out.parent.mkdir(mode=0o700)

    created = integration(runtime, "create", "--file", str(policy), "--credential-file", str(out))
    assert ok(created) == {"principal_id": "report-bridge", "credential_file": str(out)}
    assert stat.S_IMODE(out.lstat().st_mode) == 0o600 and stat.S_ISREG(out.lstat().st_mode)
    credential = json.loads(out.read_text())
    token = credential.pop("token")
    assert credential == {
        "principal": "report-bridge",
        "protocol": "pebrel.integration",
        "version": 1,
    }
    assert len(token) >= 43
    assert token not in created.stdout + created.stderr
    digest = hashlib.sha256(token.encode()).hexdigest()
    assert stored_hashes(runtime) == {"report-bridge": digest}
    assert token not in everything_written(runtime)

    listed = ok(integration(runtime, "list"))["principals"]
    assert [p["principal_id"] for p in listed] == ["report-bridge"]
    assert listed[0]["permissions"] == PERMISSIONS and listed[0]["revoked_at"] is None
    assert digest not in json.dumps(listed) and "/opt/wrappers" not in json.dumps(listed)

    narrower = write_json(
        tmp_path / "narrower.json", {**a_policy(group_id), "permissions": ["events.read"]}
    )
    updated = ok(integration(runtime, "update", "--file", str(narrower)))["principal"]
    assert updated["permissions"] == ["events.read"] and updated["group_id"] == group_id
    assert stored_hashes(runtime) == {"report-bridge": digest}  # the same credential

    other = str(collab(runtime, "group", "create", "other")["group"]["group_id"])
    moved = write_json(tmp_path / "moved.json", a_policy(other))
    error = refused(integration(runtime, "update", "--file", str(moved)), "INVALID_POLICY")
    assert error["details"]["field"] == "groupId"

    revoked = ok(integration(runtime, "revoke", "report-bridge"))["principal"]
    assert isinstance(revoked["revoked_at"], int)
    assert ok(integration(runtime, "revoke", "report-bridge"))["principal"] == revoked
    refused(integration(runtime, "update", "--file", str(narrower)), "INTEGRATION_REVOKED")

    again = tmp_path / "private" / "again.json"
    refused(
        integration(runtime, "create", "--file", str(policy), "--credential-file", str(again)),
        "INTEGRATION_EXISTS",
    )
    assert not os.path.lexists(again)  # a refused create removes the file it made
    assert stored_hashes(runtime) == {"report-bridge": digest}
    refused(integration(runtime, "revoke", "nobody"), "INTEGRATION_NOT_FOUND")


def test_the_credential_file_must_be_new(runtime: Runtime, tmp_path: Path) -> None:
    """I1.3: an existing OUT (a file, a dangling or live symbolic link) or one that cannot be
    made is refused before anything is sent; nothing is created, nothing is overwritten."""
    group_id = team(runtime)
    policy = str(write_json(tmp_path / "policy.json", a_policy(group_id)))

    existing = tmp_path / "existing.json"
    existing.write_text("keep me")
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nowhere.json")
    live = tmp_path / "live.json"
    live.symlink_to(existing)
    for out in (existing, dangling, live, tmp_path / "no-such-dir" / "c.json"):
        done = integration(runtime, "create", "--file", policy, "--credential-file", str(out))
        assert done.code == 2, done
        assert "credential-file" in done.stderr
    assert existing.read_text() == "keep me"
    assert dangling.is_symlink() and not (tmp_path / "nowhere.json").exists()
    assert ok(integration(runtime, "list"))["principals"] == []


def test_a_refused_policy_leaves_no_credential(runtime: Runtime, tmp_path: Path) -> None:
    """I1.2: INVALID_POLICY names the field; the credential file made for it is removed.
    A startupInput out of range is refused the same way (I4.4); a service that cannot wait
    for one refuses it too (tests/unit/test_integration_cli.py)."""
    group_id = team(runtime)
    out = tmp_path / "c.json"
    bad = a_policy(group_id)
    bad["launchProfiles"][0]["resumeArgv"] = ["--resume", "{sessionId}"]
    done = integration(
        runtime,
        "create",
        "--file",
        str(write_json(tmp_path / "bad.json", bad)),
        "--credential-file",
        str(out),
    )
    error = refused(done, "INVALID_POLICY")
    assert error["details"]["field"] == "launchProfiles[0].resumeArgv"
    assert not os.path.lexists(out)

    no_id = {k: v for k, v in a_policy(group_id).items() if k != "id"}
    no_id_file = str(write_json(tmp_path / "no-id.json", no_id))
    done = integration(runtime, "create", "--file", no_id_file, "--credential-file", str(out))
    assert refused(done, "INVALID_POLICY")["details"]["field"] == "id"
    assert not os.path.lexists(out)

    gated = a_policy(group_id)
    gated["launchProfiles"][0]["startupInput"] = {"allOf": ["ready"], "stableMs": 1}
    gated_file = str(write_json(tmp_path / "gated.json", gated))
    done = integration(runtime, "create", "--file", gated_file, "--credential-file", str(out))
    error = refused(done, "INVALID_POLICY")
    assert error["details"]["field"] == "launchProfiles[0].startupInput.stableMs"
    assert not os.path.lexists(out)
    assert ok(integration(runtime, "list"))["principals"] == []

    (tmp_path / "broken.json").write_text("{not json")
    done = integration(
        runtime, "create", "--file", str(tmp_path / "broken.json"), "--credential-file", str(out)
    )
    assert done.code == 2 and not os.path.lexists(out)
    done = integration(runtime, "update", "--file", str(tmp_path / "missing.json"))
    assert done.code == 2


def test_a_process_in_a_pane_cannot_administer(runtime: Runtime, tmp_path: Path) -> None:
    """Pane callers are not the user: the admin verbs refuse them."""
    group_id = team(runtime)
    at_prompt(runtime)
    policy = write_json(tmp_path / "policy.json", a_policy(group_id))
    answer = tmp_path / "answer.json"
    out = tmp_path / "c.json"
    ran = runtime.run(
        1, f"pebrel integration create --file {policy} --credential-file {out} > {answer}"
    )
    assert ran["exit_code"] == 1
    assert json.loads(answer.read_text())["error"]["code"] == "INTEGRATION_PERMISSION_DENIED"
    assert not os.path.lexists(out)
    ran = runtime.run(1, f"pebrel integration list > {answer}")
    assert ran["exit_code"] == 1
    assert json.loads(answer.read_text())["error"]["code"] == "INTEGRATION_PERMISSION_DENIED"


def test_no_runtime_no_credential(tmp_path: Path) -> None:
    """Exit 3 without a runtime, and no credential file is made."""
    env = base_env(tmp_path)
    rt = Runtime(Path(env["PEBREL_DATA_DIR"]), env)
    policy = write_json(tmp_path / "policy.json", a_policy("grp_x"))
    out = tmp_path / "c.json"
    done = rt.cli("integration", "create", "--file", str(policy), "--credential-file", str(out))
    assert done.code == 3, done
    assert done.json["error"]["code"] == "runtime_unavailable"
    assert not os.path.lexists(out)


def test_a_create_whose_answer_is_lost_keeps_the_credential(tmp_path: Path) -> None:
    """The service dies after it stored the identity, before it answered: the outcome is
    unknown, so OUT is kept (exit 3) and works once the service is back."""
    env = {**base_env(tmp_path), **inject_env("collab_dies_after_create")}
    with started_runtime(env) as rt:
        policy = write_json(tmp_path / "policy.json", a_policy(team(rt)))
        out = tmp_path / "credential.json"
        (rt.data_dir / "collab-die-after-create").write_text("")
        done = integration(rt, "create", "--file", str(policy), "--credential-file", str(out))
        assert done.code == 3, done
        error = done.json["error"]
        assert error["code"] == "INTEGRATION_RUNTIME_UNAVAILABLE", error
        assert error["details"]["outcome"] == "unknown"
        assert error["details"]["credential_file"] == str(out)
        assert stat.S_IMODE(out.stat().st_mode) == 0o600
        wait_for(lambda: serving(rt), 30, "the collab service back")
        (listed,) = ok(integration(rt, "list"))["principals"]
        assert listed["principal_id"] == "report-bridge"
        caps = rt.cli(
            "collab",
            "--principal",
            "report-bridge",
            "capabilities",
            PEBREL_INTEGRATION_CREDENTIAL_FILE=str(out),
        )
        assert caps.code == 0, caps
        assert caps.json["result"]["principal"]["id"] == "report-bridge"
