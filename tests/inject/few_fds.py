"""Injection: the adapter runs out of file descriptors after about 40 connections (#15).

Its open-file limit drops to 40 above what it has open at start and the connection cap no
longer keeps a reserve below it, so `accept()` itself fails with EMFILE, as under a 1024-fd
limit with a thousand sockets open.
"""

from __future__ import annotations

import os
import resource

from pebrel.injection import ADAPTER
from pebrel.router import adapter_limits


def install(process: str) -> None:
    if process == ADAPTER:
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 40, hard))
        adapter_limits.FD_RESERVE = 0
