"""Router-side handles of pane workers: request/reply with deadlines, kill, failure.

Every request the router has out to any worker is in one map, ``pending``, by request id: the
ids come from one counter, so a reply is matched by its id alone, whichever link it came on.
"""

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
    dead: bool = False
    gone: asyncio.Event = field(default_factory=asyncio.Event)
    #: The worker's ZeroMQ identity, from the routing frame of its PaneStarted (nothing is
    #: sent to a worker before that: requests wait for ``started``).
    identity: bytes = b""
    #: The terminal size the worker was started with or last told (router/sizing.py).
    size: tuple[int, int] | None = None


@dataclass(slots=True)
class Waiting:
    """A request a worker has not answered yet."""

    link: WorkerLink
    reply: asyncio.Future[m.Reply]
    #: Run as the reply is handled, before any later message of the worker.
    on_reply: Callable[[m.Reply], None] | None


#: The router's requests to its workers not answered yet, by request id (one map for all).
pending: dict[int, Waiting] = {}


async def request(
    link: WorkerLink,
    send: Callable[[bytes, m.Message], bool],
    build: Callable[[int], m.Message],
    timeout_s: float = WORKER_REQUEST_TIMEOUT_S,
    on_reply: Callable[[m.Reply], None] | None = None,
    on_deadline: Callable[[int], None] | None = None,
) -> m.Reply:
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
    fut: asyncio.Future[m.Reply] = loop.create_future()
    pending[request_id] = Waiting(link, fut, on_reply)

    deadlines: list[asyncio.TimerHandle] = []

    def overdue(give_up: Callable[[int], None]) -> None:
        give_up(request_id)
        deadlines.append(loop.call_later(WORKER_REQUEST_TIMEOUT_S, _expire, link, fut))

    if on_deadline is None:
        deadlines.append(loop.call_later(timeout_s, _expire, link, fut))
    else:
        deadlines.append(loop.call_later(timeout_s, overdue, on_deadline))
    try:
        # A send fails when the worker's socket is gone: it is dying, and its exit (which the
        # fork server reports) fails the request as any other pending one (`fail_pending`),
        # so that every request to a dying worker ends the same way; else the deadline does.
        send(link.identity, build(request_id))
        return await fut
    except asyncio.CancelledError:
        if on_deadline is not None:  # nobody waits for it any more: the worker gives it up
            on_deadline(request_id)
        raise
    finally:
        for deadline in deadlines:
            deadline.cancel()
        pending.pop(request_id, None)


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


def _expire(link: WorkerLink, fut: asyncio.Future[m.Reply]) -> None:
    if not fut.done():
        fut.set_exception(
            PebrelError(
                ErrorCode.RUNTIME_TIMEOUT, "the pane's worker did not answer in time", _ids(link)
            )
        )


def link_of(request_id: int) -> WorkerLink | None:
    """The link a request still waiting for its reply went out on."""
    waiting = pending.get(request_id)
    return waiting.link if waiting is not None else None


def resolve(reply: m.Reply) -> None:
    """Hand a worker's reply to the request it answers (none waits any more: dropped)."""
    waiting = pending.pop(reply.request_id, None)
    if waiting is None or waiting.reply.done():
        return
    if waiting.on_reply is not None:
        waiting.on_reply(reply)
    waiting.reply.set_result(reply)


def fail_pending(link: WorkerLink) -> None:
    """The link's worker is gone: its unanswered requests fail (a scan, but a rare one)."""
    for waiting in pending.values():
        if waiting.link is link and not waiting.reply.done():
            waiting.reply.set_exception(
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
