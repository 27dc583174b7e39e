"""Logging to `runtime.log`: every runtime process appends its records there.

The file is opened through pebrel/datadir.py's `open_log` (mode 0600 whatever the umask, never
through a symbolic link), not by `logging.FileHandler`, which would follow a link and create
the file with the umask's mode.
"""

from __future__ import annotations

import io
import logging
import os

from pebrel.datadir import open_log

LEVEL_ENV = "PEBREL_LOG_LEVEL"
#: The attributes every LogRecord has: anything else on a record came from `extra=`.
_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class ExtraFormatter(logging.Formatter):
    """The format, then the record's `extra=` fields as ` key=value` (an `internal_error`'s
    incident id among them: the answer says to look it up in runtime.log)."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        extra = {k: v for k, v in vars(record).items() if k not in _STANDARD}
        if not extra:
            return text
        fields = " ".join(f"{k}={v!r}" for k, v in sorted(extra.items()))
        head, sep, rest = text.partition("\n")  # keep a traceback below the first line
        return f"{head} [{fields}]{sep}{rest}"


def configure(path: str, fmt: str) -> None:
    """Send this process's log records to the runtime log at `path`, formatted with `fmt`."""
    stream = io.TextIOWrapper(open_log(path), encoding="utf-8", errors="backslashreplace")
    handler = logging.StreamHandler(stream)
    handler.setFormatter(ExtraFormatter(fmt))
    logging.basicConfig(handlers=[handler], level=os.environ.get(LEVEL_ENV, "INFO").upper())
