"""What the pane's OSC sequences tell the router: shell marks (OSC 133), the shell's working
directory (OSC 7) and an AI CLI's own status reports (``workers.program_status``).

Shell marks and OSC 7 count only when they carry the pane's secret (``workers.shellkey``):
anything else that looks like a mark is output some program printed, and changes nothing."""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable

from pebrel import messages as m
from pebrel.workers.foreground import ForegroundTracker
from pebrel.workers.osc import OscEvent
from pebrel.workers.program_status import ProgramStatusParser
from pebrel.workers.shellkey import ShellKey

SHELL_MARKS = ("A", "B", "C", "D")


class OscFacts:
    def __init__(
        self,
        ids: dict[str, int],
        foreground: ForegroundTracker,
        mark_row: Callable[[], int],
        key: ShellKey | None,
    ) -> None:
        """``mark_row``: the absolute row of the cursor, where a shell mark is. ``key``: the
        secret of the integration in the pane's shell (None: no integration, no shell marks)."""
        self._ids = ids
        self._foreground = foreground
        self._mark_row = mark_row
        self._key = key
        self.cwd: str | None = None  # the last directory the shell reported (OSC 7)
        self.program_status = ProgramStatusParser()

    def message(self, event: OscEvent) -> m.Message | None:
        """The message one OSC event makes, if any (it also updates what is kept here)."""
        if event.code in (133, 7):
            payload = self._key.strip(event.payload) if self._key is not None else None
            if payload is None:
                return None  # not from the pane's own integration: just output
            return self._shell_fact(event.code, payload)
        report = self.program_status.feed(event.code, event.payload)
        if report is None:
            return None
        return m.ProgramStatus(
            **self._ids,
            state=report.state,
            session_id=report.session_id,
            kind=report.kind,
            origin=report.origin,
        )

    def _shell_fact(self, code: int, payload: str) -> m.Message | None:
        """The fact in a mark of the pane's own integration (its secret already taken off)."""
        if code == 133:
            fields = payload.split(";")
            mark = fields[0]
            if mark not in SHELL_MARKS:
                return None
            self._foreground.exec_watch = mark == "C"
            exit_code: int | None = None
            if mark == "D" and len(fields) > 1 and fields[1].isdigit():
                exit_code = int(fields[1])
            return m.ShellMarked(**self._ids, mark=mark, exit_code=exit_code, row=self._mark_row())
        parsed = urllib.parse.urlparse(payload)
        if parsed.scheme == "file" and parsed.path:
            cwd = urllib.parse.unquote(parsed.path)
            if cwd != self.cwd:
                self.cwd = cwd
                return m.CwdReported(**self._ids, cwd=cwd)
        return None
