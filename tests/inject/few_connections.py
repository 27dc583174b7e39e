"""Injection: the adapter takes at most 8 client connections (R1.5; #15).

Only the limit's value changes (router/adapter_limits.py reads it when it applies), so the
test sees the production code path in a test-sized time or count.
"""

from __future__ import annotations

from pebrel.injection import ADAPTER
from pebrel.router import adapter_limits


def install(process: str) -> None:
    if process == ADAPTER:
        adapter_limits.MAX_CONNECTIONS = 8
