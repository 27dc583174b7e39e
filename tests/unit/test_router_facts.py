"""The router's handling of pane worker messages (router/facts.py, router/links.py): one
handler per message type, and replies matched through one pending map by request id."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pebrel import messages as m
from pebrel.errors import ErrorCode, PebrelError
from pebrel.router import facts, links
from pebrel.router.facts import on_worker_message
from pebrel.router.links import WorkerLink, WorkerProcess
from tests.unit.router_stub import one_pane_runtime

pytestmark = pytest.mark.timeout(30)


def test_every_reply_and_fact_has_a_handler_and_nothing_else_does() -> None:
    """A worker message the router has no handler for would be dropped without a word."""
    worker_types = {
        cls for cls in m.all_message_types().values() if issubclass(cls, m.Reply | m.PaneFact)
    }
    assert set(facts.HANDLERS) == worker_types
    for cls in worker_types:
        if issubclass(cls, m.Reply):
            # An input write's answer also holds back the pane's published screen until its
            # echo is published (#19); every other reply only answers its request.
            written = cls in (m.InputWritten, m.PasteWritten)
            assert facts.HANDLERS[cls] is (facts.input_replied if written else facts.replied)


def test_a_reply_answers_its_request_by_id_and_leaves_nothing_pending(tmp_path: Path) -> None:
    async def main() -> None:
        sent: list[m.Message] = []
        rt, pane = one_pane_runtime(tmp_path, sent.append)
        link = rt.links[pane.key]
        request = asyncio.ensure_future(
            links.request(link, rt.send, lambda rid: m.ResizePty(request_id=rid, cols=90, rows=30))
        )
        await asyncio.sleep(0)
        command = sent[-1]
        assert isinstance(command, m.ResizePty) and command.request_id in links.pending
        on_worker_message(rt, m.PtyResized(request_id=command.request_id + 1, cols=1, rows=1))
        assert not request.done()  # another request's id: not this one's answer
        answer = m.PtyResized(request_id=command.request_id, cols=90, rows=30)
        on_worker_message(rt, answer)
        assert await request == answer
        assert command.request_id not in links.pending

    asyncio.run(main())


def test_a_worker_gone_fails_its_own_requests_only(tmp_path: Path) -> None:
    async def main() -> None:
        sent: list[m.Message] = []
        rt, pane = one_pane_runtime(tmp_path, sent.append)
        other_started: asyncio.Future[m.Message] = asyncio.get_running_loop().create_future()
        other_started.set_result(m.AnswersStale())
        other = WorkerLink(1, 2, WorkerProcess(0), other_started, identity=b"x")
        rt.links[(1, 2)] = other
        mine = asyncio.ensure_future(
            links.request(rt.links[pane.key], rt.send, lambda rid: m.ClosePane(request_id=rid))
        )
        theirs = asyncio.ensure_future(
            links.request(other, rt.send, lambda rid: m.ClosePane(request_id=rid))
        )
        await asyncio.sleep(0)
        rt.link_gone(other)
        with pytest.raises(PebrelError) as failed:
            await theirs
        assert failed.value.code == ErrorCode.INVALID_STATE
        assert not mine.done()
        closing = sent[0]
        assert isinstance(closing, m.ClosePane)
        on_worker_message(rt, m.PaneClosed(request_id=closing.request_id))
        assert await mine == m.PaneClosed(request_id=closing.request_id)
        assert closing.request_id not in links.pending

    asyncio.run(main())
