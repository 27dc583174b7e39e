"""Injection: the router runs out of file descriptors after a few dozen panes (#15).

The router's open-file limit drops to 60 above what it has open when injections are
installed (before its ZeroMQ socket, fork server and adapter exist), as if its hard limit were
that low; the adapter, which inherits it, takes its limit back up to the hard one.
"""

from __future__ import annotations

import os
import resource

from pebrel.injection import ADAPTER, ROUTER


def install(process: str) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if process == ROUTER:
        resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 60, hard))
    elif process == ADAPTER:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
