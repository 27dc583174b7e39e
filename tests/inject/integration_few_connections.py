"""Injection: the collab service's integration socket takes at most 8 connections, so at most
4 unauthenticated ones (I1.6; #17).

Only the limit's value changes in the collab process (the socket reads router/adapter_limits.py
when a limit applies, as the frontend adapter does), so the test sees the production code path
at a test-sized count.
"""

from __future__ import annotations

from pebrel.injection import COLLAB
from pebrel.router import adapter_limits


def install(process: str) -> None:
    if process == COLLAB:
        adapter_limits.MAX_CONNECTIONS = 8
