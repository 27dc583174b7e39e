"""Writes to a pane's PTY: queued in order, never interleaved, each with a deadline.

Every input (typed text, keys, a paste, replies to the program's terminal queries) goes
through one queue. A write the kernel only partly takes is resumed when the PTY is writable
again; one the program does not read within WRITE_DEADLINE_S fails with that reason, and
nothing queued after it is lost. Each finished write is reported to the router (InputWritten
or PasteWritten) with how many bytes went in.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from pebrel import messages as m
from pebrel.workers.pty import Terminal

WRITE_DEADLINE_S = 10.0


@dataclass(slots=True)
class PendingWrite:
    request_id: int  # < 0: the worker's own write (a reply to the program), not reported
    data: bytes
    offset: int
    deadline: float
    paste: bool = False  # answer with PasteWritten instead of InputWritten


class PtyWriter:
    def __init__(
        self, pty: Terminal, send: Callable[[m.Message], None], exited: Callable[[], bool]
    ) -> None:
        self.pty = pty
        self.send = send
        self.exited = exited
        self.writes: deque[PendingWrite] = deque()

    def queue(self, request_id: int, data: bytes, paste: bool = False) -> None:
        deadline = time.monotonic() + WRITE_DEADLINE_S
        self.writes.append(PendingWrite(request_id, data, 0, deadline, paste))
        self.flush()

    def flush(self) -> None:
        loop = asyncio.get_running_loop()
        while self.writes:
            item = self.writes[0]
            if self.exited():
                self._finish(item, m.PANE_EXITED)
                continue
            try:
                n = self.pty.write(item.data[item.offset : item.offset + 4096])
            except OSError as exc:
                self._finish(item, f"write failed: {exc.strerror}")
                continue
            item.offset += n
            if item.offset >= len(item.data):
                self._finish(item, None)
                continue
            if n == 0:
                if time.monotonic() > item.deadline:
                    self._finish(item, "the program in the pane is not reading input")
                    continue
                loop.add_writer(self.pty.fd, self._on_writable)
                loop.call_later(0.5, self.flush)
                return
        with contextlib.suppress(Exception):
            loop.remove_writer(self.pty.fd)

    def _on_writable(self) -> None:
        asyncio.get_running_loop().remove_writer(self.pty.fd)
        self.flush()

    def _finish(self, item: PendingWrite, error: str | None) -> None:
        self.writes.popleft()
        if item.request_id < 0:
            return
        if item.paste:
            self.send(
                m.PasteWritten(
                    request_id=item.request_id, written=item.offset, bracketed=True, error=error
                )
            )
        else:
            self.send(m.InputWritten(request_id=item.request_id, written=item.offset, error=error))
