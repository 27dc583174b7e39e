"""pane.run on a shell not at its prompt yet: the worker types the line at its prompt
(workers/promptwrites.py) and the router sets the running edge as that write's answer is
handled (R6.2; issue 6 item 4). In process, with recording stand-ins for the PTY writer and
the worker's socket, so the orderings a real run rarely shows are pinned here: the prompt, the
write's answer and the command's own marks handled in one drain, before the run's coroutine
resumes; a deadline that races the write. End to end: tests/e2e/test_pane_start.py."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

import pytest

from pebrel import messages as m
from pebrel.errors import ErrorCode, PebrelError
from pebrel.router.facts import on_worker_message
from pebrel.router.handlers import pane_io
from pebrel.router.runtime import Runtime
from pebrel.router.state import Pane
from pebrel.workers.promptwrites import PromptWrites
from pebrel.workers.writes import PtyWriter
from tests.conftest import wait_for_async
from tests.unit.router_stub import one_pane_runtime

pytestmark = pytest.mark.timeout(30)


class _Writer:
    def __init__(self) -> None:
        self.queued: list[tuple[int, bytes]] = []

    def queue(self, request_id: int, data: bytes, paste: bool = False) -> None:
        self.queued.append((request_id, data))


def _prompt_writes(sends_b: bool = True) -> tuple[PromptWrites, _Writer, list[m.Message]]:
    writer = _Writer()
    sent: list[m.Message] = []
    # PromptWrites calls only PtyWriter.queue, which _Writer records instead of writing.
    writes = PromptWrites(cast(PtyWriter, writer), sent.append, sends_b)
    return writes, writer, sent


def _output(writes: PromptWrites, *marks: str) -> None:
    """A chunk of output holding these marks, taken in."""
    for mark in marks:
        writes.marked(mark)
    writes.output_done()


def test_an_armed_line_is_typed_once_the_output_that_drew_the_prompt_is_in() -> None:
    writes, writer, sent = _prompt_writes()
    writes.arm(m.WriteAtPrompt(request_id=7, data=b"make\r"), exited=False)
    _output(writes)  # rc files still printing
    assert writer.queued == []
    writes.marked("A")
    writes.marked("B")
    assert writer.queued == []  # not in the middle of the chunk that draws the prompt
    writes.output_done()
    assert writer.queued == [(7, b"make\r")]
    _output(writes, "A", "B")  # a redraw of the same prompt does not type it twice
    assert writer.queued == [(7, b"make\r")] and sent == []


def test_an_a_printed_before_the_prompt_is_not_the_prompt() -> None:
    """zsh prints A from precmd, before its line editor draws the prompt (and B with it):
    typed then, the line would be echoed twice."""
    writes, writer, _ = _prompt_writes()
    writes.arm(m.WriteAtPrompt(request_id=1, data=b"ls\r"), exited=False)
    _output(writes, "A")
    assert writer.queued == []
    _output(writes, "B")
    assert writer.queued == [(1, b"ls\r")]


def test_a_shell_whose_marks_have_no_b_is_at_its_prompt_after_a() -> None:
    """fish 4 marks its prompt with A only (its own OSC 133)."""
    writes, writer, _ = _prompt_writes(sends_b=False)
    writes.arm(m.WriteAtPrompt(request_id=2, data=b"ls\r"), exited=False)
    _output(writes, "A")
    assert writer.queued == [(2, b"ls\r")]


def test_once_a_shell_sent_b_an_a_alone_is_not_enough() -> None:
    writes, writer, _ = _prompt_writes(sends_b=False)
    _output(writes, "A", "B", "C")
    writes.arm(m.WriteAtPrompt(request_id=3, data=b"ls\r"), exited=False)
    _output(writes, "D", "A")
    assert writer.queued == []
    _output(writes, "B")
    assert writer.queued == [(3, b"ls\r")]


def test_a_shell_already_at_its_prompt_gets_the_line_at_once() -> None:
    writes, writer, _ = _prompt_writes()
    _output(writes, "A", "B")
    writes.arm(m.WriteAtPrompt(request_id=3, data=b"ls\r"), exited=False)
    assert writer.queued == [(3, b"ls\r")]


def test_a_running_command_is_not_a_prompt() -> None:
    writes, writer, _ = _prompt_writes()
    _output(writes, "A", "B", "C")
    writes.arm(m.WriteAtPrompt(request_id=4, data=b"ls\r"), exited=False)
    assert writer.queued == []
    _output(writes, "D")
    assert writer.queued == []
    _output(writes, "A", "B")
    assert writer.queued == [(4, b"ls\r")]


def test_a_cancelled_line_is_answered_unwritten_and_never_typed() -> None:
    writes, writer, sent = _prompt_writes()
    writes.arm(m.WriteAtPrompt(request_id=5, data=b"rm -rf build\r"), exited=False)
    writes.cancel(5)
    assert sent == [m.InputWritten(request_id=5, written=0, error=m.NOT_AT_PROMPT)]
    _output(writes, "A", "B")
    assert writer.queued == []


def test_a_cancel_after_the_write_changes_nothing() -> None:
    writes, writer, sent = _prompt_writes()
    writes.arm(m.WriteAtPrompt(request_id=6, data=b"ls\r"), exited=False)
    _output(writes, "A", "B")
    writes.cancel(6)  # crossed the write: its InputWritten comes from the writer
    assert writer.queued == [(6, b"ls\r")] and sent == []


def test_an_exited_shell_answers_an_armed_line_unwritten() -> None:
    writes, writer, sent = _prompt_writes()
    writes.arm(m.WriteAtPrompt(request_id=8, data=b"ls\r"), exited=False)
    writes.pane_exited()
    writes.arm(m.WriteAtPrompt(request_id=9, data=b"ls\r"), exited=True)
    assert [(msg.request_id, msg.written, msg.error) for msg in sent] == [  # type: ignore[attr-defined]
        (8, 0, m.PANE_EXITED),
        (9, 0, m.PANE_EXITED),
    ]
    assert writer.queued == []


# -- the router's side ---------------------------------------------------------------------


def _runtime(tmp_path: Path, sent: list[m.Message]) -> tuple[Runtime, Pane]:
    return one_pane_runtime(tmp_path, sent.append, integrated=True)


async def _armed(sent: list[m.Message]) -> m.WriteAtPrompt:
    """The run's line, once the router has armed it in the worker."""
    armed = await wait_for_async(
        lambda: sent and isinstance(sent[-1], m.WriteAtPrompt) and sent[-1],
        5,
        "the line armed in the worker",
    )
    assert isinstance(armed, m.WriteAtPrompt)
    return armed


def _mark(mark: str, code: int | None = None) -> m.ShellMarked:
    return m.ShellMarked(window_id=1, pane_id=1, mark=mark, exit_code=code, row=0)


def test_the_edge_is_set_before_the_command_marks_handled_in_the_same_drain(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        sent: list[m.Message] = []
        rt, pane = _runtime(tmp_path, sent)
        seq_before = pane.tracker.seq
        run = asyncio.ensure_future(pane_io.run(rt, {"pane_id": 1, "command": "true"}))
        armed = await _armed(sent)
        assert armed.data == b"true\r"
        assert pane.writing  # the input lock holds while the line waits for its prompt
        # One drain of the router's socket: the prompt, the write's answer, the command.
        on_worker_message(rt, _mark("A"))
        on_worker_message(rt, _mark("B"))
        on_worker_message(
            rt, m.InputWritten(request_id=armed.request_id, written=len(armed.data), error=None)
        )
        edge = pane.tracker.seq
        assert pane.tracker.state == "running" and edge > seq_before
        for mark, code in (("C", None), ("D", 0), ("A", None), ("B", None)):
            on_worker_message(rt, _mark(mark, code))
        result = await run
        assert result["status"] == "finished" and result["exit_code"] == 0
        assert result["state_change_seq"] == pane.tracker.seq > edge
        assert not pane.writing and pane.tracker.state != "running"

    asyncio.run(main())


def test_without_wait_the_baseline_is_the_edge_the_write_set(tmp_path: Path) -> None:
    async def main() -> None:
        sent: list[m.Message] = []
        rt, pane = _runtime(tmp_path, sent)
        run = asyncio.ensure_future(
            pane_io.run(rt, {"pane_id": 1, "command": "sleep 1", "wait": False})
        )
        armed = await _armed(sent)
        on_worker_message(rt, _mark("B"))
        on_worker_message(
            rt, m.InputWritten(request_id=armed.request_id, written=len(armed.data), error=None)
        )
        edge = pane.tracker.seq
        on_worker_message(rt, _mark("C"))  # handled before the run's coroutine resumes
        result = await run
        assert result["status"] == "started" and result["state_change_seq"] == edge

    asyncio.run(main())


async def _past_its_deadline(
    rt: Runtime, sent: list[m.Message]
) -> tuple[asyncio.Future[Any], m.WriteAtPrompt]:
    """A pane.run of `true` with a 50 ms deadline, armed in the worker and cancelled at it."""
    run = asyncio.ensure_future(
        pane_io.run(rt, {"pane_id": 1, "command": "true", "timeout_ms": 50})
    )
    armed = await _armed(sent)
    await wait_for_async(  # the deadline's timer runs on this loop
        lambda: isinstance(sent[-1], m.CancelAtPrompt), 5, "the cancel at the deadline"
    )
    assert sent[-1] == m.CancelAtPrompt(request_id=armed.request_id)
    return run, armed


def test_no_prompt_by_the_deadline_cancels_and_types_nothing(tmp_path: Path) -> None:
    async def main() -> None:
        sent: list[m.Message] = []
        rt, pane = _runtime(tmp_path, sent)
        run, armed = await _past_its_deadline(rt, sent)
        assert not run.done()  # the worker's answer says whether it was typed after all
        on_worker_message(
            rt, m.InputWritten(request_id=armed.request_id, written=0, error=m.NOT_AT_PROMPT)
        )
        with pytest.raises(PebrelError) as caught:
            await run
        assert caught.value.code == ErrorCode.INVALID_STATE
        assert caught.value.details["submitted"] is False
        assert not pane.writing and pane.tracker.state != "running"

    asyncio.run(main())


def test_a_write_that_crossed_the_cancel_is_a_submitted_run(tmp_path: Path) -> None:
    async def main() -> None:
        sent: list[m.Message] = []
        rt, pane = _runtime(tmp_path, sent)
        run, armed = await _past_its_deadline(rt, sent)
        # The prompt came, and the worker typed, before it read the cancel.
        on_worker_message(rt, _mark("B"))
        on_worker_message(
            rt, m.InputWritten(request_id=armed.request_id, written=len(b"true\r"), error=None)
        )
        for mark, code in (("C", None), ("D", 0), ("B", None)):
            on_worker_message(rt, _mark(mark, code))
        result = await run
        assert result["exit_code"] == 0 and not pane.writing

    asyncio.run(main())


def test_a_command_that_starts_before_the_line_is_typed_is_not_taken_for_it(
    tmp_path: Path,
) -> None:
    """The router saw a prompt, but the worker had already seen a command start (typed by
    other means) and types the line only at the next prompt: the run reports its own
    command, not the one that ran first."""

    async def main() -> None:
        sent: list[m.Message] = []
        rt, _ = _runtime(tmp_path, sent)
        on_worker_message(rt, _mark("A"))
        on_worker_message(rt, _mark("B"))
        run = asyncio.ensure_future(pane_io.run(rt, {"pane_id": 1, "command": "true"}))
        armed = await _armed(sent)
        for mark, code in (("C", None), ("D", 7), ("A", None), ("B", None)):
            on_worker_message(rt, _mark(mark, code))  # the other command, then a prompt
        on_worker_message(
            rt, m.InputWritten(request_id=armed.request_id, written=len(armed.data), error=None)
        )
        for mark, code in (("C", None), ("D", 0), ("A", None), ("B", None)):
            on_worker_message(rt, _mark(mark, code))
        result = await run
        assert result["exit_code"] == 0

    asyncio.run(main())


def test_a_deadline_before_the_worker_connects_is_not_at_a_prompt(tmp_path: Path) -> None:
    """pane.run with a short timeout right after a split, whose worker has not connected
    yet: nothing is sent, and the answer is the usual not-at-a-prompt one."""

    async def main() -> None:
        sent: list[m.Message] = []
        rt, pane = _runtime(tmp_path, sent)
        rt.links[pane.key].started = asyncio.get_running_loop().create_future()  # connecting
        with pytest.raises(PebrelError) as caught:
            await pane_io.run(rt, {"pane_id": 1, "command": "true", "timeout_ms": 50})
        assert caught.value.code == ErrorCode.INVALID_STATE
        assert caught.value.details["submitted"] is False
        assert sent == [] and not pane.writing

    asyncio.run(main())


def test_the_input_is_held_while_a_new_panes_worker_connects(tmp_path: Path) -> None:
    """Another input sent while pane.run waits for the new pane's worker to connect is
    refused (it would otherwise be typed before the run's line)."""

    async def main() -> None:
        sent: list[m.Message] = []
        rt, pane = _runtime(tmp_path, sent)
        link = rt.links[pane.key]
        started = link.started
        link.started = asyncio.get_running_loop().create_future()  # connecting
        run = asyncio.ensure_future(pane_io.run(rt, {"pane_id": 1, "command": "true"}))
        await wait_for_async(lambda: pane.writing, 5, "the input held for the run")
        assert sent == []
        link.started.set_result(started.result())  # connected
        await _armed(sent)
        assert pane.writing
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        assert not pane.writing

    asyncio.run(main())
