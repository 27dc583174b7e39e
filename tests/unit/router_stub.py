"""A router runtime in process with one pane and a recording stand-in for its worker's socket,
for unit tests of the orders in which worker messages are handled."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from pebrel import messages as m
from pebrel.router.links import WorkerLink, WorkerProcess
from pebrel.router.runtime import Runtime
from pebrel.router.state import Pane, Window, new_tab
from pebrel.settings import load_settings


def one_pane_runtime(
    tmp_path: Path, record: Callable[[m.Message], None], integrated: bool = False
) -> tuple[Runtime, Pane]:
    """Window 1 with pane 1 (80x24, its worker connected as b"w"); every message the router
    sends goes to ``record``. Call on a running loop."""

    def send(identity: bytes, message: m.Message) -> bool:
        record(message)
        return True

    rt = Runtime(tmp_path, load_settings(tmp_path), "ipc://unused", send, {}, "/")
    window = Window(1)
    window.tabs.append(new_tab(1, 80, 24))
    window.next_pane_id = 2
    rt.state.windows[1] = window
    rt.state.focused_window = 1
    pane = Pane(1, 1, "/bin/bash", "bash", "/", 80, 24)
    pane.integrated = pane.tracker.integrated = integrated
    rt.state.panes[pane.key] = pane
    rt.state.commit()
    started: asyncio.Future[m.Message] = asyncio.get_running_loop().create_future()
    started.set_result(m.AnswersStale())
    rt.links[pane.key] = WorkerLink(1, 1, WorkerProcess(0), started, identity=b"w")
    return rt, pane
