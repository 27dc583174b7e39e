"""`collab.integration.*`: the local user creates, lists, updates and revokes principals (I1.1,
I1.4, I1.5; #17). A real Store, the handlers through `Service.handle`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pebrel.collab import integration_admin, principals
from pebrel.errors import CollabCode, CollabError
from pebrel.integration_wire import token_hash
from tests.unit.collab_world import USER, World, make_world, pane_caller
from tests.unit.principal_world import ALL, a_policy, as_principal, create, profile

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    yield from make_world(tmp_path)


def test_groups_lists_ids_and_names(world: World) -> None:
    team = world.group("team")
    other = world.group("other")
    assert world.call("collab.integration.groups") == {
        "groups": [{"group_id": team, "name": "team"}, {"group_id": other, "name": "other"}]
    }


def test_create_stores_a_hash_and_answers_no_secret(world: World) -> None:
    """I1.1: the service keeps the token's SHA-256 only; no answer shows it or a command."""
    team = world.group()
    record = create(world, "bridge", team)
    assert record == {
        "principal_id": "bridge",
        "group_id": team,
        "permissions": ALL,
        "launch_profiles": [
            {
                "id": "agent",
                "agent_slug": "claude",
                "cwd_roots": ["/srv/runs"],
                "startup_input_condition": False,
            }
        ],
        "max_sessions": 16,
        "revoked_at": None,
        "created_at": record["created_at"],
        "updated_at": record["created_at"],
    }
    listed = world.call("collab.integration.list")["principals"]
    assert listed == [record]
    text = repr(listed)
    assert token_hash("token-of-bridge") not in text and "/opt/wrappers" not in text
    row = world.store.conn.execute("SELECT token_hash FROM principals").fetchone()
    assert row[0] == token_hash("token-of-bridge")
    found = principals.authenticate(world.store, "bridge", "token-of-bridge")
    assert found.group_id == team
    assert [c["change"] for c in integration_admin.history(world.store, "bridge")] == ["create"]


def test_create_refuses_an_unknown_group_naming_groupId(world: World) -> None:
    world.group()
    error = world.fails(
        CollabCode.INVALID_POLICY,
        "collab.integration.create",
        policy=a_policy("bridge", "grp_nope"),
        token_sha256="0" * 64,
    )
    assert error.details["field"] == "groupId"


def test_create_refuses_a_group_named_not_by_id(world: World) -> None:
    """groupId is the group's id (`pebrel integration groups` lists it), never its name."""
    world.group("team")
    world.fails(
        CollabCode.INVALID_POLICY,
        "collab.integration.create",
        policy=a_policy("bridge", "team"),
        token_sha256="0" * 64,
    )


def test_create_checks_the_whole_policy_before_storing(world: World) -> None:
    team = world.group()
    bad = a_policy("bridge", team, profiles=[profile(resumeArgv=["resume"])])
    error = world.fails(
        CollabCode.INVALID_POLICY, "collab.integration.create", policy=bad, token_sha256="0" * 64
    )
    assert error.details["field"] == "launchProfiles[0].resumeArgv"
    assert world.count("principals") == 0 and world.count("principal_changes") == 0


@pytest.mark.parametrize("digest", ["", "0" * 63, "G" * 64, "A" * 64, None, 5])
def test_create_takes_a_sha256_hex(world: World, digest: Any) -> None:
    team = world.group()
    world.fails(
        CollabCode.INVALID_ARGUMENT,
        "collab.integration.create",
        policy=a_policy("bridge", team),
        token_sha256=digest,
    )


def test_an_existing_id_is_refused_even_revoked(world: World) -> None:
    """I1.4: re-authorising needs a new identity; a credential is never replaced."""
    team = world.group()
    create(world, "bridge", team)
    params: dict[str, Any] = {"policy": a_policy("bridge", team), "token_sha256": "1" * 64}
    world.fails(CollabCode.INTEGRATION_EXISTS, "collab.integration.create", **params)
    world.call("collab.integration.revoke", id="bridge")
    error = world.fails(CollabCode.INTEGRATION_EXISTS, "collab.integration.create", **params)
    assert error.details["revoked"] is True
    assert world.store.conn.execute("SELECT token_hash FROM principals").fetchone()[0] == (
        token_hash("token-of-bridge")
    )


def test_update_replaces_permissions_and_profiles_and_keeps_the_rest(world: World) -> None:
    """I1.5: id, group, credential and history stay."""
    team = world.group()
    before = create(world, "bridge", team)
    after = world.call(
        "collab.integration.update",
        policy=a_policy(
            "bridge",
            team,
            ["task.read", "events.read"],
            [profile("b", startupInput={"allOf": ["ready"]}), profile("c")],
        ),
    )["principal"]
    assert after["permissions"] == ["task.read", "events.read"]
    assert [p["id"] for p in after["launch_profiles"]] == ["b", "c"]
    assert after["launch_profiles"][0]["startup_input_condition"] is True
    assert after["group_id"] == team and after["created_at"] == before["created_at"]
    assert after["updated_at"] >= before["updated_at"]
    principals.authenticate(world.store, "bridge", "token-of-bridge")  # same credential
    changes = integration_admin.history(world.store, "bridge")
    assert [c["change"] for c in changes] == ["create", "update"]
    assert changes[1]["policy"]["launchProfiles"][0]["startupInput"]["stableMs"] == 1000


def test_update_cannot_change_the_group(world: World) -> None:
    team = world.group("team")
    other = world.group("other")
    create(world, "bridge", team)
    error = world.fails(
        CollabCode.INVALID_POLICY, "collab.integration.update", policy=a_policy("bridge", other)
    )
    assert error.details["field"] == "groupId"


def test_update_of_an_unknown_or_revoked_identity(world: World) -> None:
    team = world.group()
    world.fails(
        CollabCode.INTEGRATION_NOT_FOUND,
        "collab.integration.update",
        policy=a_policy("nobody", team),
    )
    create(world, "bridge", team)
    world.call("collab.integration.revoke", id="bridge")
    world.fails(
        CollabCode.INTEGRATION_REVOKED, "collab.integration.update", policy=a_policy("bridge", team)
    )


def test_update_checks_the_policy_whole(world: World) -> None:
    team = world.group()
    create(world, "bridge", team)
    error = world.fails(
        CollabCode.INVALID_POLICY,
        "collab.integration.update",
        policy=a_policy("bridge", team, ["task.read", "task.drive"]),
    )
    assert error.details["field"] == "permissions[1]"


def test_revoke_sets_revoked_at_once_and_tells_the_service(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """I1.4: revoked_at is set; a second revoke answers the same record and adds no change;
    the service is told after each (it ends the principal's streams)."""
    team = world.group()
    create(world, "bridge", team)
    told: list[str] = []
    monkeypatch.setattr(world.service, "revoked", told.append)
    first = world.call("collab.integration.revoke", id="bridge")["principal"]
    assert isinstance(first["revoked_at"], int)
    second = world.call("collab.integration.revoke", id="bridge")["principal"]
    assert second == first
    assert told == ["bridge", "bridge"]
    changes = [c["change"] for c in integration_admin.history(world.store, "bridge")]
    assert changes == ["create", "revoke"]
    with pytest.raises(CollabError) as caught:
        principals.authenticate(world.store, "bridge", "token-of-bridge")
    assert caught.value.code == CollabCode.INTEGRATION_REVOKED
    assert world.call("collab.integration.list")["principals"] == [first]


def test_revoke_of_an_unknown_identity(world: World) -> None:
    world.fails(CollabCode.INTEGRATION_NOT_FOUND, "collab.integration.revoke", id="nobody")


def test_a_failed_revoke_tells_the_service_nothing(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    told: list[str] = []
    monkeypatch.setattr(world.service, "revoked", told.append)
    world.fails(CollabCode.INTEGRATION_NOT_FOUND, "collab.integration.revoke", id="nobody")
    assert told == []


def test_create_is_idempotent_with_a_key(world: World) -> None:
    team = world.group()
    params: dict[str, Any] = {
        "policy": a_policy("bridge", team),
        "token_sha256": "2" * 64,
        "idempotency_key": "create-1",
    }
    first = world.call("collab.integration.create", **params)
    assert world.call("collab.integration.create", **params) == first
    world.fails(
        CollabCode.IDEMPOTENCY_CONFLICT,
        "collab.integration.create",
        **{**params, "token_sha256": "3" * 64},
    )


ADMIN = [
    ("collab.integration.groups", {}),
    ("collab.integration.list", {}),
    ("collab.integration.create", {"policy": {}, "token_sha256": "0" * 64}),
    ("collab.integration.update", {"policy": {}}),
    ("collab.integration.revoke", {"id": "bridge"}),
]


@pytest.mark.parametrize(("method", "params"), ADMIN, ids=[m for m, _ in ADMIN])
def test_the_admin_verbs_are_the_user_s_alone(
    world: World, method: str, params: dict[str, Any]
) -> None:
    """Never a pane caller (bound or not), the user acting as a session, or a principal."""
    team = world.group()
    alice = world.session("alice", 1, team)
    create(world, "bridge", team)
    denied = CollabCode.INTEGRATION_PERMISSION_DENIED
    world.fails(denied, method, pane_caller(1, 1), **params)
    world.fails(denied, method, pane_caller(1, 9), **params)
    world.fails(denied, method, {"kind": "unknown"}, **params)
    world.fails(denied, method, as_principal("bridge"), **params)
    world.fails(denied, method, USER, session=alice, **params)
