"""The permission table for principals, row by row (spec "任务与权限", FEATURES I3.2, I1.2;
#17 item 4), through `Service.handle` with a principal caller on a real Store.

World: group `team` with alice (assignee of task T, with an open question) and bob; carol in
group `other` with task X. Principal `full` (team) holds every permission; for each row a
principal holding every permission but the row's is refused with nothing changed; `outsider`
(group other) is refused on team's things. Rows the table does not open to principals are
refused even to `full`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from pebrel.collab import policy, rights
from pebrel.errors import CollabCode
from tests.unit.collab_world import World, make_world, team_and_other
from tests.unit.principal_world import ALL, as_principal, create

pytestmark = pytest.mark.timeout(60)

DENIED = CollabCode.INTEGRATION_PERMISSION_DENIED
FULL = as_principal("full")


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    yield from make_world(tmp_path)


def setup(world: World) -> dict[str, str]:
    ids = team_and_other(world)
    team, other = ids["team"], ids["other"]
    ids["decision"] = world.call(
        "collab.task.question", task=ids["task"], content="which?", session=ids["alice"]
    )["decision_id"]
    x = world.call("collab.task.create", group=other, title="X", content="x", assignee=ids["carol"])
    ids["x"] = x["task"]["task_id"]
    ids["x_message"] = x["message_id"]
    create(world, "full", team)
    create(world, "outsider", other)
    return ids


def named(ids: dict[str, str], value: Any) -> Any:
    return ids.get(value, value) if isinstance(value, str) else value


class Row(NamedTuple):
    id: str
    method: str
    params: dict[str, Any]  # values naming setup() ids are replaced
    needs: tuple[str, ...]  # the permissions the row needs (none: capabilities)
    expected: CollabCode | None  # for `full`: None allowed and done, else the answer


K = {"idempotency_key": "k-1"}
ROWS = [
    Row("capabilities", "collab.capabilities", {}, (), None),
    Row("task.list", "collab.task.list", {}, ("task.read",), None),
    Row("task.list own group", "collab.task.list", {"group": "team"}, ("task.read",), None),
    Row("task.get", "collab.task.get", {"task": "task"}, ("task.read",), None),
    Row("message.get", "collab.message.get", {"message": "message"}, ("task.read",), None),
    Row(
        "task.create",
        "collab.task.create",
        {"group": "team", "title": "t", "content": "c", **K},
        ("task.create",),
        None,
    ),
    Row(
        "task.create with assignee",
        "collab.task.create",
        {"group": "team", "title": "t", "content": "c", "assignee": "bob", **K},
        ("task.create", "task.assign"),
        None,
    ),
    Row(
        "task.create with an assignee of another group",
        "collab.task.create",
        {"group": "team", "title": "t", "content": "c", "assignee": "carol", **K},
        ("task.create", "task.assign"),
        CollabCode.SESSION_NOT_IN_GROUP,
    ),
    Row(
        "task.assign",
        "collab.task.assign",
        {"task": "task", "assignee": "bob", "revision": 1, **K},
        ("task.assign",),
        None,
    ),
    Row(
        "task.assign stale revision",
        "collab.task.assign",
        {"task": "task", "assignee": "bob", "revision": 7, **K},
        ("task.assign",),
        CollabCode.TASK_CHANGED,
    ),
    Row(
        "task.comment",
        "collab.task.comment",
        {"task": "task", "content": "why?", **K},
        ("task.comment",),
        None,
    ),
    Row(
        "task.revise",
        "collab.task.revise",
        {"task": "task", "revision": 1, "content": "more", **K},
        ("task.revise",),
        None,
    ),
    Row(
        "task.answer",
        "collab.task.answer",
        {"task": "task", "decision": "decision", "content": "this", **K},
        ("task.answer",),
        None,
    ),
    Row("events.list", "collab.events.list", {"group": "team"}, ("events.read",), None),
    Row("session.get", "collab.session.get", {"session": "alice"}, ("session.read",), None),
    Row(  # its profile's executable does not exist here
        "session.create",
        "collab.session.create",
        {"launch_profile": "agent", "cwd": "/srv/runs", **K},
        ("session.create",),
        CollabCode.LAUNCHER_UNAVAILABLE,
    ),
    Row(  # alice was registered, not launched from a profile
        "session.restore",
        "collab.session.restore",
        {"session": "alice", **K},
        ("session.restore",),
        CollabCode.EXACT_RESUME_UNSUPPORTED,
    ),
]
#: What the table never opens to principals (respond, report, accept, approve-plan, drive,
#: member and group management, the admin's verbs).
REFUSED = [
    Row(
        "task.respond",
        "collab.task.respond",
        {"task": "task", "attempt": "attempt", "to_event": "comment", "content": "a", **K},
        (),
        DENIED,
    ),
    Row("task.report", "collab.task.report", {"task": "task", "status": "ack", **K}, (), DENIED),
    Row("task.question", "collab.task.question", {"task": "task", "content": "?", **K}, (), DENIED),
    Row(
        "task.submit_plan",
        "collab.task.submit_plan",
        {"task": "task", "content": "p", **K},
        (),
        DENIED,
    ),
    Row("task.accept", "collab.task.accept", {"task": "task", **K}, (), DENIED),
    Row("task.approve_plan", "collab.task.approve_plan", {"task": "task", **K}, (), DENIED),
    Row("task.close", "collab.task.close", {"task": "task", **K}, (), DENIED),
    Row("task.reopen", "collab.task.reopen", {"task": "task", **K}, (), DENIED),
    Row("reply", "collab.reply", {"message": "message", "content": "a", **K}, (), DENIED),
    Row("group.create", "collab.group.create", {"name": "g", **K}, (), DENIED),
    Row("group.list", "collab.group.list", {}, (), DENIED),
    Row("group.show", "collab.group.show", {"group": "team"}, (), DENIED),
    Row("group.add", "collab.group.add", {"group": "team", "session": "carol", **K}, (), DENIED),
    Row(
        "group.remove", "collab.group.remove", {"group": "team", "session": "bob", **K}, (), DENIED
    ),
    Row("session.register", "collab.session.register", {"agent": "alice", **K}, (), DENIED),
    Row("session.list", "collab.session.list", {}, (), DENIED),
    Row("integration.groups", "collab.integration.groups", {}, (), DENIED),
    Row("integration.list", "collab.integration.list", {}, (), DENIED),
    Row(
        "integration.create",
        "collab.integration.create",
        {"policy": {}, "token_sha256": "0" * 64, **K},
        (),
        DENIED,
    ),
    Row("integration.update", "collab.integration.update", {"policy": {}, **K}, (), DENIED),
    Row("integration.revoke", "collab.integration.revoke", {"id": "full", **K}, (), DENIED),
]


def params_of(ids: dict[str, str], row: Row) -> dict[str, Any]:
    return {k: named(ids, v) for k, v in row.params.items()}


@pytest.mark.parametrize("row", ROWS + REFUSED, ids=[r.id for r in ROWS + REFUSED])
def test_with_every_permission(world: World, row: Row) -> None:
    """A principal holding every permission: the row's answer (refused rows: denied)."""
    ids = setup(world)
    params = params_of(ids, row)
    if row.expected is None:
        world.call(row.method, FULL, **params)
        return
    error = world.fails(row.expected, row.method, FULL, **params)
    if row.expected is DENIED:
        assert error.details["method"] == row.method


@pytest.mark.parametrize("row", [r for r in ROWS if r.needs], ids=[r.id for r in ROWS if r.needs])
def test_without_the_row_s_permission(world: World, row: Row) -> None:
    """Each needed permission, taken away alone, refuses the row with nothing changed."""
    ids = setup(world)
    params = params_of(ids, row)
    for missing in row.needs:
        name = f"lacks-{missing}"
        create(world, name, ids["team"], [p for p in ALL if p != missing])
        error = world.fails(DENIED, row.method, as_principal(name), **params)
        assert error.details["missing"] == [missing]


#: Rows whose target lies in `team`: the other group's principal is refused.
OWN_GROUP = [r for r in ROWS if r.needs and r.expected is None]


@pytest.mark.parametrize("row", OWN_GROUP, ids=[r.id for r in OWN_GROUP])
def test_another_group_s_principal_is_refused(world: World, row: Row) -> None:
    """A principal acts and reads only in its own group."""
    ids = setup(world)
    params = params_of(ids, row)
    if row.method == "collab.task.list" and "group" not in params:
        listed = world.call(row.method, as_principal("outsider"), **params)["tasks"]
        assert [t["task_id"] for t in listed] == [ids["x"]]  # its own group's only
        return
    world.fails(DENIED, row.method, as_principal("outsider"), **params)


def test_a_principal_lists_its_own_group_s_tasks_only(world: World) -> None:
    ids = setup(world)
    listed = world.call("collab.task.list", FULL)["tasks"]
    assert {t["task_id"] for t in listed} == {ids["task"]}
    world.fails(DENIED, "collab.task.get", FULL, task=ids["x"])
    world.fails(DENIED, "collab.message.get", FULL, message=ids["x_message"])
    world.fails(DENIED, "collab.session.get", FULL, session=ids["carol"])
    world.fails(DENIED, "collab.events.list", FULL, group=ids["other"])
    world.fails(
        DENIED,
        "collab.task.create",
        FULL,
        group=ids["other"],
        title="t",
        content="c",
        idempotency_key="k",
    )


def test_another_group_is_refused_alike_whether_it_exists_or_not(world: World) -> None:
    """No oracle: a principal naming another group (by name or id) or a group that does not
    exist hears the same refusal, which never carries the other group's id."""
    ids = setup(world)
    answers = []
    for ref in ("other", ids["other"], "no-such-group", "grp_00000000000000000000"):
        error = world.fails(DENIED, "collab.task.list", FULL, group=ref)
        assert ids["other"] not in repr(error.to_wire()) or ref == ids["other"]
        answers.append((error.message, {k: v for k, v in error.details.items() if k != "group"}))
    assert all(answer == answers[0] for answer in answers)
    # Its own group, by name or by id, still works.
    for ref in ("team", ids["team"]):
        assert world.call("collab.task.list", FULL, group=ref)["tasks"]


def test_a_principal_never_acts_as_a_session(world: World) -> None:
    ids = setup(world)
    error = world.fails(
        DENIED,
        "collab.task.comment",
        FULL,
        task=ids["task"],
        content="?",
        session=ids["alice"],
        idempotency_key="k",
    )
    assert error.details["session"] == ids["alice"]
    world.fails(DENIED, "collab.task.get", FULL, task=ids["task"], session=ids["bob"])


WRITES = [r for r in ROWS if r.expected is None and "idempotency_key" in r.params]


@pytest.mark.parametrize("row", WRITES, ids=[r.id for r in WRITES])
def test_each_principal_write_needs_an_idempotency_key(world: World, row: Row) -> None:
    """I3.1: a principal's write without a key is INVALID_ARGUMENT, nothing done."""
    ids = setup(world)
    params = {k: v for k, v in params_of(ids, row).items() if k != "idempotency_key"}
    error = world.fails(CollabCode.INVALID_ARGUMENT, row.method, FULL, **params)
    assert error.details["param"] == "idempotency_key"


def test_revoke_refuses_the_next_request(world: World) -> None:
    """I1.4: the principal is read again at each request; after a revoke every request is
    INTEGRATION_REVOKED, even capabilities and an unknown method."""
    ids = setup(world)
    world.call("collab.task.get", FULL, task=ids["task"])
    world.call("collab.integration.revoke", id="full")
    world.fails(CollabCode.INTEGRATION_REVOKED, "collab.task.get", FULL, task=ids["task"])
    world.fails(CollabCode.INTEGRATION_REVOKED, "collab.capabilities", FULL)
    world.fails(CollabCode.INTEGRATION_REVOKED, "collab.nope", FULL)


def test_an_unknown_principal_is_unauthorized(world: World) -> None:
    setup(world)
    world.fails(CollabCode.INTEGRATION_UNAUTHORIZED, "collab.capabilities", as_principal("ghost"))
    world.fails(CollabCode.INTEGRATION_UNAUTHORIZED, "collab.task.list", {"kind": "principal"})


def test_an_update_applies_to_the_next_request(world: World) -> None:
    """I1.5: permissions taken away by an update refuse the next request."""
    ids = setup(world)
    world.call("collab.task.get", FULL, task=ids["task"])
    from tests.unit.principal_world import a_policy

    world.call("collab.integration.update", policy=a_policy("full", ids["team"], ["events.read"]))
    error = world.fails(DENIED, "collab.task.get", FULL, task=ids["task"])
    assert error.details["missing"] == ["task.read"]


def test_the_table_names_only_known_permissions() -> None:
    used = {p for p in rights.PRINCIPAL_RIGHTS.values() if p is not None}
    assert used == set(policy.PERMISSIONS)
    assert set(rights.PRINCIPAL_RIGHTS) >= rights.PRINCIPAL_WRITES


def test_every_method_is_in_the_table_or_refused() -> None:
    """Each method of the service is a row above: opened to principals or refused."""
    from pebrel.collab.service import HANDLERS

    covered = {r.method for r in ROWS + REFUSED}
    assert set(HANDLERS) <= covered
    opened = {r.method for r in ROWS}
    assert opened == set(HANDLERS) & set(rights.PRINCIPAL_RIGHTS)
