"""The runtime's open-file limit (docs/protocol.md "Limits").

The router raises its soft `RLIMIT_NOFILE` to the hard limit (at most `CEILING`) at start, as
common servers do: the frontend adapter inherits it and takes a connection per descriptor, the
router a worker link per pane. Programs the user runs (pane shells, `pane.exec`) get the limit
the runtime was started with: the fork server, whose children are the pane workers and their
shells, puts it back at its own start (`ORIGINAL_ENV` tells it the value; programs that use
`select()` break on descriptors past 1024).
"""

from __future__ import annotations

import logging
import os
import resource
from typing import Final

logger = logging.getLogger(__name__)

#: The soft limit the runtime's own processes take at most.
CEILING: Final = 65536
#: Set only in the fork server's environment: the soft limit the runtime was started with.
ORIGINAL_ENV: Final = "PEBREL_NOFILE_SOFT"

_original: int | None = None


def target(soft: int, hard: int) -> int:
    """The soft limit to raise to: the hard one, at most CEILING, never below `soft`."""
    ceiling = CEILING if hard == resource.RLIM_INFINITY else min(hard, CEILING)
    if soft == resource.RLIM_INFINITY:
        return soft
    return max(soft, ceiling)


def raise_soft_limit() -> tuple[int, int]:
    """Raise this process's soft limit (see the module doc); return (before, after)."""
    global _original
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    _original = soft
    wanted = target(soft, hard)
    if wanted != soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (ValueError, OSError) as exc:
            logger.warning("cannot raise the open-file limit: %s", exc)
            wanted = soft
    logger.info(
        "open-file limit %s (was %s, hard %s; programs in panes keep %s)",
        _limit(wanted),
        _limit(soft),
        _limit(hard),
        _limit(soft),
    )
    return soft, wanted


def original_env() -> dict[str, str]:
    """The environment entry that tells the fork server the limit to put back (none if this
    process did not raise its limit)."""
    return {} if _original is None else {ORIGINAL_ENV: str(_original)}


def restore_soft_limit() -> None:
    """In the fork server: put back the soft limit the runtime was started with, for the pane
    workers and their shells, and drop `ORIGINAL_ENV` so no pane inherits it."""
    value = os.environ.pop(ORIGINAL_ENV, None)
    if value is None:
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    original = int(value)
    if original != soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (original, hard))


def _limit(value: int) -> str:
    return "unlimited" if value == resource.RLIM_INFINITY else str(value)


#: Descriptors the router keeps free when it starts a pane: the pane's link takes one, a start
#: holds a pipe for a moment, and several starts may run at once. ZeroMQ aborts the process
#: when it cannot accept a worker's connection (EMFILE), so a start past it is refused instead.
PANE_FD_RESERVE = 32


def open_count() -> int:
    """How many descriptors this process has open."""
    try:
        return len(os.listdir("/proc/self/fd")) - 1  # less the one listdir itself holds
    except OSError:
        import psutil

        return int(psutil.Process().num_fds())


def soft_limit() -> int | None:
    """This process's soft open-file limit (None: unlimited)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def pane_headroom() -> tuple[int, int] | None:
    """(open, limit) if starting one more pane would leave fewer than PANE_FD_RESERVE
    descriptors free; None while there is room."""
    limit = soft_limit()
    if limit is None:
        return None
    count = open_count()
    return (count, limit) if count + PANE_FD_RESERVE > limit else None
