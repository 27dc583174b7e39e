"""Injection: a connection with no authenticated first line is closed after 0.5 s (R1.2; #15).

Only the limit's value changes (router/adapter_limits.py reads it when it applies), so the
test sees the production code path in a test-sized time or count.
"""

from __future__ import annotations

from pebrel.injection import ADAPTER
from pebrel.router import adapter_limits


def install(process: str) -> None:
    if process == ADAPTER:
        adapter_limits.AUTH_DEADLINE_S = 0.5
