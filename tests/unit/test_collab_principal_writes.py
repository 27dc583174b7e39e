"""A principal's writes: idempotency scoped per principal, provenance, capabilities (I3.1,
I3.3, I1.7; #17 items 4-6), through `Service.handle` on a real Store."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pebrel.collab import policy
from pebrel.collab.task_log import PROVENANCE_MAX_BYTES
from pebrel.errors import CollabCode
from tests.unit.collab_world import USER, World, make_world
from tests.unit.principal_world import as_principal, create, profile

pytestmark = pytest.mark.timeout(60)

BRIDGE = as_principal("bridge")


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    yield from make_world(tmp_path)


def team_with_bridge(world: World) -> dict[str, str]:
    team = world.group("team")
    alice = world.session("alice", 1, team)
    create(world, "bridge", team)
    create(world, "other-bridge", team)
    return {"team": team, "alice": alice}


def create_params(ids: dict[str, str], **more: Any) -> dict[str, Any]:
    return {
        "group": ids["team"],
        "title": "Report",
        "content": "All of it",
        "assignee": ids["alice"],
        "idempotency_key": "ticket-7",
        **more,
    }


# -- idempotency (I3.1) -----------------------------------------------------------------------
def test_same_key_same_params_is_the_original_answer(world: World) -> None:
    ids = team_with_bridge(world)
    first = world.call("collab.task.create", BRIDGE, **create_params(ids))
    tasks, kicks = world.count("tasks"), world.deliveries.kicks
    assert world.call("collab.task.create", BRIDGE, **create_params(ids)) == first
    assert world.count("tasks") == tasks and world.deliveries.kicks == kicks


def test_same_params_in_another_key_order_are_the_same_request(world: World) -> None:
    """A retry whose JSON lists the same params (and the same metadata) in another order is
    the same write: its original answer, not IDEMPOTENCY_CONFLICT."""
    ids = team_with_bridge(world)
    params = create_params(ids, metadata={"a": 1, "b": 2})
    first = world.call("collab.task.create", BRIDGE, **params)
    reordered = dict(reversed(list(params.items())))
    reordered["metadata"] = {"b": 2, "a": 1}
    assert world.call("collab.task.create", BRIDGE, **reordered) == first


def test_same_key_other_params_is_a_conflict(world: World) -> None:
    ids = team_with_bridge(world)
    world.call("collab.task.create", BRIDGE, **create_params(ids))
    error = world.fails(
        CollabCode.IDEMPOTENCY_CONFLICT,
        "collab.task.create",
        BRIDGE,
        **create_params(ids, content="Other"),
    )
    assert error.details["idempotency_key"] == "ticket-7"


def test_keys_are_scoped_per_principal(world: World) -> None:
    """The same key from another principal or from the user is another write."""
    ids = team_with_bridge(world)
    mine = world.call("collab.task.create", BRIDGE, **create_params(ids))
    theirs = world.call("collab.task.create", as_principal("other-bridge"), **create_params(ids))
    users = world.call("collab.task.create", USER, **create_params(ids))
    assert len({mine["task"]["task_id"], theirs["task"]["task_id"], users["task"]["task_id"]}) == 3
    # and a different body under the same key is each one's own conflict, not the others'
    world.call(
        "collab.task.comment",
        as_principal("other-bridge"),
        task=mine["task"]["task_id"],
        content="?",
        idempotency_key="c-1",
    )
    world.call(
        "collab.task.comment",
        BRIDGE,
        task=theirs["task"]["task_id"],
        content="!",
        idempotency_key="c-1",
    )


def test_the_original_answer_survives_a_restart(world: World, tmp_path: Path) -> None:
    """I3.1: keys are stored with the facts, so a reopened service answers the same."""
    ids = team_with_bridge(world)
    first = world.call("collab.task.create", BRIDGE, **create_params(ids))
    world.store.close()
    again = World(tmp_path)
    try:
        assert again.call("collab.task.create", BRIDGE, **create_params(ids)) == first
        assert again.count("tasks") == 1
        again.fails(
            CollabCode.IDEMPOTENCY_CONFLICT,
            "collab.task.create",
            BRIDGE,
            **create_params(ids, title="Else"),
        )
    finally:
        again.store.close()
        world.store = again.store  # the fixture closes it again: harmless


# -- provenance (I3.3) ------------------------------------------------------------------------
def test_a_principal_s_task_records_its_provenance(world: World) -> None:
    ids = team_with_bridge(world)
    created = world.call(
        "collab.task.create",
        BRIDGE,
        **create_params(
            ids,
            source="external",
            external_actor={"id": "u-42", "name": "Ana"},
            external_message_id="m-1001",
            metadata={"ticket": 7},
        ),
    )
    task_id = created["task"]["task_id"]
    assert created["task"]["source"] == "integration"
    task = world.call("collab.task.get", BRIDGE, task=task_id)["task"]
    assert task["source"] == "integration"
    assert task["origin"] == {"integrationId": "bridge", "source": "external"}
    assert task["external_actor"] == {"id": "u-42", "name": "Ana"}
    assert task["external_message_id"] == "m-1001"
    assert task["metadata"] == {"ticket": 7}
    created_ev, assigned_ev = task["events"][:2]
    for ev in (created_ev, assigned_ev):
        body = ev["payload"]["event"]
        assert body["actor"] == {"kind": "principal", "principal_id": "bridge"}
        assert body["source"] == "integration"
        assert body["origin"] == {"integrationId": "bridge", "source": "external"}
        assert body["external_actor"] == {"id": "u-42", "name": "Ana"}
        assert body["external_message_id"] == "m-1001"
        assert ev["source"] == "integration" and ev["external_actor"] == {
            "id": "u-42",
            "name": "Ana",
        }
    sender = json.loads(
        world.store.conn.execute(
            "SELECT from_actor FROM messages WHERE id = ?", (created["message_id"],)
        ).fetchone()[0]
    )
    assert sender == {"kind": "principal", "principal_id": "bridge"}  # never a member or the user


def test_each_principal_write_carries_its_provenance(world: World) -> None:
    """comment, revise, answer and assign record source, origin and the external fields."""
    ids = team_with_bridge(world)
    bob = world.session("bob", 2, ids["team"])
    task_id = world.call("collab.task.create", BRIDGE, **create_params(ids))["task"]["task_id"]
    decision = world.call(
        "collab.task.question", task=task_id, content="which?", session=ids["alice"]
    )["decision_id"]
    said = {"external_actor": {"id": "u-1"}, "external_message_id": "m-2", "metadata": {"k": 1}}
    writes = [
        ("collab.task.comment", {"task": task_id, "content": "why?"}),
        ("collab.task.answer", {"task": task_id, "decision": decision, "content": "this"}),
        ("collab.task.revise", {"task": task_id, "revision": 1, "content": "more"}),
        ("collab.task.assign", {"task": task_id, "assignee": bob, "revision": 2}),
    ]
    for n, (method, params) in enumerate(writes):
        world.call(method, BRIDGE, **params, **said, idempotency_key=f"w-{n}")
    events = world.call("collab.events.list", BRIDGE, group=ids["team"])["events"]
    mine = [
        e
        for e in events
        if e.get("actor", {}).get("kind") == "principal" and e["kind"].startswith("task.")
    ]
    kinds = [e["kind"] for e in mine]
    assert kinds[-4:] == ["task.comment", "task.answer", "task.revise", "task.assigned"]
    for ev in mine[-4:]:
        body = ev["payload"]["event"]
        assert body["source"] == "integration" and body["origin"] == {"integrationId": "bridge"}
        assert body["external_actor"] == {"id": "u-1"} and body["metadata"] == {"k": 1}
        assert body["external_message_id"] == "m-2"
        assert ev["external_actor"] == {"id": "u-1"}


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("external_actor", "u-42"),
        ("external_actor", ["u"]),
        ("metadata", [1]),
        ("external_message_id", ""),
        ("external_message_id", 5),
        ("external_message_id", "m" * 1025),
        ("source", ""),
        ("source", "x" * 65),
    ],
)
def test_provenance_of_the_wrong_shape_is_refused(world: World, param: str, value: Any) -> None:
    ids = team_with_bridge(world)
    error = world.fails(
        CollabCode.INVALID_ARGUMENT,
        "collab.task.create",
        BRIDGE,
        **create_params(ids, **{param: value}),
    )
    assert error.details["param"] == param


def test_provenance_is_at_most_16_kib_in_all(world: World) -> None:
    ids = team_with_bridge(world)
    half = "x" * (PROVENANCE_MAX_BYTES // 2)
    error = world.fails(
        CollabCode.INVALID_ARGUMENT,
        "collab.task.create",
        BRIDGE,
        **create_params(ids, external_actor={"a": half}, metadata={"b": half}),
    )
    assert error.details["limit"] == PROVENANCE_MAX_BYTES
    world.fails(
        CollabCode.INVALID_ARGUMENT,
        "collab.task.comment",
        BRIDGE,
        task="tsk_none",
        content="?",
        idempotency_key="k",
        metadata={"b": "y" * PROVENANCE_MAX_BYTES},
    )
    world.call(
        "collab.task.create",
        BRIDGE,
        **create_params(ids, metadata={"b": "z" * (PROVENANCE_MAX_BYTES - 200)}),
    )


def test_the_user_s_task_keeps_its_source(world: World) -> None:
    ids = team_with_bridge(world)
    created = world.call("collab.task.create", USER, **create_params(ids, source="cron"))
    task = world.call("collab.task.get", task=created["task"]["task_id"])["task"]
    assert task["source"] == "user" and task["origin"] == {"source": "cron"}
    assert task["external_actor"] is None and task["external_message_id"] is None


# -- capabilities (I1.7) ----------------------------------------------------------------------
def test_capabilities_for_a_principal(world: World) -> None:
    team = world.group("team")
    create(
        world,
        "bridge",
        team,
        ["events.read", "task.read"],
        [profile("a", startupInput={"allOf": ["ready"]}), profile("b", agentSlug="codex")],
    )
    caps = world.call("collab.capabilities", BRIDGE)
    assert caps["integration_protocol"] == 1 and caps["local_only"] is True
    assert caps["permissions"] == list(policy.PERMISSIONS)
    assert caps["caller"] == {"kind": "principal", "principal_id": "bridge"}
    assert caps["features"]["principals"] is True
    assert caps["features"]["events_stream"] is True
    assert caps["features"]["integration_policy_update"] is True
    assert caps["features"]["startup_input_conditions"] is True
    assert caps["principal"] == {
        "id": "bridge",
        "group_id": team,
        "permissions": ["task.read", "events.read"],
        "launch_profiles": [
            {
                "id": "a",
                "agent_slug": "claude",
                "cwd_roots": ["/srv/runs"],
                "startup_input_condition": True,
            },
            {
                "id": "b",
                "agent_slug": "codex",
                "cwd_roots": ["/srv/runs"],
                "startup_input_condition": False,
            },
        ],
    }
    assert "/opt/wrappers" not in json.dumps(caps) and "resume" not in json.dumps(caps)


def test_capabilities_for_the_user_have_no_principal_block(world: World) -> None:
    caps = world.call("collab.capabilities")
    assert "principal" not in caps and caps["caller"] == {"kind": "user"}
    assert caps["permissions"] == list(policy.PERMISSIONS)
