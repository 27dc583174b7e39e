"""Injection: an integration connection with no hello is closed after 0.5 s (I1.6; #17).

Only the limit's value changes in the collab process (the socket reads router/adapter_limits.py
when a limit applies, as the frontend adapter does), so the test sees the production code path
in a test-sized time.
"""

from __future__ import annotations

from pebrel.injection import COLLAB
from pebrel.router import adapter_limits


def install(process: str) -> None:
    if process == COLLAB:
        adapter_limits.AUTH_DEADLINE_S = 0.5
