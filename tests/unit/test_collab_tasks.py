"""Task life cycles through the collab service's handlers (I3, #16 item 3).

A real Store in tmp_path, a fake terminal, recording deliveries.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pebrel.errors import CollabCode
from tests.unit.collab_world import World, make_world


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    yield from make_world(tmp_path)


def message_text(world: World, message_id: str) -> str:
    row = world.store.conn.execute(
        "SELECT content FROM messages WHERE id = ?", (message_id,)
    ).fetchone()
    return str(row[0])


def last_line_argv(text: str) -> list[str]:
    return shlex.split(text.strip().splitlines()[-1])


def test_full_life_cycle(world: World) -> None:
    """create+assign -> ack -> comment/respond -> question/answer -> complete -> accept ->
    comment on accepted -> revise -> complete again -> accept -> close -> reopen (I3)."""
    grp = world.group()
    alice = world.session("alice", 1, grp)
    created = world.call(
        "collab.task.create",
        group="team",
        title="Write the report",
        content="All of it",
        assignee=alice,
        metadata={"ticket": 7},
    )
    task = created["task"]
    tid, att = task["task_id"], created["attempt_id"]
    assert task["status"] == "open" and task["revision"] == 1 and task["assignee"] == alice
    assert task["source"] == "user" and task["current_attempt_id"] == att
    assert world.deliveries.kicks == 1
    text = message_text(world, created["message_id"])
    assert "Write the report" in text and "All of it" in text and tid in text and att in text
    assert "task question" in text
    argv = shlex.split(next(line for line in text.splitlines() if "task report" in line))
    assert argv[:7] == ["pebrel", "collab", "--session", alice, "task", "report", tid]
    assert argv[argv.index("--attempt") + 1] == att and "--idempotency-key" in argv

    me: dict[str, Any] = {"session": alice}
    world.call("collab.task.report", task=tid, status="ack", **me)
    world.call("collab.task.report", task=tid, status="working", content="halfway", **me)

    consulted = world.call("collab.task.comment", task=tid, content="Why this order?")
    assert consulted["attempt_id"] == att and consulted["delivery_id"].startswith("dlv_")
    argv = last_line_argv(message_text(world, consulted["message_id"]))
    assert argv[:7] == ["pebrel", "collab", "--session", alice, "task", "respond", tid]
    assert argv[argv.index("--attempt") + 1] == att
    assert argv[argv.index("--to-event") + 1] == consulted["event_id"]
    assert argv[argv.index("--content") + 1] == "..."
    key = argv[argv.index("--idempotency-key") + 1]
    responded = world.call(
        "collab.task.respond",
        task=tid,
        attempt=att,
        to_event=consulted["event_id"],
        content="Because",
        idempotency_key=key,
        **me,
    )
    again = world.call(
        "collab.task.respond",
        task=tid,
        attempt=att,
        to_event=consulted["event_id"],
        content="Because",
        idempotency_key=key,
        **me,
    )
    assert again == responded

    asked = world.call("collab.task.question", task=tid, content="Which format?", **me)
    answered = world.call(
        "collab.task.answer", task=tid, decision=asked["decision_id"], content="PDF"
    )
    assert answered["decision"]["state"] == "answered"
    assert answered["decision"]["answer"] == "PDF"
    assert "PDF" in message_text(world, answered["message_id"])

    done = world.call(
        "collab.task.report",
        task=tid,
        status="complete",
        content="report.pdf",
        summary="done",
        evidence={"path": "report.pdf"},
        attempt=att,
        **me,
    )
    first_artifact = done["artifact_id"]
    accepted = world.call("collab.task.accept", task=tid)
    assert accepted["artifact_id"] == first_artifact

    # A comment on an accepted task keeps the acceptance.
    world.call("collab.task.comment", task=tid, content="Nice; one note")
    full = world.call("collab.task.get", task=tid)["task"]
    assert full["status"] == "accepted" and full["accepted_artifact_id"] == first_artifact

    revised = world.call("collab.task.revise", task=tid, revision=1, content="Add charts")
    assert revised["task"]["status"] == "open" and revised["task"]["revision"] == 2
    assert "Add charts" in message_text(world, revised["message_id"])
    full = world.call("collab.task.get", task=tid)["task"]
    assert full["accepted_artifact_id"] is None
    assert [a["accepted"] for a in full["artifacts"]] == [False]
    assert full["current_attempt_id"] == att  # revise keeps the attempt

    second = world.call("collab.task.report", task=tid, status="complete", content="v2", **me)
    assert second["artifact_id"] != first_artifact
    assert world.call("collab.task.accept", task=tid)["artifact_id"] == second["artifact_id"]
    closed = world.call("collab.task.close", task=tid)
    assert closed["task"]["status"] == "closed"
    reopened = world.call("collab.task.reopen", task=tid)
    assert reopened["task"]["status"] == "accepted"

    full = world.call("collab.task.get", task=tid)["task"]
    kinds = [e["kind"] for e in full["events"]]
    assert kinds == [
        "task.created",
        "task.assigned",
        "task.report",
        "task.report",
        "task.comment",
        "task.respond",
        "task.question",
        "task.answer",
        "task.report",
        "task.accepted",
        "task.comment",
        "task.revise",
        "task.report",
        "task.accepted",
        "task.close",
        "task.reopen",
    ]
    respond = full["events"][5]
    assert respond["reply_to_event_id"] == consulted["event_id"]
    assert respond["payload"]["event"]["reply_to_event_id"] == consulted["event_id"]
    comment = full["events"][4]["payload"]["event"]
    assert comment["delivery_id"] == consulted["delivery_id"] and comment["target"] == alice
    report = full["events"][8]
    assert report["payload"]["event"]["report_status"] == "complete"
    assert report["artifact_id"] == first_artifact
    assert [a["artifact_id"] for a in full["artifacts"]] == [first_artifact, second["artifact_id"]]
    assert full["artifacts"][0]["evidence"] == {"path": "report.pdf"}
    assert full["decisions"][0]["decision_id"] == asked["decision_id"]
    assert full["metadata"] == {"ticket": 7}
    assert full["attempts"] == [
        {
            "attempt_id": att,
            "number": 1,
            "assignee": alice,
            "current": True,
            "last_report": "complete",
            "created_at": full["attempts"][0]["created_at"],
        }
    ]
    # The outbox: assignment, two comments, the answer, the revision; all still queued.
    assert [m["stage"] for m in full["outbox"]] == ["queued"] * 5
    assert {m["to_session_id"] for m in full["outbox"]} == {alice}
    assert all(m["retries"] == 0 and m["reason"] is None for m in full["outbox"])


def test_reassign_opens_a_new_attempt(world: World) -> None:
    """assign is revision-checked and opens attempt 2; the old attempt can no longer report
    (ATTEMPT_NOT_CURRENT) (I3)."""
    grp = world.group()
    alice = world.session("alice", 1, grp)
    bob = world.session("bob", 2, grp)
    created = world.call("collab.task.create", group=grp, title="t", content="c")
    tid = created["task"]["task_id"]
    assert "attempt_id" not in created and created["task"]["assignee"] is None
    first = world.call("collab.task.assign", task=tid, assignee=alice, revision=1)
    world.call("collab.task.revise", task=tid, revision=2, content="Use tables")
    second = world.call("collab.task.assign", task=tid, assignee=bob, revision=3)
    assert "Revision 3:\nUse tables" in message_text(world, second["message_id"])
    assert second["task"]["revision"] == 4 and second["task"]["assignee"] == bob
    full = world.call("collab.task.get", task=tid)["task"]
    assert [(a["number"], a["current"]) for a in full["attempts"]] == [(1, False), (2, True)]
    world.fails(
        CollabCode.ATTEMPT_NOT_CURRENT,
        "collab.task.report",
        task=tid,
        status="ack",
        attempt=first["attempt_id"],
        session=bob,
    )


def test_plan_submit_and_approve(world: World) -> None:
    """submit_plan by the assignee, approve_plan by the user (I3)."""
    grp = world.group()
    alice = world.session("alice", 1, grp)
    tid = world.call("collab.task.create", group=grp, title="t", content="c", assignee=alice)[
        "task"
    ]["task_id"]
    world.call("collab.task.submit_plan", task=tid, content="1. a 2. b", session=alice)
    assert world.call("collab.task.get", task=tid)["task"]["plan_state"] == "submitted"
    world.call("collab.task.approve_plan", task=tid)
    assert world.call("collab.task.get", task=tid)["task"]["plan_state"] == "approved"


def test_list_filters(world: World) -> None:
    grp = world.group()
    other = world.group("other")
    world.call("collab.task.create", group=grp, title="a", content="c")
    b = world.call("collab.task.create", group=other, title="b", content="c")["task"]["task_id"]
    world.call("collab.task.close", task=b)
    assert [t["title"] for t in world.call("collab.task.list")["tasks"]] == ["a", "b"]
    assert [t["title"] for t in world.call("collab.task.list", group="other")["tasks"]] == ["b"]
    assert [t["title"] for t in world.call("collab.task.list", status="open")["tasks"]] == ["a"]


def test_reply_without_status_is_a_linked_respond(world: World) -> None:
    """collab.reply to a consultation: a respond linked to the comment; with a status: a
    report on the current attempt (#16 item 4)."""
    grp = world.group()
    alice = world.session("alice", 1, grp)
    tid = world.call("collab.task.create", group=grp, title="t", content="c", assignee=alice)[
        "task"
    ]["task_id"]
    consulted = world.call("collab.task.comment", task=tid, content="why?")
    replied = world.call(
        "collab.reply", message=consulted["message_id"], content="because", session=alice
    )
    assert replied["kind"] == "respond"
    events: list[dict[str, Any]] = world.call("collab.task.get", task=tid)["task"]["events"]
    respond = next(e for e in events if e["event_id"] == replied["event_id"])
    assert respond["kind"] == "task.respond"
    assert respond["reply_to_event_id"] == consulted["event_id"]
    reported = world.call(
        "collab.reply",
        message=consulted["message_id"],
        content="finished",
        status="complete",
        session=alice,
    )
    assert reported["kind"] == "report" and reported["artifact_id"].startswith("art_")


def test_provenance_is_recorded(world: World) -> None:
    grp = world.group()
    alice = world.session("alice", 1, grp)
    created = world.call(
        "collab.task.create", group=grp, title="t", content="c", session=alice, metadata={"a": 1}
    )
    row = world.store.conn.execute(
        "SELECT source, metadata FROM tasks WHERE id = ?", (created["task"]["task_id"],)
    ).fetchone()
    assert row[0] == "session" and json.loads(row[1]) == {"a": 1}
