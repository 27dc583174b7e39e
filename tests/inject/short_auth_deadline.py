"""Injection: a connection with no authenticated first line (the adapter's auth line, the
integration socket's hello) is closed after 0.5 s (R1.2; I1.6; #15, #17).

Only the limit's value changes (router/adapter_limits.py, read by both sockets when it
applies), so the test sees the production code path in a test-sized time or count.
"""

from __future__ import annotations

from pebrel.injection import ADAPTER, COLLAB
from pebrel.router import adapter_limits


def install(process: str) -> None:
    if process in (ADAPTER, COLLAB):
        adapter_limits.AUTH_DEADLINE_S = 0.5
