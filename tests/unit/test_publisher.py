"""ScreenPublisher: when a pane's worker publishes its screen to the router (R4.4, #19).

End to end behaviour (reads during a flood, a read after a completed wait, reads across many
flooding panes) is in ``tests/e2e/test_read_watch.py``; this pins the timing rules with a
recorded transmit."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from pebrel import messages as m
from pebrel.model import PUBLISH_LINES, PUBLISH_MAX_BYTES
from pebrel.workers import publisher
from pebrel.workers.publisher import ScreenPublisher
from pebrel.workers.screen import ReadResult
from tests.conftest import assert_never_async, wait_for_async

pytestmark = pytest.mark.timeout(30)

IDS = {"window_id": 1, "pane_id": 2}


def _publisher() -> tuple[ScreenPublisher, list[m.ScreenPublished]]:
    sent: list[m.ScreenPublished] = []
    counter = itertools.count(1)

    def read(lines: int, max_bytes: int) -> ReadResult:
        return ReadResult([f"screen {next(counter)}", f"{lines} {max_bytes}"], 0, False)

    def transmit(message: m.Message) -> None:
        assert isinstance(message, m.ScreenPublished)
        sent.append(message)

    return ScreenPublisher(IDS, read, lambda: (80, 24), transmit), sent


def test_the_first_screen_goes_out_with_the_first_message_even_without_output() -> None:
    """A pane starts dirty: its first screen is published before anything else it sends."""
    pub, sent = _publisher()
    pub.flush()
    assert [(msg.lines, msg.cols, msg.rows, msg.reports) for msg in sent] == [
        (["screen 1", f"{PUBLISH_LINES} {PUBLISH_MAX_BYTES}"], 80, 24, 1)
    ]
    pub.flush()  # nothing changed since: nothing more
    assert len(sent) == 1


def test_first_change_goes_out_at_once_then_when_the_output_pauses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The interval is far longer than the wait below: the held change can only go out because
    # the output paused for QUIET_S.
    monkeypatch.setattr(publisher, "PUBLISH_INTERVAL_S", 30.0)
    monkeypatch.setattr(publisher, "QUIET_S", 0.01)

    async def main() -> None:
        pub, sent = _publisher()
        pub.changing()
        pub.changed()
        assert [msg.reports for msg in sent] == [1]
        pub.changing()
        pub.changed()
        assert len(sent) == 1 and pub.dirty  # within the interval: held
        # no more output: out once it paused for QUIET_S
        await wait_for_async(lambda: len(sent) == 2, 10, "the held change")
        assert not pub.dirty
        assert [msg.reports for msg in sent] == [1, 2] and sent[1].lines[0] == "screen 2"

    asyncio.run(main())


def test_a_publication_counts_the_inputs_output_came_in_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The router answers no read of the pane from a publication until one counts the input
    (``inputs``); the echo is published by the usual rules, not sooner."""
    monkeypatch.setattr(publisher, "PUBLISH_INTERVAL_S", 30.0)
    monkeypatch.setattr(publisher, "QUIET_S", 0.01)
    monkeypatch.setattr(publisher, "QUIET_GAP_S", 0.01)

    async def main() -> None:
        pub, sent = _publisher()
        pub.changing()
        pub.changed()
        pub.input_written()
        assert [msg.inputs for msg in sent] == [0]  # nothing came after the input yet
        pub.changing()
        pub.changed()  # its echo: held as any output within the interval
        assert len(sent) == 1 and pub.dirty
        await wait_for_async(lambda: len(sent) == 2, 10, "the echo's publication")
        assert sent[1].inputs == 1
        pub.input_written()
        pub.input_written()
        pub.flush()  # a publication before output came after them: they do not count yet
        assert len(sent) == 2  # nothing changed, nothing published
        pub.changing()
        pub.changed()
        pub.flush()
        assert [msg.inputs for msg in sent] == [0, 1, 3]

    asyncio.run(main())


def test_bursts_that_end_one_after_another_are_published_at_most_every_gap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A line every few milliseconds is not one burst ending after another: between two
    publications lies at least QUIET_GAP_S."""
    monkeypatch.setattr(publisher, "PUBLISH_INTERVAL_S", 30.0)
    monkeypatch.setattr(publisher, "QUIET_S", 0.0005)
    monkeypatch.setattr(publisher, "QUIET_GAP_S", 0.1)

    async def main() -> None:
        pub, sent = _publisher()
        loop = asyncio.get_running_loop()
        start = loop.time()
        while loop.time() - start < 0.45:  # a line every 5 ms, quiet in between
            pub.changing()
            pub.changed()
            await asyncio.sleep(0.005)
        await wait_for_async(lambda: not pub.dirty, 10, "the last line published")
        # at once, then about every 0.1 s: never one per line (90 of them)
        assert 3 <= len(sent) <= 7, [msg.reports for msg in sent]

    asyncio.run(main())


def test_output_that_goes_on_is_published_at_most_every_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(publisher, "PUBLISH_INTERVAL_S", 0.2)
    monkeypatch.setattr(publisher, "QUIET_S", 10.0)  # never quiet: only the interval counts

    async def main() -> None:
        pub, sent = _publisher()
        loop = asyncio.get_running_loop()
        start = loop.time()
        while loop.time() - start < 0.5:  # a flood: a chunk every millisecond
            pub.changing()
            pub.changed()
            await asyncio.sleep(0.001)
        # at once, then at 0.2 and 0.4 s: never one per chunk
        assert 2 <= len(sent) <= 4, [msg.reports for msg in sent]

    asyncio.run(main())


def test_a_flush_before_another_message_does_not_hold_back_the_next_change() -> None:
    async def main() -> None:
        pub, sent = _publisher()
        pub.changing()
        pub.flush()  # a shell mark is about to go out
        pub.changing()
        pub.changed()  # the prompt after the mark: not held for the interval
        assert [msg.reports for msg in sent] == [1, 2]

    asyncio.run(main())


def test_nothing_is_published_while_the_screen_does_not_change() -> None:
    async def main() -> None:
        pub, sent = _publisher()
        pub.flush()
        pub.changed()  # a batch that changed nothing on screen (only marks, say)
        await assert_never_async(
            lambda: len(sent) > 1, 0.1, "an unchanged screen is never published again"
        )
        pub.close()

    asyncio.run(main())


def test_an_announced_publication_follows_the_message_it_was_announced_for() -> None:
    """Before a mark that can end a wait, the worker announces the publication (a small
    ScreenPending) and publishes at the loop's next turn, after the mark."""

    async def main() -> None:
        sent: list[m.Message] = []
        pub = ScreenPublisher(
            IDS,
            lambda lines, max_bytes: ReadResult(["$ true", "$"], 0, False),
            lambda: (80, 24),
            sent.append,
        )
        pub.flush()  # the first screen
        pub.changing()
        pub.announce()
        pub.announce()  # announced once
        sent.append(m.ShellMarked(**IDS, mark="D", exit_code=0, row=3))
        assert [type(msg) for msg in sent] == [m.ScreenPublished, m.ScreenPending, m.ShellMarked]
        pending = sent[1]
        assert isinstance(pending, m.ScreenPending) and pending.reports == 2
        await wait_for_async(lambda: len(sent) == 4, 5, "the announced publication")
        assert isinstance(sent[3], m.ScreenPublished) and sent[3].reports == 2
        assert not pub.pending and not pub.dirty

    asyncio.run(main())


def test_what_waits_for_the_screen() -> None:
    ids = {"window_id": 1, "pane_id": 1}
    assert publisher.needs_screen(m.ShellMarked(**ids, mark="D", exit_code=0, row=1))
    assert publisher.needs_screen(m.ShellMarked(**ids, mark="A", exit_code=None, row=1))
    assert not publisher.needs_screen(m.ShellMarked(**ids, mark="C", exit_code=None, row=1))
    assert not publisher.needs_screen(m.TitleChanged(**ids, title="t"))
    assert not publisher.needs_screen(m.InputWritten(request_id=1, written=3, error=None))
    read = m.ScreenRead(request_id=1, lines=[], history_available=0, truncated=False)
    assert publisher.needs_screen(read) and publisher.needs_screen_now(read)
    exited = m.PaneExited(**ids, exit_code=0, signal=None, reason="exited")
    assert publisher.needs_screen(exited) and publisher.needs_screen_now(exited)
    mark = m.ShellMarked(**ids, mark="D", exit_code=0, row=1)
    assert not publisher.needs_screen_now(mark)
