"""The rights table, row by row (I3.2, #16 item 2; spec "任务与权限").

World: group `team` with alice (pane 1, assignee of task T) and bob (pane 2); carol (pane 3)
in group `other`; pane 9 holds no session. Each row is one request in a fresh world: it either
passes the rights checks (the answer, or a domain error past them) or is refused with nothing
changed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from pebrel.collab import rights
from pebrel.errors import CollabCode
from tests.unit.collab_world import USER, World, make_world, pane_caller, team_and_other

UNKNOWN: dict[str, Any] = {"kind": "unknown"}
P1, P2, P9 = pane_caller(1, 1), pane_caller(1, 2), pane_caller(1, 9)
DENIED = CollabCode.INTEGRATION_PERMISSION_DENIED


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    yield from make_world(tmp_path)


#: Where the P1 and P9 callers are (capabilities reports a pane caller's pane).
AT1 = {k: v for k, v in P1.items() if k != "kind"}
AT9 = {k: v for k, v in P9.items() if k != "kind"}


class Actor(NamedTuple):
    id: str
    caller: dict[str, Any]
    session: str | None  # a name from team_and_other(), or a literal id
    expected: dict[str, Any] | CollabCode  # the capabilities caller, or the refusal


ACTORS = [
    Actor("user", USER, None, {"kind": "user"}),
    Actor("user-as-session", USER, "alice", {"kind": "session", "session_id": "alice"}),
    Actor("user-as-unknown-session", USER, "ses_nope", CollabCode.INTEGRATION_SESSION_NOT_FOUND),
    Actor("pane-bound", P1, None, {"kind": "session", "session_id": "alice", **AT1}),
    Actor(
        "pane-bound-names-itself", P1, "alice", {"kind": "session", "session_id": "alice", **AT1}
    ),
    Actor("pane-bound-names-another", P1, "bob", DENIED),
    Actor("pane-without-session", P9, None, {"kind": "pane", **AT9}),
    Actor("pane-without-session-names-one", P9, "alice", DENIED),
    Actor("unknown-caller", UNKNOWN, None, {"kind": "unknown"}),
    Actor("unknown-caller-names-one", UNKNOWN, "alice", DENIED),
]


def named(ids: dict[str, str], value: Any) -> Any:
    return ids.get(value, value) if isinstance(value, str) else value


@pytest.mark.parametrize("row", ACTORS, ids=[r.id for r in ACTORS])
def test_actor_resolution(world: World, row: Actor) -> None:
    """Who a request acts as, from its caller and its `session` param (#16 item 2)."""
    ids = team_and_other(world)
    params = {} if row.session is None else {"session": named(ids, row.session)}
    if isinstance(row.expected, CollabCode):
        world.fails(row.expected, "collab.capabilities", row.caller, **params)
        return
    caller = world.call("collab.capabilities", row.caller, **params)["caller"]
    expected = {k: named(ids, v) for k, v in row.expected.items()}
    assert caller == expected


def test_pane_of_an_exited_agent_binds_no_session(world: World) -> None:
    """A pane caller acts as the session online in its pane; once that agent exited, the pane
    has no session (never matched by pane numbers alone)."""
    ids = team_and_other(world)
    world.terminal.agents["alice"]["status"] = "exited"
    assert world.call("collab.capabilities", P1)["caller"] == {"kind": "pane", **AT1}
    world.fails(DENIED, "collab.task.report", P1, task=ids["task"], status="ack")
    world.terminal.seen = False
    world.fails(DENIED, "collab.task.report", P2, task=ids["task"], status="ack")


class Verb(NamedTuple):
    id: str
    method: str
    caller: dict[str, Any]
    session: str | None
    params: dict[str, Any]  # values naming team_and_other() ids are replaced
    expected: CollabCode | None  # None: allowed and done


VERBS = [
    # user-only verbs
    Verb("group.create by user", "collab.group.create", USER, None, {"name": "x"}, None),
    Verb("group.create by pane", "collab.group.create", P1, None, {"name": "x"}, DENIED),
    Verb("group.create unbound pane", "collab.group.create", P9, None, {"name": "x"}, DENIED),
    Verb("group.create as session", "collab.group.create", USER, "bob", {"name": "x"}, DENIED),
    Verb(
        "group.add by pane",
        "collab.group.add",
        P1,
        None,
        {"group": "team", "session": "carol"},
        DENIED,
    ),
    Verb(
        "group.remove by pane",
        "collab.group.remove",
        P2,
        None,
        {"group": "team", "session": "bob"},
        DENIED,
    ),
    Verb(
        "group.remove by user",
        "collab.group.remove",
        USER,
        None,
        {"group": "team", "session": "bob"},
        None,
    ),
    Verb("register by pane", "collab.session.register", P9, None, {"agent": "alice"}, DENIED),
    Verb("accept by assignee pane", "collab.task.accept", P1, None, {"task": "task"}, DENIED),
    Verb(
        "accept by user",
        "collab.task.accept",
        USER,
        None,
        {"task": "task"},
        CollabCode.TASK_STATE_INVALID,
    ),
    Verb("approve_plan by pane", "collab.task.approve_plan", P1, None, {"task": "task"}, DENIED),
    Verb(
        "approve_plan by user",
        "collab.task.approve_plan",
        USER,
        None,
        {"task": "task"},
        CollabCode.TASK_STATE_INVALID,
    ),
    # session-only verbs: the attempt's assignee
    Verb(
        "report by user",
        "collab.task.report",
        USER,
        None,
        {"task": "task", "status": "ack"},
        DENIED,
    ),
    Verb(
        "report by user as assignee",
        "collab.task.report",
        USER,
        "alice",
        {"task": "task", "status": "ack"},
        None,
    ),
    Verb(
        "report by user as other",
        "collab.task.report",
        USER,
        "bob",
        {"task": "task", "status": "ack"},
        DENIED,
    ),
    Verb(
        "report by assignee pane",
        "collab.task.report",
        P1,
        None,
        {"task": "task", "status": "ack"},
        None,
    ),
    Verb(
        "report by member pane",
        "collab.task.report",
        P2,
        None,
        {"task": "task", "status": "ack"},
        DENIED,
    ),
    Verb(
        "report by unbound pane",
        "collab.task.report",
        P9,
        None,
        {"task": "task", "status": "ack"},
        DENIED,
    ),
    Verb(
        "report by other group",
        "collab.task.report",
        USER,
        "carol",
        {"task": "task", "status": "ack"},
        DENIED,
    ),
    Verb(
        "question by user",
        "collab.task.question",
        USER,
        None,
        {"task": "task", "content": "?"},
        DENIED,
    ),
    Verb(
        "question by assignee",
        "collab.task.question",
        P1,
        None,
        {"task": "task", "content": "?"},
        None,
    ),
    Verb(
        "question by member",
        "collab.task.question",
        P2,
        None,
        {"task": "task", "content": "?"},
        DENIED,
    ),
    Verb(
        "submit_plan by assignee",
        "collab.task.submit_plan",
        P1,
        None,
        {"task": "task", "content": "p"},
        None,
    ),
    Verb(
        "submit_plan by member",
        "collab.task.submit_plan",
        P2,
        None,
        {"task": "task", "content": "p"},
        DENIED,
    ),
    Verb(
        "respond by assignee",
        "collab.task.respond",
        P1,
        None,
        {"task": "task", "attempt": "attempt", "to_event": "comment", "content": "a"},
        None,
    ),
    Verb(
        "respond by member",
        "collab.task.respond",
        P2,
        None,
        {"task": "task", "attempt": "attempt", "to_event": "comment", "content": "a"},
        DENIED,
    ),
    Verb(
        "respond by user",
        "collab.task.respond",
        USER,
        None,
        {"task": "task", "attempt": "attempt", "to_event": "comment", "content": "a"},
        DENIED,
    ),
    Verb(
        "reply by addressee",
        "collab.reply",
        P1,
        None,
        {"message": "message", "content": "a", "status": "ack"},
        None,
    ),
    Verb(
        "reply by another session",
        "collab.reply",
        P2,
        None,
        {"message": "message", "content": "a", "status": "ack"},
        DENIED,
    ),
    # shared verbs: the user, or a member of the task's group
    Verb(
        "comment by user", "collab.task.comment", USER, None, {"task": "task", "content": "?"}, None
    ),
    Verb(
        "comment by member", "collab.task.comment", P2, None, {"task": "task", "content": "?"}, None
    ),
    Verb(
        "comment by unbound pane",
        "collab.task.comment",
        P9,
        None,
        {"task": "task", "content": "?"},
        DENIED,
    ),
    Verb(
        "comment by other group",
        "collab.task.comment",
        USER,
        "carol",
        {"task": "task", "content": "?"},
        DENIED,
    ),
    Verb(
        "create by member",
        "collab.task.create",
        P2,
        None,
        {"group": "team", "title": "t", "content": "c"},
        None,
    ),
    Verb(
        "create by other group",
        "collab.task.create",
        USER,
        "carol",
        {"group": "team", "title": "t", "content": "c"},
        DENIED,
    ),
    Verb(
        "assign by member",
        "collab.task.assign",
        P2,
        None,
        {"task": "task", "assignee": "bob", "revision": 1},
        None,
    ),
    Verb(
        "assign by other group",
        "collab.task.assign",
        USER,
        "carol",
        {"task": "task", "assignee": "bob", "revision": 1},
        DENIED,
    ),
    Verb(
        "revise by member",
        "collab.task.revise",
        P2,
        None,
        {"task": "task", "revision": 1, "content": "r"},
        None,
    ),
    Verb(
        "revise by other group",
        "collab.task.revise",
        USER,
        "carol",
        {"task": "task", "revision": 1, "content": "r"},
        DENIED,
    ),
    Verb("close by other group", "collab.task.close", USER, "carol", {"task": "task"}, DENIED),
    Verb("close by member", "collab.task.close", P2, None, {"task": "task"}, None),
    # reads: a session reads its own group
    Verb("get by member", "collab.task.get", P2, None, {"task": "task"}, None),
    Verb("get by other group", "collab.task.get", USER, "carol", {"task": "task"}, DENIED),
    Verb("list other group", "collab.task.list", USER, "carol", {"group": "team"}, DENIED),
    Verb("events by member", "collab.events.list", P1, None, {"group": "team"}, None),
    Verb("events by other group", "collab.events.list", USER, "carol", {"group": "team"}, DENIED),
    Verb("events by user", "collab.events.list", USER, None, {"group": "team"}, None),
]


@pytest.mark.parametrize("row", VERBS, ids=[r.id for r in VERBS])
def test_verb_rights(world: World, row: Verb) -> None:
    """Each verb for each kind of actor (spec "任务与权限"; #16 items 2-3)."""
    ids = team_and_other(world)
    params = {k: named(ids, v) for k, v in row.params.items()}
    if row.session is not None:
        params["session"] = named(ids, row.session)
    if row.expected is None:
        world.call(row.method, row.caller, **params)
        return
    error = world.fails(row.expected, row.method, row.caller, **params)
    if row.expected is DENIED:
        assert error.details["retryable"] is False


def test_verb_sets_cover_every_method() -> None:
    """Each method is in exactly one of: user-only, session-only, reads, shared writes."""
    from pebrel.collab.service import HANDLERS

    shared = {
        "collab.task.create",
        "collab.task.assign",
        "collab.task.comment",
        "collab.task.revise",
        "collab.task.answer",
        "collab.task.close",
        "collab.task.reopen",
    }
    sets = [rights.USER_ONLY, rights.SESSION_ONLY, rights.READS, frozenset(shared)]
    for method in HANDLERS:
        # The admin's reads are the user's alone: in READS (they change nothing) and USER_ONLY.
        expected = 2 if method in ("collab.integration.groups", "collab.integration.list") else 1
        assert sum(method in s for s in sets) == expected, method


def test_unknown_method(world: World) -> None:
    world.fails(CollabCode.INVALID_ARGUMENT, "collab.task.nope")
