"""The delivery engine (I3.4; #16 item 4): queued messages written into agent panes.

A real Store in tmp_path and a scripted runtime (tests/unit/collab_fakes.py): gating, order,
one write at a time per session, `writing` committed before the terminal call, retries after
a runtime refusal, outcome unknown never retried, recovery at start, receipts through
collab.message.get, and every stage's event in a gapless journal.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pebrel.collab.deliverer import OUTCOME_UNKNOWN, STOPPED_WHILE_WRITING, Deliverer
from pebrel.collab.delivery import WRITING, append_stage, latest_stages, stage_rows
from pebrel.collab.store import Store
from pebrel.collab.terminal import TerminalUnavailable
from pebrel.errors import ErrorCode
from tests.conftest import wait_for_async
from tests.unit.collab_fakes import (
    GROUP,
    FakeTerminal,
    add_group,
    add_session,
    agent,
    queue,
    refused,
    snapshot,
    stages,
)

pytestmark = pytest.mark.timeout(30)

DONE = [("queued", 0), ("writing", 0), ("delivered", 0)]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store(tmp_path)
    add_group(opened)
    add_session(opened, "ses_a", "agt_a", 1)
    yield opened
    opened.close()


def run(
    store: Store,
    term: FakeTerminal,
    body: Callable[[Deliverer], Awaitable[None]],
    **options: Any,
) -> None:
    """Start an engine over ``store`` and ``term``, run ``body``, close it."""

    async def main() -> None:
        engine = Deliverer(store, term, **{"backoff_s": 0.01, "recheck_s": 0.05, **options})
        await engine.start()
        try:
            await body(engine)
        finally:
            engine.close()
            await engine.wait_closed()

    asyncio.run(main())


async def settled(store: Store, message_id: str, stage: str = "delivered") -> None:
    def last() -> bool:
        rows = stage_rows(store, message_id)
        return bool(rows) and rows[-1]["stage"] == stage

    await wait_for_async(last, 5, f"{message_id} {stage}")


def test_messages_go_in_queue_order_one_at_a_time(store: Store) -> None:
    """I3.4: a session's messages are written in their queue order, one at a time, each with
    `writing` committed before the runtime is called and `delivered` after it answered."""
    term = FakeTerminal(snapshot(agent("agt_a", 1, generation=3)))
    seen: list[list[tuple[str, int]]] = []
    by_text: dict[str, str] = {}

    async def slow(method: str, params: dict[str, Any]) -> dict[str, Any]:
        seen.append(stages(store, by_text[params["text"]]))  # the writing row is committed
        await asyncio.sleep(0.05)
        return {"written": True, "submitted": True}

    term.then("agent.prompt", slow, slow, slow)
    queued = [queue(store, "ses_a", f"message {n}") for n in range(3)]
    by_text.update({f"message {n}": q.message_id for n, q in enumerate(queued)})

    async def body(engine: Deliverer) -> None:
        engine.kick()
        await settled(store, queued[-1].message_id)

    run(store, term, body)
    assert [p["text"] for p in term.written()] == ["message 0", "message 1", "message 2"]
    assert all(p["generation"] == 3 and p["submit"] is True for p in term.written())
    assert term.most_in_flight == 1
    assert seen == [[("queued", 0), ("writing", 0)]] * 3
    for q in queued:
        assert stages(store, q.message_id) == DONE
        assert stage_rows(store, q.message_id)[-1]["written"] == 1


def test_sessions_are_written_independently(store: Store) -> None:
    """One session's waiting message never holds up another session's."""
    add_session(store, "ses_b", "agt_b", 2)
    term = FakeTerminal(snapshot(agent("agt_a", 1, state="attention"), agent("agt_b", 2)))
    held = queue(store, "ses_a", "held")
    free = queue(store, "ses_b", "free")

    async def body(engine: Deliverer) -> None:
        engine.kick()
        await settled(store, free.message_id)
        assert engine.waiting_reason(held.message_id) == "agent_attention"

    run(store, term, body)
    assert stages(store, held.message_id) == [("queued", 0)]


def test_multi_line_text_is_one_bracketed_paste(store: Store) -> None:
    """A text with newlines goes in as one input (agent.paste, then Enter), never line by line."""
    term = FakeTerminal(snapshot(agent("agt_a", 1)))
    q = queue(store, "ses_a", "line one\nline two\n\tindented")

    async def body(engine: Deliverer) -> None:
        await settled(store, q.message_id)

    run(store, term, body)
    assert term.calls == [
        (
            "agent.paste",
            {
                "agent": "agt_a",
                "generation": 1,
                "text": "line one\nline two\n\tindented",
                "submit": True,
            },
        )
    ]


GATES = [
    ("not ready", snapshot(agent("agt_a", 1, ready=False)), "ready", "agent_not_ready"),
    ("attention", snapshot(agent("agt_a", 1, state="attention")), "ready", "agent_attention"),
    (
        "waiting input",
        snapshot(agent("agt_a", 1, state="waiting_input")),
        "ready",
        "agent_waiting_input",
    ),
    ("agent exited", snapshot(panes=1), "ready", "agent_exited"),
    ("pane gone", snapshot(agent("agt_x", 1)), "ready", "agent_exited"),
    ("pane closed", snapshot(panes=0), "ready", "pane_gone"),
    (
        "runtime restarted",
        snapshot(agent("agt_a", 1), runtime_id="rt_other"),
        "ready",
        "runtime_restarted",
    ),
    ("no snapshot yet", None, "ready", "snapshot_pending"),
    ("session starting", snapshot(agent("agt_a", 1)), "starting", "session_starting"),
]


@pytest.mark.parametrize(
    ("snap", "state", "reason"), [g[1:] for g in GATES], ids=[g[0] for g in GATES]
)
def test_a_gated_message_waits_queued_with_its_reason(
    tmp_path: Path, snap: dict[str, Any] | None, state: str, reason: str
) -> None:
    """I3.4: offline, not ready, asking for approval or input: nothing is typed, the message
    stays queued (no stage row per look) and its receipt says why; once the gate opens (a
    snapshot), it is written."""
    store = Store(tmp_path)
    add_group(store)
    add_session(store, "ses_a", "agt_a", 1, state=state)
    term = FakeTerminal(snap)
    q = queue(store, "ses_a", "hello")

    async def body(engine: Deliverer) -> None:
        await wait_for_async(lambda: engine.waiting_reason(q.message_id), 5, "a waiting reason")
        assert engine.waiting_reason(q.message_id) == reason
        for _ in range(3):
            engine.on_snapshot(term.snap or snapshot(panes=0))
            await asyncio.sleep(0.02)
        assert term.written() == []
        assert stages(store, q.message_id) == [("queued", 0)]
        if state != "ready":
            with store.write() as tx:
                tx.execute("UPDATE sessions SET state = 'ready'")
        term.snap = snapshot(agent("agt_a", 1))
        engine.on_snapshot(term.snap)
        await settled(store, q.message_id)
        assert engine.waiting_reason(q.message_id) is None

    try:
        run(store, term, body)
        assert stages(store, q.message_id) == DONE
    finally:
        store.close()


def test_a_busy_agent_is_written_to_when_its_turn_ends(store: Store) -> None:
    """I3: `running` (a turn in progress) gates like attention; the text goes in once the
    agent's turn has ended."""
    term = FakeTerminal(snapshot(agent("agt_a", 1, state="running")))
    q = queue(store, "ses_a", "while busy")

    async def body(engine: Deliverer) -> None:
        await wait_for_async(lambda: engine.waiting_reason(q.message_id), 5, "waiting")
        assert engine.waiting_reason(q.message_id) == "agent_running"
        assert term.written() == []
        term.snap = snapshot(agent("agt_a", 1, state="idle"))
        engine.on_snapshot(term.snap)
        await settled(store, q.message_id)

    run(store, term, body)


def test_a_refusal_fails_and_requeues_with_one_more_try(store: Store) -> None:
    """I3.4: the runtime answered an error (nothing written): `failed` with its reason and
    code, `queued` again with try+1, and the next try is bound to the generation current then."""
    term = FakeTerminal(snapshot(agent("agt_a", 1, generation=1)))

    async def replaced(method: str, params: dict[str, Any]) -> dict[str, Any]:
        term.snap = snapshot(agent("agt_a", 1, generation=2))
        raise refused(ErrorCode.AGENT_REPLACED)

    term.then("agent.prompt", replaced)
    q = queue(store, "ses_a", "again")

    async def body(engine: Deliverer) -> None:
        await settled(store, q.message_id)

    run(store, term, body)
    assert stages(store, q.message_id) == [
        ("queued", 0),
        ("writing", 0),
        ("failed", 0),
        ("queued", 1),
        ("writing", 1),
        ("delivered", 1),
    ]
    failed = stage_rows(store, q.message_id)[2]
    assert (failed["code"], failed["reason"]) == ("agent_replaced", "refused: agent_replaced")
    assert [p["generation"] for p in term.written()] == [1, 2]


def test_tries_are_bounded(store: Store) -> None:
    """At most five tries; then the message stays failed and is never written again."""
    term = FakeTerminal(snapshot(agent("agt_a", 1)))
    term.then("agent.prompt", *[refused(ErrorCode.INPUT_IN_PROGRESS) for _ in range(5)])
    q = queue(store, "ses_a", "never")
    later = queue(store, "ses_a", "later")

    async def body(engine: Deliverer) -> None:
        await settled(store, later.message_id)
        await asyncio.sleep(0.1)

    run(store, term, body)
    rows = stages(store, q.message_id)
    assert rows[-1] == ("failed", 4)
    assert [s for s in rows if s[0] == "writing"] == [("writing", n) for n in range(5)]
    assert [p["text"] for p in term.written()] == ["never"] * 5 + ["later"]


@pytest.mark.parametrize(
    ("step", "reason"),
    [
        (TerminalUnavailable("link lost"), OUTCOME_UNKNOWN),
        (refused(ErrorCode.RUNTIME_TIMEOUT), OUTCOME_UNKNOWN),
        (refused(ErrorCode.ACTION_FAILED, written=True), "written in part: refused: action_failed"),
        (refused(ErrorCode.INVALID_PARAMS), "refused: invalid_params"),
    ],
    ids=["link lost", "runtime timeout", "written in part", "invalid text"],
)
def test_an_unknown_or_hopeless_outcome_is_never_retried(
    store: Store, step: BaseException, reason: str
) -> None:
    """I3.4: when the outcome is unknown (or part was typed, or the text can never go) the
    message is `failed` for good: never written a second time by itself."""
    term = FakeTerminal(snapshot(agent("agt_a", 1)))
    term.then("agent.prompt", step)
    q = queue(store, "ses_a", "once")
    after = queue(store, "ses_a", "after")

    async def body(engine: Deliverer) -> None:
        await settled(store, after.message_id)
        await asyncio.sleep(0.1)

    run(store, term, body)
    assert stages(store, q.message_id) == [("queued", 0), ("writing", 0), ("failed", 0)]
    assert stage_rows(store, q.message_id)[-1]["reason"] == reason
    assert [p["text"] for p in term.written()] == ["once", "after"]


def test_a_call_that_never_answers_is_outcome_unknown(store: Store) -> None:
    term = FakeTerminal(snapshot(agent("agt_a", 1)))

    async def hang(method: str, params: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(10)
        return {}

    term.then("agent.prompt", hang)
    q = queue(store, "ses_a", "lost")

    async def body(engine: Deliverer) -> None:
        await settled(store, q.message_id, "failed")

    run(store, term, body, call_timeout_s=0.1)
    assert stage_rows(store, q.message_id)[-1]["reason"] == OUTCOME_UNKNOWN


def test_start_fails_what_was_being_written(store: Store) -> None:
    """I3.4: a message whose last stage is `writing` (the service stopped mid-write) becomes
    `failed` "outcome unknown" at start and is never written again; queued ones go out."""
    term = FakeTerminal(snapshot(agent("agt_a", 1)))
    cut = queue(store, "ses_a", "cut off")
    waiting = queue(store, "ses_a", "waiting")
    with store.write() as tx:
        append_stage(
            tx,
            group_id=GROUP,
            delivery_id=cut.delivery_id,
            message_id=cut.message_id,
            task_id=None,
            attempt_id=None,
            stage=WRITING,
            reason=None,
            tries=0,
        )

    async def body(engine: Deliverer) -> None:
        assert stages(store, cut.message_id)[-1] == ("failed", 0)
        await settled(store, waiting.message_id)

    run(store, term, body)
    assert stage_rows(store, cut.message_id)[-1]["reason"] == STOPPED_WHILE_WRITING
    assert [p["text"] for p in term.written()] == ["waiting"]
    assert latest_stages(store, "d.stage = ?", (WRITING,)) == []


def test_every_stage_has_its_event_in_a_gapless_journal(store: Store) -> None:
    """I2: each stage row carries its own event, and the group's sequences have no gap."""
    term = FakeTerminal(snapshot(agent("agt_a", 1)))
    term.then("agent.prompt", refused(ErrorCode.AGENT_EXITED))
    q = queue(store, "ses_a", "journal", task_id="tsk_1")
    plain = queue(store, "ses_a", "plain")

    async def body(engine: Deliverer) -> None:
        await settled(store, plain.message_id)

    run(store, term, body)
    journal = store.read("SELECT * FROM journal WHERE group_id = ? ORDER BY sequence", (GROUP,))
    assert [row["sequence"] for row in journal] == list(range(1, len(journal) + 1))
    kinds = {row["event_id"]: row["kind"] for row in journal}
    expected = {q.message_id: "task.delivery", plain.message_id: "message.delivery"}
    for message_id, kind in expected.items():
        rows = stage_rows(store, message_id)
        assert [kinds[row["event_id"]] for row in rows] == [kind] * len(rows)
    assert len(stage_rows(store, q.message_id)) == 6


def test_a_recipient_removed_from_the_group_gets_an_explicit_failure(store: Store) -> None:
    """A message to a session no longer in its group is `failed` "removed_from_group" for
    good: never typed into a pane outside the group, never silently dropped."""
    term = FakeTerminal(snapshot(agent("agt_a", 1, state="attention")))
    q = queue(store, "ses_a", "for the group")

    async def body(engine: Deliverer) -> None:
        await wait_for_async(lambda: engine.waiting_reason(q.message_id), 5, "waiting")
        with store.write() as tx:
            tx.execute("UPDATE sessions SET group_id = NULL WHERE id = 'ses_a'")
        term.snap = snapshot(agent("agt_a", 1))
        engine.on_snapshot(term.snap)
        await settled(store, q.message_id, "failed")

    run(store, term, body)
    assert stages(store, q.message_id) == [("queued", 0), ("failed", 0)]
    assert stage_rows(store, q.message_id)[-1]["reason"] == "removed_from_group"
    assert term.written() == []


def test_a_snapshot_picks_up_a_message_nobody_kicked(store: Store) -> None:
    term = FakeTerminal(snapshot(agent("agt_a", 1)))

    async def body(engine: Deliverer) -> None:
        q = queue(store, "ses_a", "unkicked")
        await asyncio.sleep(0.05)
        assert stages(store, q.message_id) == [("queued", 0)]
        engine.on_snapshot(term.snap or {})
        await settled(store, q.message_id)

    run(store, term, body)
