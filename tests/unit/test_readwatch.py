"""ReadWatch: when the worker renews the router's kept read, and when it gives it up (R4.4).

End to end behaviour (reads during a flood, a read after a completed wait) is in
``tests/e2e/test_read_watch.py``; this pins the timing rules with a recorded transmit."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from pebrel import messages as m
from pebrel.workers import readwatch
from pebrel.workers.readwatch import ReadWatch
from pebrel.workers.screen import ReadResult
from tests.conftest import assert_never_async, wait_for_async

pytestmark = pytest.mark.timeout(30)

IDS = {"window_id": 1, "pane_id": 2}


class _Clock:
    """Stands in for `time` in readwatch: the watch's lapse is read from this clock, so a test
    moves time on instead of waiting for it (only timers of the loop need real time)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def _watch() -> tuple[ReadWatch, list[m.Message]]:
    sent: list[m.Message] = []
    counter = itertools.count(1)

    def read(lines: int, max_bytes: int) -> ReadResult:
        return ReadResult([f"screen {next(counter)}", f"{lines} {max_bytes}"], 0, False)

    return ReadWatch(IDS, read, sent.append), sent


def test_nothing_is_sent_before_a_kept_read() -> None:
    async def main() -> None:
        watch, sent = _watch()
        watch.changing()
        watch.changed()
        assert sent == [] and not watch.dirty
        await assert_never_async(
            lambda: sent or watch.dirty,
            0.05,
            "nothing is kept, so nothing is armed; an update's timer would fire within the "
            "5 ms interval",
        )

    asyncio.run(main())


def test_first_change_goes_out_at_once_then_when_the_output_pauses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The interval and the watch are far longer than the wait below: the held change can
    # only go out because the output paused for QUIET_S.
    monkeypatch.setattr(readwatch, "PUBLISH_INTERVAL_S", 30.0)
    monkeypatch.setattr(readwatch, "WATCH_S", 30.0)
    monkeypatch.setattr(readwatch, "QUIET_S", 0.01)

    async def main() -> None:
        watch, sent = _watch()
        watch.answered_read(24, 1000)
        watch.changing()
        watch.changed()
        assert sent == [
            m.ScreenUpdated(
                **IDS,
                read_lines=24,
                lines=["screen 1", "24 1000"],
                history_available=0,
                truncated=False,
                reports=1,
            )
        ]
        watch.changing()
        watch.changed()
        assert len(sent) == 1 and watch.dirty  # within the interval: held
        # no more output: out once it paused for QUIET_S
        await wait_for_async(lambda: len(sent) == 2, 10, "the held change")
        assert not watch.dirty
        assert all(isinstance(msg, m.ScreenUpdated) for msg in sent), sent
        assert [msg.reports for msg in sent if isinstance(msg, m.ScreenUpdated)] == [1, 2]
        assert isinstance(sent[1], m.ScreenUpdated) and sent[1].lines[0] == "screen 2"

    asyncio.run(main())


def test_a_flush_before_another_message_does_not_hold_back_the_next_change() -> None:
    async def main() -> None:
        watch, sent = _watch()
        watch.answered_read(24, 1000)
        watch.changing()
        watch.flush()  # a shell mark is about to go out
        watch.changing()
        watch.changed()  # the prompt after the mark: not held for the interval
        assert [type(msg) for msg in sent] == [m.ScreenUpdated, m.ScreenUpdated]

    asyncio.run(main())


def test_a_lapsed_watch_falls_back_to_screen_changed_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = _Clock()
    monkeypatch.setattr(readwatch, "time", clock)

    async def main() -> None:
        watch, sent = _watch()
        watch.answered_read(24, 1000)
        clock.now += readwatch.WATCH_S + 0.01  # the watch lapsed
        watch.changing()
        watch.changed()
        watch.changing()
        watch.changed()
        assert sent == [m.ScreenChanged(**IDS, reports=1)]
        assert not watch.answered

    asyncio.run(main())


def test_renewal_keeps_the_watch(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr(readwatch, "time", clock)

    async def main() -> None:
        watch, sent = _watch()
        watch.answered_read(24, 1000)
        for _ in range(4):  # twice the watch's length in all, renewed within it each time
            clock.now += readwatch.WATCH_S / 2
            watch.renew()
        watch.changing()
        watch.changed()
        assert [type(msg) for msg in sent] == [m.ScreenUpdated]

    asyncio.run(main())


def test_a_watch_that_lapses_while_an_update_is_pending_sends_screen_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(readwatch, "WATCH_S", 0.2)
    monkeypatch.setattr(readwatch, "PUBLISH_INTERVAL_S", 0.4)
    monkeypatch.setattr(readwatch, "QUIET_S", 10.0)  # held until the interval is up

    async def main() -> None:
        watch, sent = _watch()
        watch.answered_read(24, 1000)
        watch.changing()
        watch.changed()
        watch.changing()
        watch.changed()  # held for the interval, past the watch's end
        await wait_for_async(lambda: len(sent) == 2, 10, "the held change at the interval")
        assert [type(msg) for msg in sent] == [m.ScreenUpdated, m.ScreenChanged]
        assert not watch.answered

    asyncio.run(main())
