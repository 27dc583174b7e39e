"""Router-side handles of pane workers: request/reply with deadlines, kill, failure."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field

from pebrel import messages as m
from pebrel.errors import ErrorCode, PebrelError

logger = logging.getLogger(__name__)

WORKER_REQUEST_TIMEOUT_S = 10.0
_request_ids = itertools.count(1)


@dataclass(slots=True)
class WorkerProcess:
    """A pane worker forked by the fork server (not the router's child: never waited here)."""

    pid: int
    returncode: int | None = None

    def kill(self) -> None:
        if self.pid <= 0:
            return  # not forked yet (0 would signal our own process group)
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)


@dataclass(slots=True)
class WorkerLink:
    window_id: int
    pane_id: int
    proc: WorkerProcess
    started: asyncio.Future[m.Message]
    pending: dict[int, asyncio.Future[m.Message]] = field(default_factory=dict)
    #: Run as a pending request's reply is handled, before any later message of the worker.
    on_reply: dict[int, Callable[[m.Message], None]] = field(default_factory=dict)
    dead: bool = False
    gone: asyncio.Event = field(default_factory=asyncio.Event)
    #: The worker's ZeroMQ identity, from the routing frame of its PaneStarted (nothing is
    #: sent to a worker before that: requests wait for ``started``).
    identity: bytes = b""
    #: The terminal size the worker was started with or last told (router/sizing.py).
    size: tuple[int, int] | None = None


async def request(
    link: WorkerLink,
    send: Callable[[bytes, m.Message], bool],
    build: Callable[[int], m.Message],
    timeout_s: float = WORKER_REQUEST_TIMEOUT_S,
    on_reply: Callable[[m.Message], None] | None = None,
    on_deadline: Callable[[int], None] | None = None,
) -> m.Message:
    """Send one command to a worker and await its reply, with a deadline.

    The deadline fails the reply's future itself (no `wait_for`, whose extra future costs
    a loop turn on every reply). ``on_reply``: called with the reply as it is handled (the
    awaiting coroutine resumes only after the rest of that socket drain). ``on_deadline``:
    called with the request id at the deadline instead of failing, for a command the worker
    answers once told to give up; the reply then has WORKER_REQUEST_TIMEOUT_S more. It is
    also called if the awaiting task is cancelled.
    """
    if link.dead:
        raise PebrelError(ErrorCode.INVALID_STATE, "the pane's worker is gone", _ids(link))
    loop = asyncio.get_running_loop()
    if not link.started.done():
        began = loop.time()
        await connected(link, began + timeout_s)
        timeout_s = max(0.0, timeout_s - (loop.time() - began))
    request_id = next(_request_ids)
    fut: asyncio.Future[m.Message] = loop.create_future()
    link.pending[request_id] = fut
    if on_reply is not None:
        link.on_reply[request_id] = on_reply

    deadlines: list[asyncio.TimerHandle] = []

    def overdue(give_up: Callable[[int], None]) -> None:
        give_up(request_id)
        deadlines.append(loop.call_later(WORKER_REQUEST_TIMEOUT_S, _expire, link, fut))

    if on_deadline is None:
        deadlines.append(loop.call_later(timeout_s, _expire, link, fut))
    else:
        deadlines.append(loop.call_later(timeout_s, overdue, on_deadline))
    try:
        if not send(link.identity, build(request_id)):
            raise PebrelError(
                ErrorCode.INVALID_STATE, "the pane's worker is unreachable", _ids(link)
            )
        return await fut
    except asyncio.CancelledError:
        if on_deadline is not None:  # nobody waits for it any more: the worker gives it up
            on_deadline(request_id)
        raise
    finally:
        for deadline in deadlines:
            deadline.cancel()
        link.pending.pop(request_id, None)
        link.on_reply.pop(request_id, None)


async def connected(link: WorkerLink, deadline: float) -> None:
    """Wait until a just-started worker has connected (pane.split answers before that);
    ``deadline`` in loop time; `runtime_timeout` after it."""
    loop = asyncio.get_running_loop()
    try:
        await asyncio.wait_for(asyncio.shield(link.started), max(0.0, deadline - loop.time()))
    except TimeoutError as exc:
        raise PebrelError(
            ErrorCode.RUNTIME_TIMEOUT, "the pane's worker did not connect in time", _ids(link)
        ) from exc
    if link.dead or isinstance(link.started.result(), m.PaneStartFailed):
        raise PebrelError(ErrorCode.INVALID_STATE, "the pane's worker is gone", _ids(link))


def _expire(link: WorkerLink, fut: asyncio.Future[m.Message]) -> None:
    if not fut.done():
        fut.set_exception(
            PebrelError(
                ErrorCode.RUNTIME_TIMEOUT, "the pane's worker did not answer in time", _ids(link)
            )
        )


def resolve(link: WorkerLink, request_id: int, message: m.Message) -> None:
    fut = link.pending.get(request_id)
    if fut is not None and not fut.done():
        hook = link.on_reply.pop(request_id, None)
        if hook is not None:
            hook(message)
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
    link.proc.kill()
