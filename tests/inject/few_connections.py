"""Injection: the adapter, and the collab service's integration socket, each take at most 8
client connections, so at most 4 unauthenticated ones (R1.5; I1.6; #15, #17).

Only the limit's value changes (router/adapter_limits.py, read by both sockets when it
applies), so the test sees the production code path in a test-sized time or count.
"""

from __future__ import annotations

from pebrel.injection import ADAPTER, COLLAB
from pebrel.router import adapter_limits


def install(process: str) -> None:
    if process in (ADAPTER, COLLAB):
        adapter_limits.MAX_CONNECTIONS = 8
