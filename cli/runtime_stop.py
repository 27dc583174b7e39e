"""Ending a runtime's process tree for `pebrel runtime stop` (R1.5), answering or not.

The router is signalled only once it is known to be this data dir's: it holds `runtime.lock`
(pebrel/runtimelock.py). SIGTERM (and SIGCONT, should it be stopped) lets it stop everything
itself; past the grace it is frozen (SIGSTOP, so it starts nothing more), every descendant is
killed until none is left, then the router itself.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

from pebrel.datadir import pid_alive

#: How long a router that answered has to stop by itself before it is killed.
ANSWERING_GRACE_S = 15.0
#: The same for a router that did not answer: it stops by itself unless it is wedged. Its own
#: shutdown waits at most 3 s for each process that does not react (a stopped adapter, say).
NOT_ANSWERING_GRACE_S = 8.0
KILL_TIMEOUT_S = 5.0
POLL_S = 0.02


def wait_gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while pid_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)  # polls a process that is not our child: no wait() to block in
    return True


def stop_tree(pid: int, grace_s: float) -> bool:
    """End router `pid` and its process tree; True if it had to be killed."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
        os.kill(pid, signal.SIGCONT)
    if wait_gone(pid, grace_s):
        return False
    kill_tree(pid)
    return True


def kill_tree(pid: int) -> None:
    """Freeze `pid`, SIGKILL its descendants until none is left, then it."""
    from pebrel import proctree

    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + KILL_TIMEOUT_S
    # Orphans of killed descendants re-parent to the router (a child subreaper): look again.
    while time.monotonic() < deadline:
        live = [p for p in proctree.descendants(pid) if _running(p)]
        if not live:
            break
        proctree.kill_processes(live)
        time.sleep(POLL_S)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    wait_gone(pid, KILL_TIMEOUT_S)


def _running(proc: object) -> bool:
    import psutil

    assert isinstance(proc, psutil.Process)
    try:
        return bool(proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False
