"""Start a request's coroutine eagerly: its first step runs now, in mailbox order.

Most requests finish without waiting (every read of state does): a plain Task per request
would cost each a loop turn. Python 3.12+ do this with the standard eager task factory, the
first step inside the Task (so `asyncio.timeout` and `wait_for` work from the first line).
3.11 has no eager tasks: the first step runs here and `_resume` carries the rest into a Task
(3.11's `wait_for` needs no Task). 3.12's `create_task` refuses `_resume`, a generator-based
coroutine, which is why it is used on 3.11 only.
"""

from __future__ import annotations

import asyncio
import sys
import types
from collections.abc import Coroutine, Generator
from typing import Any


def start(coro: Coroutine[Any, Any, None]) -> asyncio.Task[None] | None:
    """Run `coro`'s first step now; the Task that carries on, or None when it is done."""
    loop = asyncio.get_running_loop()
    if sys.version_info >= (3, 12):
        task = asyncio.eager_task_factory(loop, coro)
        return None if task.done() else task
    try:
        waiting_on = coro.send(None)
    except StopIteration:
        return None
    return loop.create_task(_resume(coro, waiting_on))


@types.coroutine
def _resume(coro: Coroutine[Any, Any, None], waiting_on: Any) -> Generator[Any, Any, None]:
    """Continue a started coroutine inside a Task: hand the Task what it waits on first."""
    while True:
        try:
            value = yield waiting_on
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # a failed future, or the Task's cancellation
            try:
                waiting_on = coro.throw(exc)
            except StopIteration:
                return
        else:
            try:
                waiting_on = coro.send(value)
            except StopIteration:
                return
