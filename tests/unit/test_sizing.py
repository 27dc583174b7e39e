"""Pane sizes and what each worker is told (router/sizing.py; R3.4, issue 6 item 4): a split
tells the split pane's worker its new size before the new shell starts, so other layout
changes handled meanwhile (a zoom by another client), and a split that fails, must still leave
every worker at its pane's size. In process, with a stand-in for the new pane's start."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from pebrel import messages as m
from pebrel.errors import ErrorCode, PebrelError
from pebrel.router import layout, sizing
from pebrel.router.handlers import layout_ops
from pebrel.router.handlers import pane as pane_handlers
from pebrel.router.links import WorkerLink, WorkerProcess
from pebrel.router.runtime import Runtime
from pebrel.router.state import Pane, Window, new_tab
from pebrel.settings import load_settings
from tests.conftest import wait_for_async

pytestmark = pytest.mark.timeout(30)

Sent = list[tuple[bytes, m.Message]]


def _runtime(tmp_path: Path, sent: Sent, zoomed: bool) -> Runtime:
    """Window 1: panes 1 and 2 side by side in a 80x24 tab (pane 1 zoomed if asked)."""

    def send(identity: bytes, msg: m.Message) -> bool:
        sent.append((identity, msg))
        return True

    rt = Runtime(tmp_path, load_settings(tmp_path), "ipc://unused", send, {}, "/")
    window = Window(1)
    tab = new_tab(1, 80, 24)
    tab.root = layout.split_leaf(tab.root, 1, 2, "right")
    window.tabs.append(tab)
    window.next_pane_id = 3
    rt.state.windows[1] = window
    rt.state.focused_window = 1
    if zoomed:
        tab.zoomed_pane = 1
    loop = asyncio.get_running_loop()
    for pane_id in (1, 2):
        pane = Pane(1, pane_id, "/bin/sh", "sh", "/", 80, 24)
        rt.state.panes[pane.key] = pane
    rt.state.apply_sizes(1, tab)
    for pane in list(rt.state.panes.values()):
        started: asyncio.Future[m.Message] = loop.create_future()
        started.set_result(m.AnswersStale())
        identity = f"w{pane.pane_id}".encode()
        size = (pane.cols, pane.rows)
        rt.links[pane.key] = WorkerLink(
            1, pane.pane_id, WorkerProcess(0), started, identity=identity, size=size
        )
    rt.state.commit()
    return rt


def _told(sent: Sent, identity: bytes, initial: tuple[int, int]) -> tuple[int, int]:
    """The size a worker was last told (or started with)."""
    sizes = [
        (msg.cols, msg.rows) for i, msg in sent if i == identity and isinstance(msg, m.ResizePty)
    ]
    return sizes[-1] if sizes else initial


def _held_spawn(release: asyncio.Event, fail: bool = False) -> Any:
    async def spawn(
        rt: Runtime, window: Window, shell: Any, cwd: str, cols: int, rows: int
    ) -> Pane:
        await release.wait()  # the new shell starting
        if fail:
            raise PebrelError(ErrorCode.ACTION_FAILED, "could not start the shell")
        pane = Pane(1, window.allocate_pane_id(), "/bin/sh", "sh", "/", cols, rows)
        pane.started = True
        rt.state.panes[pane.key] = pane
        return pane

    return spawn


@pytest.mark.parametrize("zoomed_before", [False, True])
def test_a_zoom_while_the_new_shell_starts_leaves_every_worker_at_its_pane_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, zoomed_before: bool
) -> None:
    async def main() -> None:
        sent: Sent = []
        rt = _runtime(tmp_path, sent, zoomed_before)
        pane = rt.state.panes[(1, 1)]
        initial = (pane.cols, pane.rows)
        release = asyncio.Event()
        monkeypatch.setattr(pane_handlers, "spawn_pane", _held_spawn(release))
        split = asyncio.ensure_future(pane_handlers.split(rt, {"pane_id": 1, "direction": "down"}))
        await wait_for_async(  # presized before the shell starts
            lambda: _told(sent, b"w1", initial) != initial, 5, "the split pane presized"
        )
        assert (pane.cols, pane.rows) == initial  # the router's size changes with the split
        await layout_ops.zoom(rt, {"pane_id": 1, "zoomed": not zoomed_before})  # another client
        release.set()
        await split
        assert _told(sent, b"w1", initial) == (pane.cols, pane.rows)
        assert _told(sent, b"w2", (40, 24)) == (rt.state.panes[(1, 2)].cols, 24)

    asyncio.run(main())


def test_a_split_that_fails_puts_the_split_pane_back_at_its_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def main() -> None:
        sent: Sent = []
        rt = _runtime(tmp_path, sent, zoomed=False)
        pane = rt.state.panes[(1, 1)]
        initial = (pane.cols, pane.rows)
        release = asyncio.Event()
        monkeypatch.setattr(pane_handlers, "spawn_pane", _held_spawn(release, fail=True))
        split = asyncio.ensure_future(pane_handlers.split(rt, {"pane_id": 1, "direction": "down"}))
        await wait_for_async(
            lambda: _told(sent, b"w1", initial) != initial, 5, "the split pane presized"
        )
        assert _told(sent, b"w1", initial) == (initial[0], initial[1] // 2)
        release.set()
        with pytest.raises(PebrelError):
            await split
        assert _told(sent, b"w1", initial) == initial == (pane.cols, pane.rows)

    asyncio.run(main())


def test_a_worker_is_told_a_size_once(tmp_path: Path) -> None:
    async def main() -> None:
        sent: Sent = []
        rt = _runtime(tmp_path, sent, zoomed=False)
        window = rt.state.windows[1]
        tab = window.tabs[0]
        tab.cols, tab.rows = 100, 30
        sizing.resize_tab(rt, window, tab)
        sizing.resize_tab(rt, window, tab)
        resizes = [(i, (msg.cols, msg.rows)) for i, msg in sent if isinstance(msg, m.ResizePty)]
        assert resizes == [(b"w1", (50, 30)), (b"w2", (50, 30))]

    asyncio.run(main())
