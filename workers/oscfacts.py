"""What the pane's OSC sequences tell the router: shell marks (OSC 133), the shell's working
directory (OSC 7) and an AI CLI's own status reports (``workers.program_status``)."""

from __future__ import annotations

import contextlib
import urllib.parse
from collections.abc import Callable

from pebrel import messages as m
from pebrel.workers.foreground import ForegroundTracker
from pebrel.workers.osc import OscEvent
from pebrel.workers.program_status import ProgramStatusParser

SHELL_MARKS = ("A", "B", "C", "D")


class OscFacts:
    def __init__(
        self,
        ids: dict[str, int],
        foreground: ForegroundTracker,
        mark_row: Callable[[], int],
    ) -> None:
        """``mark_row``: the absolute row of the cursor, where a shell mark is."""
        self._ids = ids
        self._foreground = foreground
        self._mark_row = mark_row
        self.cwd: str | None = None  # the last directory the shell reported (OSC 7)
        self.program_status = ProgramStatusParser()

    def message(self, event: OscEvent) -> m.Message | None:
        """The message one OSC event makes, if any (it also updates what is kept here)."""
        if event.code == 133:
            fields = event.payload.split(";")
            mark = fields[0][:1]
            if mark not in SHELL_MARKS:
                return None
            self._foreground.exec_watch = mark == "C"
            code: int | None = None
            if mark == "D" and len(fields) > 1:
                with contextlib.suppress(ValueError):
                    code = int(fields[1])
            return m.ShellMarked(**self._ids, mark=mark, exit_code=code, row=self._mark_row())
        if event.code == 7:
            parsed = urllib.parse.urlparse(event.payload)
            if parsed.scheme == "file" and parsed.path:
                cwd = urllib.parse.unquote(parsed.path)
                if cwd != self.cwd:
                    self.cwd = cwd
                    return m.CwdReported(**self._ids, cwd=cwd)
            return None
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
