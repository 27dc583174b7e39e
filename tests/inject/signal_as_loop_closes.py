"""Injection: a signal arrives while an event loop closes, in every Pebrel process.

Right after a loop closes its self-pipe (the signal wakeup fd) and before it removes its
signal handlers, the process sends itself each signal the loop handles: the moment a SIGCHLD
or a second SIGTERM can land at a stop. A wakeup fd still set then is written to closed
("Exception ignored ... Bad file descriptor" in runtime.log). The router, the frontend
adapter and, through the fork server, every pane worker get it.
"""

from __future__ import annotations

import os
import signal
from asyncio import selector_events
from typing import Any


def install(process: str) -> None:
    loop_class: Any = selector_events.BaseSelectorEventLoop
    original = loop_class._close_self_pipe

    def close_self_pipe(self: Any) -> None:
        original(self)
        for signum in list(getattr(self, "_signal_handlers", {})):
            if signum != signal.SIGINT:  # its default handler raises KeyboardInterrupt
                os.kill(os.getpid(), signum)

    loop_class._close_self_pipe = close_self_pipe
