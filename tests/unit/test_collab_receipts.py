"""Delivery receipts (I3.4; #16 item 4): collab.message.get and the task outbox.

A message's receipt lists its stages (never a "read" one), its retries and its reason; while
it waits, the engine's in-memory `waiting_reason`. Only the user and the message's sender and
recipient sessions may read it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pebrel.collab.deliverer import Deliverer
from pebrel.collab.handler import Actor, Ctx
from pebrel.collab.messages_api import HANDLERS, message_outbox
from pebrel.collab.store import Store
from pebrel.errors import CollabCode, CollabError, ErrorCode
from tests.conftest import wait_for_async
from tests.unit.collab_fakes import (
    FakeTerminal,
    add_group,
    add_session,
    agent,
    queue,
    refused,
    snapshot,
    stages,
)
from tests.unit.collab_world import USER, RecordingDeliveries

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store(tmp_path)
    add_group(opened)
    for n, name in enumerate(("a", "b", "c"), start=1):
        add_session(opened, f"ses_{name}", f"agt_{name}", n)
    yield opened
    opened.close()


async def aget(
    store: Store,
    message_id: str,
    caller: dict[str, Any] | None = None,
    actor: Actor | None = None,
    deliveries: Any = None,
) -> dict[str, Any]:
    """collab.message.get's `message`, as ``caller`` acting as ``actor``."""
    ctx = Ctx(
        store,
        FakeTerminal(),
        deliveries or RecordingDeliveries(),
        caller or USER,
        actor or Actor("user"),
    )
    result = await HANDLERS["collab.message.get"](ctx, {"message": message_id})
    message: dict[str, Any] = result["message"]
    return message


def get(
    store: Store, message_id: str, caller: dict[str, Any] | None = None, actor: Actor | None = None
) -> dict[str, Any]:
    return asyncio.run(aget(store, message_id, caller, actor))


def test_a_receipt_lists_every_stage(store: Store) -> None:
    """I3.4: queued, writing, failed (with the runtime's code), queued again, writing,
    delivered (with what the terminal answered); `retries` is the latest try."""
    term = FakeTerminal(snapshot(agent("agt_a", 1)))
    term.then("agent.prompt", refused(ErrorCode.INPUT_IN_PROGRESS))
    q = queue(store, "ses_a", "hello", sender="ses_b")

    async def main() -> None:
        engine = Deliverer(store, term, backoff_s=0.01)
        await engine.start()
        await wait_for_async(lambda: stages(store, q.message_id)[-1][0] == "delivered", 5, "done")
        engine.close()

    asyncio.run(main())
    message = get(store, q.message_id)
    assert {k: message[k] for k in ("message_id", "to_session_id", "content", "from")} == {
        "message_id": q.message_id,
        "to_session_id": "ses_a",
        "content": "hello",
        "from": {"kind": "session", "session_id": "ses_b"},
    }
    receipt = message["receipt"]
    assert (receipt["delivery_id"], receipt["stage"], receipt["retries"]) == (
        q.delivery_id,
        "delivered",
        1,
    )
    assert [(s["stage"], s["retries"]) for s in receipt["stages"]] == [
        ("queued", 0),
        ("writing", 0),
        ("failed", 0),
        ("queued", 1),
        ("writing", 1),
        ("delivered", 1),
    ]
    assert receipt["stages"][2]["code"] == "input_in_progress"
    assert receipt["stages"][3]["reason"] == "retry after input_in_progress"
    assert (receipt["stages"][5]["written"], receipt["stages"][5]["submitted"]) == (True, True)
    assert "waiting_reason" not in receipt


def test_a_waiting_message_shows_why(store: Store) -> None:
    """I3.4: an offline assignee's message stays queued, and its receipt says why."""
    term = FakeTerminal(snapshot(panes=0))  # agt_a's pane is gone
    q = queue(store, "ses_a", "for a", task_id="tsk_1")
    seen: dict[str, Any] = {}

    async def main() -> None:
        engine = Deliverer(store, term)
        await engine.start()
        await wait_for_async(lambda: engine.waiting_reason(q.message_id), 5, "a reason")
        seen["message"] = await aget(store, q.message_id, deliveries=engine)
        seen["outbox"] = message_outbox(store, "tsk_1", engine)
        engine.close()

    asyncio.run(main())
    receipt = seen["message"]["receipt"]
    assert (receipt["stage"], receipt["reason"], receipt["waiting_reason"]) == (
        "queued",
        "pane_gone",
        "pane_gone",
    )
    (entry,) = seen["outbox"]
    assert {k: entry[k] for k in ("message_id", "delivery_id", "stage", "waiting_reason")} == {
        "message_id": q.message_id,
        "delivery_id": q.delivery_id,
        "stage": "queued",
        "waiting_reason": "pane_gone",
    }


def test_the_outbox_holds_each_message_of_the_task_at_its_latest_stage(store: Store) -> None:
    first = queue(store, "ses_a", "one", task_id="tsk_1")
    second = queue(store, "ses_b", "two", task_id="tsk_1")
    queue(store, "ses_a", "other task", task_id="tsk_2")
    outbox = message_outbox(store, "tsk_1")
    assert [(e["message_id"], e["to_session_id"], e["stage"], e["retries"]) for e in outbox] == [
        (first.message_id, "ses_a", "queued", 0),
        (second.message_id, "ses_b", "queued", 0),
    ]
    assert "waiting_reason" not in outbox[0]
    assert message_outbox(store, "tsk_none") == []


@pytest.mark.parametrize(
    ("caller", "actor", "allowed"),
    [
        (USER, Actor("user"), True),
        (USER, Actor("session", "ses_c"), True),  # the user acting as another session
        ({"kind": "pane", "window_id": 1, "pane_id": 1}, Actor("session", "ses_a"), True),
        ({"kind": "pane", "window_id": 1, "pane_id": 2}, Actor("session", "ses_b"), True),
        ({"kind": "pane", "window_id": 1, "pane_id": 3}, Actor("session", "ses_c"), False),
        ({"kind": "pane", "window_id": 1, "pane_id": 4}, Actor("user"), False),
    ],
    ids=["user", "user as a session", "recipient", "sender", "other session", "unbound pane"],
)
def test_only_the_user_sender_and_recipient_see_a_message(
    store: Store, caller: dict[str, Any], actor: Actor, allowed: bool
) -> None:
    q = queue(store, "ses_a", "private", sender="ses_b")
    if allowed:
        assert get(store, q.message_id, caller, actor)["content"] == "private"
        return
    with pytest.raises(CollabError) as caught:
        get(store, q.message_id, caller, actor)
    assert caught.value.code == CollabCode.INTEGRATION_PERMISSION_DENIED
    assert "private" not in caught.value.message


def test_an_unknown_message_is_not_found(store: Store) -> None:
    with pytest.raises(CollabError) as caught:
        get(store, "msg_00000000000000000000")
    assert caught.value.code == CollabCode.MESSAGE_NOT_FOUND
    assert caught.value.details["retryable"] is False
