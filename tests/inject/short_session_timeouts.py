"""Injection: a launched session has 4 s, not 120 s, to be seen (SESSION_BINDING_TIMEOUT; I4.3,
#18). Only the value changes (collab/session_launch.py, read at each create and restore)."""

from __future__ import annotations

from pebrel.injection import COLLAB


def install(process: str) -> None:
    if process == COLLAB:
        from pebrel.collab import session_launch

        session_launch.BINDING_TIMEOUT_MS = 4000  # type: ignore[misc]
