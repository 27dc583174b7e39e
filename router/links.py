"""Router-side handles of pane workers: spawn, request/reply with deadlines, death watch."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pebrel import messages as m
from pebrel.errors import ErrorCode, PebrelError

logger = logging.getLogger(__name__)

WORKER_CONFIG_ENV = "PEBREL_WORKER_CONFIG"
WORKER_REQUEST_TIMEOUT_S = 10.0
_request_ids = itertools.count(1)


def worker_identity(window_id: int, pane_id: int) -> bytes:
    return f"w{window_id}.{pane_id}".encode()


@dataclass(slots=True)
class WorkerLink:
    window_id: int
    pane_id: int
    proc: subprocess.Popen[bytes]
    started: asyncio.Future[m.Message]
    pending: dict[int, asyncio.Future[m.Message]] = field(default_factory=dict)
    pidfd: int | None = None
    dead: bool = False
    poller: asyncio.Task[None] | None = None
    gone: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def identity(self) -> bytes:
        return worker_identity(self.window_id, self.pane_id)


def spawn_worker(config: dict[str, Any], log_file: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env[WORKER_CONFIG_ENV] = json.dumps(config)
    with open(log_file, "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "workers"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            close_fds=True,
            start_new_session=True,
        )


def watch_exit(link: WorkerLink, on_exit: Callable[[WorkerLink], None]) -> None:
    """Call `on_exit` once the worker process ends (pidfd: no polling, no global reaper)."""
    loop = asyncio.get_running_loop()
    try:
        fd = os.pidfd_open(link.proc.pid)
    except OSError:
        logger.warning("pidfd_open failed; worker exit found only by polling")

        async def poll() -> None:
            while link.proc.poll() is None:
                await asyncio.sleep(0.2)
            on_exit(link)

        link.poller = loop.create_task(poll())
        return
    link.pidfd = fd

    def ready() -> None:
        loop.remove_reader(fd)
        os.close(fd)
        link.pidfd = None
        link.proc.wait()
        on_exit(link)

    loop.add_reader(fd, ready)


async def request(
    link: WorkerLink,
    send: Callable[[bytes, m.Message], bool],
    build: Callable[[int], m.Message],
    timeout_s: float = WORKER_REQUEST_TIMEOUT_S,
) -> m.Message:
    """Send one command to a worker and await its reply, with a deadline."""
    if link.dead:
        raise PebrelError(ErrorCode.INVALID_STATE, "the pane's worker is gone", _ids(link))
    request_id = next(_request_ids)
    fut: asyncio.Future[m.Message] = asyncio.get_running_loop().create_future()
    link.pending[request_id] = fut
    try:
        if not send(link.identity, build(request_id)):
            raise PebrelError(
                ErrorCode.INVALID_STATE, "the pane's worker is unreachable", _ids(link)
            )
        return await asyncio.wait_for(fut, timeout_s)
    except TimeoutError as exc:
        raise PebrelError(
            ErrorCode.RUNTIME_TIMEOUT, "the pane's worker did not answer in time", _ids(link)
        ) from exc
    finally:
        link.pending.pop(request_id, None)


def resolve(link: WorkerLink, request_id: int, message: m.Message) -> None:
    fut = link.pending.get(request_id)
    if fut is not None and not fut.done():
        fut.set_result(message)


def fail_pending(link: WorkerLink) -> None:
    for fut in link.pending.values():
        if not fut.done():
            fut.set_exception(
                PebrelError(ErrorCode.INVALID_STATE, "the pane's worker exited", _ids(link))
            )
    if not link.started.done():
        link.started.set_exception(
            PebrelError(
                ErrorCode.ACTION_FAILED, "the pane's worker exited during start", _ids(link)
            )
        )


def _ids(link: WorkerLink) -> dict[str, int]:
    return {"window_id": link.window_id, "pane_id": link.pane_id}


def kill(link: WorkerLink) -> None:
    with contextlib.suppress(OSError):
        link.proc.kill()
