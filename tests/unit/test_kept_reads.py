"""The router's pane.read answers from published screens, and its kept answers against the
order its worker messages are handled in (R4.4; issue 6 item 5, #19). In process, with a
recording stand-in for the worker's socket: the interleavings here are hard to hit on purpose
end to end (one was found there: a change reported right after a read's answer, handled before
the read's task resumed, left the older answer kept after the command had ended)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pebrel import messages as m
from pebrel.model import PUBLISH_LINES
from pebrel.router import sizing
from pebrel.router.facts import on_worker_message
from pebrel.router.handlers import pane_io
from pebrel.router.runtime import Runtime
from pebrel.router.state import Pane
from tests.conftest import wait_for_async
from tests.unit.router_stub import one_pane_runtime

pytestmark = pytest.mark.timeout(30)


def _runtime(tmp_path: Path, sent: list[m.Message]) -> tuple[Runtime, Pane]:
    return one_pane_runtime(tmp_path, sent.append, integrated=False)


def _asked(sent: list[m.Message]) -> bool:
    """The last message to the worker asks it for a read (the read's task is waiting)."""
    return bool(sent) and isinstance(sent[-1], m.ReadScreen)


def _answer(request: m.Message, lines: list[str], reports: int) -> m.ScreenRead:
    assert isinstance(request, m.ReadScreen)
    return m.ScreenRead(
        request_id=request.request_id,
        lines=lines,
        history_available=0,
        truncated=False,
        reports=reports,
        captured_at=2.0,
    )


def _publish(
    lines: list[str], reports: int, size: tuple[int, int] = (80, 24), truncated: bool = False
) -> m.ScreenPublished:
    return m.ScreenPublished(
        window_id=1,
        pane_id=1,
        lines=lines,
        history_available=0,
        truncated=truncated,
        cols=size[0],
        rows=size[1],
        captured_at=1.0,
        reports=reports,
    )


def _reads_asked(sent: list[m.Message]) -> int:
    return len([msg for msg in sent if isinstance(msg, m.ReadScreen)])


def test_reads_are_answered_from_the_published_screen_without_the_worker(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        sent: list[m.Message] = []
        rt, pane = _runtime(tmp_path, sent)
        lines = [f"line {i}" for i in range(200)]
        on_worker_message(rt, _publish(lines[-PUBLISH_LINES:], reports=1, truncated=True))
        five = await pane_io.read(rt, {"pane_id": 1, "lines": 5})
        assert five.reusable and b'"line 199"' in five.json and b'"line 194"' not in five.json
        assert b'"truncated":true' in five.json and b'"screen_captured_at":1.0' in five.json
        every = await pane_io.read(rt, {"pane_id": 1, "lines": PUBLISH_LINES})
        assert every.reusable and b'"line 80"' in every.json and b'"line 79"' not in every.json
        assert _reads_asked(sent) == 0
        # more lines than were published (and some were cut off): the worker is asked
        longer = asyncio.ensure_future(pane_io.read(rt, {"pane_id": 1, "lines": 150}))
        await wait_for_async(lambda: _asked(sent), 5, "the read asked of the worker")
        on_worker_message(rt, _answer(sent[-1], lines[-150:], reports=1))
        assert b'"line 50"' in (await longer).json
        # a new publication replaces every kept answer
        on_worker_message(rt, _publish(["new"], reports=2))
        assert pane.reads == {}
        assert b'"new"' in (await pane_io.read(rt, {"pane_id": 1, "lines": 150})).json
        assert _reads_asked(sent) == 1  # all of it was published: no need to ask

    asyncio.run(main())


def test_a_publication_after_the_answer_is_not_overwritten_by_it(tmp_path: Path) -> None:
    async def main() -> None:
        sent: list[m.Message] = []
        rt, _ = _runtime(tmp_path, sent)
        read = asyncio.ensure_future(pane_io.read(rt, {"pane_id": 1, "lines": 24}))
        await wait_for_async(lambda: _asked(sent), 5, "the read asked of the worker")
        # One drain of the router's socket: the answer, then the worker's next publication.
        on_worker_message(rt, _answer(sent[-1], ["$ make", "building"], reports=0))
        on_worker_message(rt, _publish(["$ make", "building", "DONE", "$"], reports=1))
        first = await read
        assert b"DONE" not in first.json and not first.reusable  # given, not kept
        again = await pane_io.read(rt, {"pane_id": 1, "lines": 24})
        assert b"DONE" in again.json and again.reusable
        assert _reads_asked(sent) == 1

    asyncio.run(main())


def test_a_publication_before_the_answer_leaves_it_kept(tmp_path: Path) -> None:
    async def main() -> None:
        sent: list[m.Message] = []
        rt, pane = _runtime(tmp_path, sent)
        read = asyncio.ensure_future(pane_io.read(rt, {"pane_id": 1, "lines": 500}))
        await wait_for_async(lambda: _asked(sent), 5, "the read asked of the worker")
        on_worker_message(rt, _publish(["older"], reports=1, truncated=True))  # flushed first
        on_worker_message(rt, _answer(sent[-1], ["newest"], reports=1))
        first = await read
        assert first.reusable and pane.reads[500].reply.lines == ["newest"]

    asyncio.run(main())


def test_a_resize_sends_reads_to_the_worker_until_a_screen_of_the_new_size(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        sent: list[m.Message] = []
        rt, pane = _runtime(tmp_path, sent)
        on_worker_message(rt, _publish(["80 columns"], reports=1))
        assert b"80 columns" in (await pane_io.read(rt, {"pane_id": 1, "lines": 24})).json
        window = rt.state.windows[1]
        tab = window.tabs[0]
        tab.cols, tab.rows = 100, 30
        sizing.resize_tab(rt, window, tab)
        assert pane.reads == {}
        assert isinstance(sent[-1], m.ResizePty)
        # published before the worker had the resize: not answered from
        on_worker_message(rt, _publish(["80 columns, later"], reports=2))
        read = asyncio.ensure_future(pane_io.read(rt, {"pane_id": 1, "lines": 24}))
        # asks the worker, after the resize
        await wait_for_async(lambda: _asked(sent), 5, "the read asked of the worker")
        on_worker_message(rt, _publish(["100 columns"], reports=3, size=(100, 30)))
        on_worker_message(rt, _answer(sent[-1], ["100 columns"], reports=3))
        assert b"100 columns" in (await read).json
        assert b"100 columns" in (await pane_io.read(rt, {"pane_id": 1, "lines": 5})).json
        assert _reads_asked(sent) == 1

    asyncio.run(main())


def test_a_pane_whose_worker_is_gone_is_read_from_its_last_publication(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        sent: list[m.Message] = []
        rt, pane = _runtime(tmp_path, sent)
        on_worker_message(rt, _publish(["a", "b", "c"], reports=1))
        pane.exited = True
        del rt.links[pane.key]
        pane.screen_current = False  # e.g. a resize was on its way when it died
        read = await pane_io.read(rt, {"pane_id": 1, "lines": 2})
        assert b'"lines":["b","c"]' in read.json and not read.reusable
        assert _reads_asked(sent) == 0

    asyncio.run(main())


def test_an_announced_publication_sends_reads_to_the_worker_until_it_arrives(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        sent: list[m.Message] = []
        rt, pane = _runtime(tmp_path, sent)
        on_worker_message(rt, _publish(["$ true"], reports=1))
        assert b"$ true" in (await pane_io.read(rt, {"pane_id": 1, "lines": 24})).json
        on_worker_message(rt, m.ScreenPending(window_id=1, pane_id=1, reports=2))
        on_worker_message(rt, m.ShellMarked(window_id=1, pane_id=1, mark="D", exit_code=0, row=1))
        assert pane.reads == {} and not pane.screen_current
        read = asyncio.ensure_future(pane_io.read(rt, {"pane_id": 1, "lines": 24}))
        await wait_for_async(lambda: _asked(sent), 5, "the read asked of the worker")
        on_worker_message(rt, _publish(["$ true", "$"], reports=2))  # flushed before the reply
        on_worker_message(rt, _answer(sent[-1], ["$ true", "$"], reports=2))
        answered = await read
        assert b'"$"' in answered.json and answered.reusable

    asyncio.run(main())
