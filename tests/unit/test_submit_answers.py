"""What a submission's answer says (R4.1-R4.3, R5.4, R5.5; #14): the snapshot at the running
edge even when the command's own marks are handled before Enter's write is acknowledged, and
`written` / `submitted` exactly as far as the input got. In process, with a recording stand-in
for the pane's worker, so the ordering a real instant command shows only sometimes is pinned
here. End to end: tests/e2e/test_submit_answers.py."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from pebrel import messages as m
from pebrel.errors import ErrorCode, PebrelError
from pebrel.router.facts import on_worker_message
from pebrel.router.handlers import keys, pane_io
from pebrel.router.runtime import Runtime
from pebrel.router.state import Pane
from tests.conftest import wait_for_async
from tests.unit.router_stub import one_pane_runtime

pytestmark = pytest.mark.timeout(30)


def _runtime(tmp_path: Path, sent: list[m.Message]) -> tuple[Runtime, Pane]:
    return one_pane_runtime(tmp_path, sent.append, integrated=True)


async def _request(sent: list[m.Message], count: int) -> m.Message:
    """The ``count``-th message the router sent to the worker, once it is sent."""
    await wait_for_async(lambda: len(sent) >= count, 5, f"message {count} to the worker")
    return sent[count - 1]


def _written(request: m.Message, error: str | None = None) -> m.InputWritten:
    assert isinstance(request, m.WriteInput | m.SendKey)
    size = len(request.data) if isinstance(request, m.WriteInput) else 1
    return m.InputWritten(request_id=request.request_id, written=0 if error else size, error=error)


def _mark(mark: str, code: int | None = None) -> m.ShellMarked:
    return m.ShellMarked(window_id=1, pane_id=1, mark=mark, exit_code=code, row=0)


def _pane_in(snapshot: dict[str, Any]) -> dict[str, Any]:
    pane: dict[str, Any]
    (pane,) = [p for w in snapshot["windows"] for t in w["tabs"] for p in t["panes"]]
    return pane


def _finish_instantly(rt: Runtime) -> None:
    """An instant command's marks, handled before Enter's acknowledgement."""
    for mark, code in (("C", None), ("D", 0), ("A", None), ("B", None)):
        on_worker_message(rt, _mark(mark, code))


def test_a_prompt_answers_the_snapshot_of_its_running_edge(tmp_path: Path) -> None:
    """R5.4, R5.5: `true` finished before Enter's write was acknowledged: the answer still
    shows the pane `running` at the baseline; the pane itself is `completed` after it."""

    async def main() -> None:
        sent: list[m.Message] = []
        rt, pane = _runtime(tmp_path, sent)
        before = pane.tracker.seq
        task = asyncio.ensure_future(pane_io.prompt(rt, {"pane_id": 1, "text": "true"}))
        on_worker_message(rt, _written(await _request(sent, 1)))
        enter = await _request(sent, 2)
        assert isinstance(enter, m.WriteInput) and enter.data == b"\r"
        _finish_instantly(rt)
        on_worker_message(rt, _written(enter))
        answer = await task
        assert (answer["submitted"], answer["written"]) == (True, True)
        assert answer["state_change_seq"] == before + 1
        shown = _pane_in(answer["snapshot"])
        assert (shown["task_state"], shown["state_change_seq"]) == ("running", before + 1)
        assert (pane.tracker.state, pane.tracker.seq) == ("completed", before + 2)

    asyncio.run(main())


def test_enter_as_a_key_answers_the_snapshot_of_its_running_edge(tmp_path: Path) -> None:
    """R4.3, R5.4: the same for `pane.send_key` enter."""

    async def main() -> None:
        sent: list[m.Message] = []
        rt, pane = _runtime(tmp_path, sent)
        before = pane.tracker.seq
        task = asyncio.ensure_future(keys.send_key(rt, {"pane_id": 1, "key": "enter"}))
        key = await _request(sent, 1)
        _finish_instantly(rt)
        on_worker_message(rt, _written(key))
        answer = await task
        assert (answer["submitted"], answer["written"]) == (True, True)
        shown = _pane_in(answer["snapshot"])
        assert (shown["task_state"], shown["state_change_seq"]) == ("running", before + 1)
        assert pane.tracker.state == "completed"

    asyncio.run(main())


def test_a_failed_enter_after_the_text_is_written_but_not_submitted(tmp_path: Path) -> None:
    """R4.1: the text reached the PTY, Enter's write failed: `action_failed` with
    `written: true, submitted: false`."""

    async def main() -> None:
        sent: list[m.Message] = []
        rt, pane = _runtime(tmp_path, sent)
        task = asyncio.ensure_future(pane_io.prompt(rt, {"pane_id": 1, "text": "echo hi"}))
        on_worker_message(rt, _written(await _request(sent, 1)))
        on_worker_message(rt, _written(await _request(sent, 2), error="EIO"))
        with pytest.raises(PebrelError) as caught:
            await task
        assert caught.value.code == ErrorCode.ACTION_FAILED
        assert (caught.value.details["written"], caught.value.details["submitted"]) == (
            True,
            False,
        )
        assert not pane.writing

    asyncio.run(main())


def test_a_failed_first_write_wrote_nothing(tmp_path: Path) -> None:
    async def main() -> None:
        sent: list[m.Message] = []
        rt, _ = _runtime(tmp_path, sent)
        task = asyncio.ensure_future(pane_io.prompt(rt, {"pane_id": 1, "text": "echo hi"}))
        on_worker_message(rt, _written(await _request(sent, 1), error="EIO"))
        with pytest.raises(PebrelError) as caught:
            await task
        assert (caught.value.details["written"], caught.value.details["submitted"]) == (
            False,
            False,
        )

    asyncio.run(main())
