"""A pane's program status: what its foreground program reports with OSC 7501 and OSC 9;4
(``workers/osc7501.py`` reads the sequences), kept per pane and sent to the router (#20).

- The protocol's query (``OSC 7501 ; ?``) is answered with the same bytes, in order with the
  rest of what the worker writes back to the program.
- Records count only while the process group that held the terminal's foreground when they
  were read still holds it: when another group takes the foreground (the program exited, or
  the shell ran another command), its records and progress are cleared. So a ``cat`` of a log
  holding reports shows them only while ``cat`` runs.
- At the pane's own new prompt (its integration's OSC 133 A), ``working`` and ``blocked``
  records end, as the protocol says; ``done``, ``error`` and ``idle`` stay until their group
  leaves the foreground. Records read while the shell itself held the foreground (a
  ``printf`` builtin, or the last output of a command that had just ended, such as a ``cat``
  of a log) all end before the command's done mark goes out: on the shell's own commands its
  exit code has the word.
- A change of any record's state or kind, or of the progress report's state, goes to the
  router at once (``ProgramRecords``); a change of progress, text or app only is sent at most
  every ``UPDATE_INTERVAL_S`` (a program may report progress thousands of times a second).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from pebrel import messages as m
from pebrel.workers.osc7501 import (
    OSC_CONEMU,
    OSC_PROGRAM_STATUS,
    QUERY_REPLY,
    Progress,
    Query,
    Record,
    StatusTable,
    parse,
    parse_progress,
)

logger = logging.getLogger(__name__)

STATUS_OSC_CODES = frozenset({OSC_PROGRAM_STATUS, OSC_CONEMU})
#: Updates that change no state or kind go out at most this often (2 per second).
UPDATE_INTERVAL_S = 0.5

Signature = tuple[tuple[tuple[str, str, str | None], ...], str | None]


class StatusRecords:
    def __init__(
        self,
        ids: dict[str, int],
        foreground_pgid: Callable[[], int | None],
        answer: Callable[[bytes], None],
        transmit: Callable[[m.Message], None],
        shell_pgid: int = 0,
    ) -> None:
        """``foreground_pgid``: the terminal's foreground process group now; ``answer``
        writes bytes back to the program; ``transmit`` sends a message to the router;
        ``shell_pgid``: the process group of the pane's shell."""
        self._ids = ids
        self._shell_pgid = shell_pgid
        self._foreground_pgid = foreground_pgid
        self._answer = answer
        self._transmit = transmit
        self.table = StatusTable()
        self.progress: Progress | None = None  # the last OSC 9;4 report (None: none or removed)
        #: The foreground group the records and progress were reported under.
        self.owner: int | None = None
        self._sent: Signature = ((), None)
        self._sent_at = float("-inf")
        self._timer: asyncio.TimerHandle | None = None

    def osc(self, code: int, payload: str) -> None:
        """An OSC 7501 or OSC 9 sequence read from the pane's output."""
        if code == OSC_PROGRAM_STATUS:
            report = parse(payload)
            if report is None:
                logger.debug("an OSC 7501 report was ignored (malformed or over a limit)")
                return
            if isinstance(report, Query):
                self._answer(QUERY_REPLY)
                return
            self._own()
            if self.table.apply(report):
                self._changed()
            return
        progress = parse_progress(payload)
        if progress is None:
            return
        self._own()
        held = progress if progress.state is not None else None
        if held != self.progress:
            self.progress = held
            self._changed()

    def foreground(self, pgid: int) -> None:
        """The terminal's foreground group now: the records of a group that left it end."""
        if self.owner is not None and pgid != self.owner:
            self.owner = None
            self._end()

    def command_ended(self) -> None:
        """The shell's integration is about to report a command's end (a done mark, or a
        prompt): every record read while the shell itself held the foreground ends first."""
        if self.owner is not None and self.owner == self._shell_pgid:
            self._end()

    def prompt(self) -> None:
        """The pane's shell drew a new prompt: ``working`` and ``blocked`` records end."""
        dropped = self.table.drop(lambda record: record.state in ("working", "blocked"))
        if self.progress is not None:
            self.progress, dropped = None, True
        if dropped:
            self._changed()

    def _end(self) -> None:
        """Every record and the progress end with their group (``left``), if any are held."""
        if self.table.records or self.progress is not None:
            self.table.records.clear()
            self.progress = None
            self._send(left=True)

    def _own(self) -> None:
        """Records are reported under the group in the foreground now (one that replaced the
        previous owner without being noticed yet: its records end first)."""
        pgid = self._foreground_pgid()
        if pgid is not None and pgid != self.owner:
            if self.owner is not None:
                self._end()
            self.owner = pgid

    def _signature(self) -> Signature:
        records = tuple(
            (record.id, record.state, record.kind) for record in self.table.records.values()
        )
        return (tuple(sorted(records)), self.progress.state if self.progress else None)

    def _changed(self) -> None:
        if self._signature() != self._sent:
            self._send(left=False)
            return
        if self._timer is not None:
            return
        delay = self._sent_at + UPDATE_INTERVAL_S - time.monotonic()
        if delay <= 0:
            self._send(left=False)
            return
        self._timer = asyncio.get_running_loop().call_later(delay, self._due)

    def _due(self) -> None:
        self._timer = None
        self._send(left=False)

    def _send(self, left: bool) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._sent = self._signature()
        self._sent_at = time.monotonic()
        records = sorted(self.table.records.values(), key=lambda record: record.id)
        self._transmit(
            m.ProgramRecords(
                **self._ids,
                records=[self._wire(record) for record in records],
                progress=(
                    {"state": self.progress.state, "progress": self.progress.progress}
                    if self.progress is not None
                    else None
                ),
                left=left,
            )
        )

    def _wire(self, record: Record) -> dict[str, Any]:
        return {
            "id": record.id,
            "state": record.state,
            "kind": record.kind,
            "progress": record.progress,
            "app": self.table.app_of(record),
            "title": record.title,
            "msg": record.msg,
        }
