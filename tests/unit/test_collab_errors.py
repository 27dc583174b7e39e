"""Every error code the collab handlers raise, each provoked, and nothing changed (#16).

`World.fails` compares every table (the journal included) before and after, and checks that
the delivery engine was not kicked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pebrel.collab.terminal import TerminalUnavailable
from pebrel.errors import CollabCode, CollabError
from tests.unit.collab_world import USER, World, make_world

C = CollabCode


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    yield from make_world(tmp_path)


def assigned(world: World) -> dict[str, str]:
    grp = world.group()
    alice = world.session("alice", 1, grp)
    created = world.call("collab.task.create", group=grp, title="t", content="c", assignee=alice)
    return {
        "group": grp,
        "alice": alice,
        "task": created["task"]["task_id"],
        "attempt": created["attempt_id"],
        "message": created["message_id"],
        "assigned_event": created["event_id"],
    }


def test_invalid_argument(world: World) -> None:
    ids = assigned(world)
    world.fails(C.INVALID_ARGUMENT, "collab.task.nope")
    world.fails(C.INVALID_ARGUMENT, "collab.task.create", group=ids["group"], content="c")
    world.fails(
        C.INVALID_ARGUMENT, "collab.task.create", group=ids["group"], title=" ", content="c"
    )
    world.fails(C.INVALID_ARGUMENT, "collab.group.create", name="grp_x")
    world.fails(
        C.INVALID_ARGUMENT,
        "collab.task.create",
        group=ids["group"],
        title="t",
        content="c",
        metadata=["not", "an", "object"],
    )
    err = world.fails(
        C.INVALID_ARGUMENT,
        "collab.task.create",
        group=ids["group"],
        title="t",
        content="c",
        metadata={"blob": "x" * 16_400},
    )
    assert err.details["limit"] == 16 * 1024
    world.fails(
        C.INVALID_ARGUMENT,
        "collab.task.report",
        task=ids["task"],
        status="done",
        session=ids["alice"],
    )
    world.fails(
        C.INVALID_ARGUMENT,
        "collab.task.report",
        task=ids["task"],
        status="complete",
        session=ids["alice"],
    )
    world.fails(
        C.INVALID_ARGUMENT,
        "collab.task.assign",
        task=ids["task"],
        assignee=ids["alice"],
        revision="1",
    )
    world.fails(C.INVALID_ARGUMENT, "collab.events.list", group=ids["group"], limit=0)
    world.fails(C.INVALID_ARGUMENT, "collab.events.list", group=ids["group"], limit=1001)
    world.fails(C.INVALID_ARGUMENT, "collab.events.list", group=ids["group"], after=-1)
    world.fails(C.INVALID_ARGUMENT, "collab.task.list", status="done")
    world.fails(
        C.INVALID_ARGUMENT, "collab.task.comment", task=ids["task"], content="c", idempotency_key=""
    )
    # A plain reply to the assignment (not a consultation) must say what it is.
    world.fails(
        C.INVALID_ARGUMENT,
        "collab.reply",
        message=ids["message"],
        content="x",
        session=ids["alice"],
    )


def test_group_errors(world: World) -> None:
    ids = assigned(world)
    world.fails(C.GROUP_NAME_CONFLICT, "collab.group.create", name="team")
    world.fails(C.GROUP_NOT_FOUND, "collab.group.show", group="nope")
    world.fails(C.GROUP_NOT_FOUND, "collab.session.list", group="nope")
    world.fails(C.GROUP_NOT_FOUND, "collab.events.list", group="grp_nope")
    world.fails(C.GROUP_NOT_FOUND, "collab.task.create", group="nope", title="t", content="c")
    world.fails(C.GROUP_NOT_FOUND, "collab.task.list", group="nope")
    world.fails(C.GROUP_NOT_FOUND, "collab.group.add", group="nope", session=ids["alice"])
    world.fails(C.INTEGRATION_SESSION_NOT_FOUND, "collab.group.add", group="team", session="ses_x")
    world.fails(C.INTEGRATION_SESSION_NOT_FOUND, "collab.session.get", session="ses_x")
    other = world.group("other")
    world.fails(C.SESSION_ALREADY_REGISTERED, "collab.group.add", group=other, session=ids["alice"])
    world.fails(C.SESSION_NOT_IN_GROUP, "collab.group.remove", group=other, session=ids["alice"])


def test_session_errors(world: World) -> None:
    ids = assigned(world)
    world.fails(C.SESSION_ALREADY_REGISTERED, "collab.session.register", agent="alice")
    world.fails(C.COLLAB_AGENT_UNAVAILABLE, "collab.session.register", agent="nobody")
    world.terminal.add_agent("gone", 5)
    world.terminal.agents["gone"]["status"] = "exited"
    world.fails(C.COLLAB_AGENT_UNAVAILABLE, "collab.session.register", agent="gone")
    world.fails(C.GROUP_NOT_FOUND, "collab.session.register", agent="alice", group="nope")
    assert ids


def test_runtime_unavailable_is_retryable(world: World) -> None:
    async def lost(method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise TerminalUnavailable()

    world.terminal.call = lost  # type: ignore[method-assign]
    before = world.state()
    with pytest.raises(CollabError) as info:
        asyncio.run(world.service.handle("collab.session.register", {"agent": "a"}, USER))
    assert info.value.code == C.INTEGRATION_RUNTIME_UNAVAILABLE
    assert info.value.details["retryable"] is True
    assert world.state() == before


def test_task_errors(world: World) -> None:
    ids = assigned(world)
    task, alice = ids["task"], ids["alice"]
    me: dict[str, Any] = {"session": alice}
    world.fails(C.TASK_NOT_FOUND, "collab.task.get", task="tsk_nope")
    world.fails(C.TASK_NOT_FOUND, "collab.task.comment", task="tsk_nope", content="c")
    world.fails(C.TASK_NOT_FOUND, "collab.task.report", task="tsk_nope", status="ack", **me)
    err = world.fails(C.TASK_CHANGED, "collab.task.assign", task=task, assignee=alice, revision=7)
    assert err.details["revision"] == 1
    err = world.fails(C.TASK_CHANGED, "collab.task.revise", task=task, revision=0, content="r")
    assert err.details["revision"] == 1
    world.fails(
        C.INTEGRATION_SESSION_NOT_FOUND,
        "collab.task.assign",
        task=task,
        assignee="ses_x",
        revision=1,
    )
    other = world.group("other")
    bob = world.session("bob", 2, other)
    world.fails(C.SESSION_NOT_IN_GROUP, "collab.task.assign", task=task, assignee=bob, revision=1)
    world.fails(
        C.SESSION_NOT_IN_GROUP,
        "collab.task.create",
        group=ids["group"],
        title="t",
        content="c",
        assignee=bob,
    )
    world.fails(C.TASK_STATE_INVALID, "collab.task.accept", task=task)
    world.fails(C.TASK_STATE_INVALID, "collab.task.approve_plan", task=task)
    world.fails(C.TASK_STATE_INVALID, "collab.task.reopen", task=task)
    unassigned = world.call("collab.task.create", group=ids["group"], title="u", content="c")
    world.fails(
        C.TASK_STATE_INVALID, "collab.task.comment", task=unassigned["task"]["task_id"], content="c"
    )
    world.call("collab.task.close", task=task)
    world.fails(C.TASK_STATE_INVALID, "collab.task.close", task=task)
    world.fails(C.TASK_STATE_INVALID, "collab.task.comment", task=task, content="c")
    world.fails(C.TASK_STATE_INVALID, "collab.task.revise", task=task, revision=1, content="c")
    world.fails(C.TASK_STATE_INVALID, "collab.task.report", task=task, status="ack", **me)
    world.fails(C.TASK_STATE_INVALID, "collab.task.question", task=task, content="?", **me)
    world.fails(C.TASK_STATE_INVALID, "collab.task.submit_plan", task=task, content="p", **me)
    world.fails(C.TASK_STATE_INVALID, "collab.task.assign", task=task, assignee=alice, revision=1)


def test_attempt_event_decision_errors(world: World) -> None:
    ids = assigned(world)
    task, alice = ids["task"], ids["alice"]
    me: dict[str, Any] = {"session": alice}
    comment = world.call("collab.task.comment", task=task, content="?")
    asked = world.call("collab.task.question", task=task, content="?", **me)
    world.fails(
        C.ATTEMPT_NOT_FOUND,
        "collab.task.respond",
        task=task,
        attempt="att_nope",
        to_event=comment["event_id"],
        content="a",
        **me,
    )
    world.fails(
        C.EVENT_NOT_FOUND,
        "collab.task.respond",
        task=task,
        attempt=ids["attempt"],
        to_event=ids["assigned_event"],
        content="a",
        **me,
    )
    world.fails(
        C.DECISION_NOT_FOUND, "collab.task.answer", task=task, decision="dec_x", content="a"
    )
    world.call("collab.task.answer", task=task, decision=asked["decision_id"], content="a")
    world.fails(
        C.DECISION_ALREADY_ANSWERED,
        "collab.task.answer",
        task=task,
        decision=asked["decision_id"],
        content="again",
    )
    open_question = world.call("collab.task.question", task=task, content="2?", **me)
    world.call("collab.task.assign", task=task, assignee=alice, revision=1)
    world.fails(
        C.ATTEMPT_NOT_CURRENT,
        "collab.task.answer",
        task=task,
        decision=open_question["decision_id"],
        content="late",
    )
    world.fails(
        C.ATTEMPT_NOT_CURRENT,
        "collab.task.report",
        task=task,
        status="ack",
        attempt=ids["attempt"],
        **me,
    )
    world.fails(
        C.ATTEMPT_NOT_CURRENT,
        "collab.reply",
        message=comment["message_id"],
        content="x",
        status="working",
        **me,
    )
    world.fails(C.MESSAGE_NOT_FOUND, "collab.reply", message="msg_nope", content="x", **me)


def test_idempotency_conflict(world: World) -> None:
    ids = assigned(world)
    world.call("collab.task.comment", task=ids["task"], content="a", idempotency_key="k1")
    world.fails(
        C.IDEMPOTENCY_CONFLICT,
        "collab.task.comment",
        task=ids["task"],
        content="b",
        idempotency_key="k1",
    )


def test_storage_unavailable_is_retryable(world: World) -> None:
    """A write the database refuses (here: read-only) answers COLLAB_STORAGE_UNAVAILABLE,
    retryable, and leaves nothing behind."""
    grp = world.group()
    before = world.state()
    world.store.conn.execute("PRAGMA query_only = ON")
    with pytest.raises(CollabError) as info:
        world.call("collab.task.create", group=grp, title="t", content="c")
    world.store.conn.execute("PRAGMA query_only = OFF")
    assert info.value.code == C.COLLAB_STORAGE_UNAVAILABLE
    assert info.value.details["retryable"] is True
    assert world.state() == before and world.deliveries.kicks == 0
