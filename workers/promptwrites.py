"""A line the worker types itself the moment the shell's prompt is drawn (pane.run).

When pane.run finds the shell not at its prompt yet (starting, or between a command's done
mark and its next prompt), the router arms the line here instead of waiting to hear of the
prompt and sending the line back: one round trip less between the prompt and the command.
The worker types once it has taken in the output that ends the prompt: a chunk after which
the last mark seen is B (no command's C after it). bash and zsh draw B at the end of the
prompt their line editor prints (zsh prints A earlier, from precmd, while the terminal still
echoes input: a line typed then shows twice). fish sends B from a wrapped ``fish_prompt``,
which the user's own code can redefine later: for a shell not known to send B (fish) an A
will do until a B has been seen from it. The
prompt's marks go out first, then the write, then its answer, so the router sees the prompt,
then the write (where it sets the running edge), then the command's own marks, in that order.
"""

from __future__ import annotations

from collections.abc import Callable

from pebrel import messages as m
from pebrel.workers.writes import PtyWriter

#: The marks that say the shell is at its prompt (the router's task state counts both too).
PROMPT_MARKS = ("A", "B")


class PromptWrites:
    def __init__(
        self, writer: PtyWriter, send: Callable[[m.Message], None], sends_b: bool = True
    ) -> None:
        """``sends_b``: the shell is known to end its prompts with B
        (``ShellLaunch.ends_prompts_with_b``)."""
        self.writer = writer
        self.send = send
        self.sends_b = sends_b
        #: The last mark says the shell reads a command line (B; or A from a shell not
        #: known to send B).
        self.at_prompt = False
        #: The write waiting for the prompt.
        self.armed: m.WriteAtPrompt | None = None

    def marked(self, mark: str) -> None:
        """A shell mark went out to the router."""
        if mark == "B":
            self.sends_b = True
        self.at_prompt = mark == "B" or (mark == "A" and not self.sends_b)

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
