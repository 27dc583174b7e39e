"""A line the worker types itself the moment the shell's prompt is drawn (pane.run).

When pane.run finds the shell not at its prompt yet (starting, or between a command's done
mark and its next prompt), the router arms the line here instead of waiting to hear of the
prompt and sending the line back: one round trip less between the prompt and the command.
The worker sends the prompt's B mark first, then writes, then answers the write, so the
router sees the prompt, then the write (where it sets the running edge), then the command's
own marks, in that order.
"""

from __future__ import annotations

from collections.abc import Callable

from pebrel import messages as m
from workers.writes import PtyWriter


class PromptWrites:
    def __init__(self, writer: PtyWriter, send: Callable[[m.Message], None]) -> None:
        self.writer = writer
        self.send = send
        #: The shell's last mark was B: it is at its prompt, reading a command line.
        self.at_prompt = False
        #: The write waiting for the prompt.
        self.armed: m.WriteAtPrompt | None = None

    def marked(self, mark: str) -> None:
        """A shell mark went out to the router: type an armed line at a prompt."""
        self.at_prompt = mark == "B"
        if self.at_prompt and self.armed is not None:
            armed, self.armed = self.armed, None
            self.writer.queue(armed.request_id, armed.data)

    def arm(self, message: m.WriteAtPrompt, exited: bool) -> None:
        """Write now if the shell is at its prompt (read all pending output first), else at
        its next B mark."""
        if exited:
            self._unwritten(message.request_id, m.PANE_EXITED)
        elif self.at_prompt:
            self.writer.queue(message.request_id, message.data)
        else:
            self.armed = message

    def cancel(self, request_id: int) -> None:
        """The router gave up waiting: an armed line is dropped (and said so); one already
        written has been answered."""
        if self.armed is not None and self.armed.request_id == request_id:
            self.armed = None
            self._unwritten(request_id, m.NOT_AT_PROMPT)

    def pane_exited(self) -> None:
        """The shell is gone: its prompt will never come."""
        if self.armed is not None:
            armed, self.armed = self.armed, None
            self._unwritten(armed.request_id, m.PANE_EXITED)

    def _unwritten(self, request_id: int, error: str) -> None:
        self.send(m.InputWritten(request_id=request_id, written=0, error=error))
