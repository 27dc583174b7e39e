"""Published screens: how a read of a pane is answered without waiting for its worker (R4.4).

A pane's worker publishes its screen to the router: the last ``PUBLISH_LINES`` logical lines
within ``PUBLISH_MAX_BYTES`` (``ScreenPublished``), whether or not anyone reads. It publishes
at once when the screen changes after a quiet spell, when a burst of output ends (but no sooner
than ``QUIET_GAP_S`` after the last one), at most every ``PUBLISH_INTERVAL_S`` while output goes
on (one timer per pending publication, never one per chunk), and before any message that can
end a wait or answer a read (``needs_screen``: a command's end mark, an exit, a reply to a
read, ...): at once before a read's reply, a resize's end or an exit, else announced before the
message (``ScreenPending``: the router answers no read from its copy until the publication,
which follows at the loop's next turn, arrives): nothing the router learns that way about the
output is newer than what it answers reads with. A pane that prints nothing publishes nothing.
Each publication counts the input writes (their answers sent) that output came in after
(``inputs``): the router answers a pane's reads from no publication that has not caught up
with the inputs it was told were written, and asks the worker instead, so a read right after
typing shows the echo as a read of the worker would (the worker takes in all pending output
before it answers a read). The echo is not published sooner for that: a command typed and
waited for costs no extra publication.

The router keeps the newest publication per pane and derives every ``pane.read`` of up to
``PUBLISH_LINES`` lines from it (the last N of the published lines: the worker's read of N
lines would answer the same; ``router/handlers/kept_reads.py``). A read of more lines than it
holds, and a read while a resize is on its way, goes to the worker. Either answer is kept
until the next publication. The frontend adapter keeps the answers the router marks reusable
and gives them again: when a pane whose reads it holds (and gave in the last second, as it
reports with ``AnswerUsed``) publishes, the router sends it the new answers
(``AnswersRenewed``), so a client polling busy panes is answered by the adapter alone; reads
of a pane nobody polls any more, and every answer at a state change, are dropped
(``AnswersStale``; ``router/answers.py``, ``router/answer_sync.py``). One state diagram for a
pane's screen::

      worker                      router                          adapter
      ------                      ------                          -------
      clean --output--> dirty     publication P(n): reads of      answers derived from P(n),
        ^                 |       up to 120 lines are slices      given for the same request
        |   first change after    of it; longer ones ask the      (AnswerUsed now and then)
        |   quiet, burst end,     worker; kept until P(n+1)
        |   interval, or any                 |
        |   other message out                |
        +---- publish P(n+1) -----> P(n+1) replaces P(n) --+--> AnswersRenewed (reads given
                                                           |    in the last second)
                                                           +--> AnswersStale (else)
                                  resize sent: P(n) answers
                                  nothing until a publication     AnswersStale(pane)
                                  of the new size arrives
                                  (reads go to the worker)
                                  state change (revision) ------> AnswersStale() (all)
                                  input written: P(n) answers
                                  nothing until a publication     AnswersStale(pane)
                                  counts the input

What a read can be behind: while output flows, the answered screen is at most
``PUBLISH_INTERVAL_S`` plus the time the worker waits for a core older than the worker's own
screen, which itself trails the program by the bytes the kernel still holds in the PTY and
the one worker read (at most 64 KiB) being applied. Once output stops, the answered screen is
exact, and a read after a completed ``pane.wait`` or
``pane.run`` always shows the command's end. Each answer says when its screen was captured
(``screen_captured_at``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from pebrel import messages as m
from pebrel.model import PUBLISH_LINES, PUBLISH_MAX_BYTES
from pebrel.workers.screen import ReadResult

#: While the output goes on, the screen is published at most this often. Every publication
#: costs the router a little (a message, a decode, renewing the reads the adapter keeps), and
#: the router gets no more than its fair share of the CPUs when every core is busy: a router
#: near that share is held back by the scheduler for hundreds of milliseconds at a time. 16
#: flooding panes at this interval keep it well below (bench/RESULTS.md, "many readers").
PUBLISH_INTERVAL_S = 0.1
#: Within the interval, the screen is published once no output came for this long (a burst
#: ended: the end of a `cat`, a command's last line) ...
QUIET_S = 0.0005
#: ... but no sooner than this after the last publication (a line printed every few ms is not
#: one burst ending after another).
QUIET_GAP_S = 0.02


def needs_screen_now(message: m.Message) -> bool:
    """Whether the publication must go before ``message`` itself, not just be announced: a
    reply to a read (its ``reports`` count it), a resize's end, an exit (the worker may be gone
    before a deferred publication)."""
    return isinstance(message, (m.ScreenRead, m.PtyResized, m.PaneExited))


def needs_screen(message: m.Message) -> bool:
    """Whether the router must have the screen as it is now before it handles ``message``:
    what can end a wait on what the screen shows (a command's end: the D mark, or an A mark
    where a shell sends no D; an exit; an agent's state from its own report or a screen rule),
    answer a read (ScreenRead) or end a resize. Other messages (a C or B mark, the foreground
    group, an input write's answer, a title) leave a pending publication to its timer, off the
    path of the request that caused them."""
    if isinstance(message, m.ShellMarked):
        return message.mark in ("A", "D")
    return isinstance(message, _NEEDS_SCREEN)


_NEEDS_SCREEN = (
    m.PaneExited,
    m.ScreenRead,
    m.PtyResized,
    m.ProgramStatus,
    m.ProgramRecords,
    m.ScreenMatched,
)


class ScreenPublisher:
    def __init__(
        self,
        ids: dict[str, int],
        read: Callable[[int, int], ReadResult],
        size: Callable[[], tuple[int, int]],
        transmit: Callable[[m.Message], None],
    ) -> None:
        self._ids = ids
        self._read = read
        self._size = size
        self._transmit = transmit
        self.published = 0  # publications sent; a reply carries it (ScreenRead.reports)
        self.pending = False  # announced (ScreenPending), to be published at once
        self.dirty = True  # the screen changed since the last publication (none yet)
        self._at = float("-inf")
        self._last_output = float("-inf")
        self._timer: asyncio.TimerHandle | None = None
        self.inputs_written = 0  # input writes reported done (InputWritten, PasteWritten)
        self.inputs_shown = 0  # of those, the ones output came in after (``inputs``)

    def changing(self) -> None:
        """The screen is about to change (output, a resize)."""
        self.dirty = True

    def input_written(self) -> None:
        """An input write was reported done: the router answers reads of the pane from no
        publication until one shows output that came after it."""
        self.inputs_written += 1

    def changed(self) -> None:
        """A batch of output was applied: publish now or (if one went out less than the
        interval ago) once the output pauses or the interval is up. Output after an input
        (its echo, most often) counts the input (``inputs``); it is published by the same
        rules: until then the router asks the worker for the pane's reads."""
        if not self.dirty:
            return
        now = time.monotonic()
        self.inputs_shown = self.inputs_written
        if now >= self._at + PUBLISH_INTERVAL_S:
            self.publish()
            return
        self._last_output = now
        if self._timer is None:  # one timer per pending publication, not one per chunk
            self._arm(now)

    def _when(self) -> float:
        """When the pending publication is due (as things stand)."""
        quiet = max(self._last_output + QUIET_S, self._at + QUIET_GAP_S)
        return min(self._at + PUBLISH_INTERVAL_S, quiet)

    def _arm(self, now: float) -> None:
        delay = max(0.0, self._when() - now)
        self._timer = asyncio.get_running_loop().call_later(delay, self._due)

    def _due(self) -> None:
        self._timer = None
        now = time.monotonic()
        if now < self._when():
            self._arm(now)  # more output came: wait for it to pause, or for the interval
            return
        self.publish()

    def flush(self) -> None:
        """Publish before another message goes out (it does not count against the interval:
        the output that follows is the end of a command more often than a flood)."""
        at = self._at
        self.publish()
        self._at = at

    def announce(self) -> None:
        """Tell the router a publication is coming (before a message that can end a wait) and
        publish at the loop's next turn, after that message: the router answers no read from
        its copy meanwhile, and the message does not wait for the screen to be read."""
        if not self.dirty or self.pending:
            return
        self.pending = True
        self._transmit(m.ScreenPending(**self._ids, reports=self.published + 1))
        asyncio.get_running_loop().call_soon(self._announced)

    def _announced(self) -> None:
        if self.pending:
            self.flush()

    def publish(self) -> None:
        """Send the router the screen as it is now, if it changed since the last time."""
        self._cancel()
        if not self.dirty:
            return
        self.dirty = False
        self.pending = False
        self._at = time.monotonic()
        result = self._read(PUBLISH_LINES, PUBLISH_MAX_BYTES)
        cols, rows = self._size()
        self.published += 1
        self._transmit(
            m.ScreenPublished(
                **self._ids,
                lines=result.lines,
                history_available=result.history_available,
                truncated=result.truncated,
                cols=cols,
                rows=rows,
                captured_at=time.time(),
                reports=self.published,
                inputs=self.inputs_shown,
            )
        )

    def close(self) -> None:
        self._cancel()

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
