"""What the collab service needs from the runtime: call its methods, see its snapshot.

`collab/app.py` implements it over the router link (TerminalCall / TerminalAnswered); tests use
a fake. The service acts as the local user when it calls runtime methods.
"""

from __future__ import annotations

from typing import Any, Protocol


class TerminalUnavailable(Exception):
    """The router link is gone: whether a call in flight took effect is unknown."""


class Terminal(Protocol):
    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Run one runtime method; its result, or `PebrelError` with the runtime's error code
        (nothing was done), or `TerminalUnavailable` (the outcome is unknown)."""
        ...

    def snapshot(self) -> dict[str, Any] | None:
        """The latest `runtime.snapshot` seen (None before the first)."""
        ...
