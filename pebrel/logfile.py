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


def configure(path: str, fmt: str) -> None:
    """Send this process's log records to the runtime log at `path`, formatted with `fmt`."""
    stream = io.TextIOWrapper(open_log(path), encoding="utf-8", errors="backslashreplace")
    logging.basicConfig(
        handlers=[logging.StreamHandler(stream)],
        level=os.environ.get(LEVEL_ENV, "INFO").upper(),
        format=fmt,
    )
