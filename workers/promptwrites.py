"""A line the worker types itself the moment the shell's prompt is drawn (pane.run).

When pane.run finds the shell not at its prompt yet (starting, or between a command's done
mark and its next prompt), the router arms the line here instead of waiting to hear of the
prompt and sending the line back: one round trip less between the prompt and the command.
The worker types once it has taken in the output that drew the prompt (a chunk holding its
A or B mark, the last mark seen: a running command's C has not come after it), as the router
would have after hearing of the prompt: bash draws A and B in one write, and fish 4, whose own
marks have no B, is at its prompt after A. The prompt's marks go out first, then the write,
then its answer, so the router sees the prompt, then the write (where it sets the running
edge), then the command's own marks, in that order.
"""

from __future__ import annotations

from collections.abc import Callable

from pebrel import messages as m
from workers.writes import PtyWriter

#: The marks that say the shell is at its prompt (the router's task state counts both too).
PROMPT_MARKS = ("A", "B")


class PromptWrites:
    def __init__(self, writer: PtyWriter, send: Callable[[m.Message], None]) -> None:
        self.writer = writer
        self.send = send
        #: The shell's last mark was A or B: it is at its prompt, reading a command line.
        self.at_prompt = False
        #: The write waiting for the prompt.
        self.armed: m.WriteAtPrompt | None = None

    def marked(self, mark: str) -> None:
        """A shell mark went out to the router."""
        self.at_prompt = mark in PROMPT_MARKS

    def output_done(self) -> None:
        """A chunk of output has been taken in: type an armed line if it left a prompt."""
        if self.at_prompt and self.armed is not None:
            armed, self.armed = self.armed, None
            self.writer.queue(armed.request_id, armed.data)

    def arm(self, message: m.WriteAtPrompt, exited: bool) -> None:
        """Write now if the shell is at its prompt (read all pending output first), else once
        output has drawn its next prompt."""
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
