"""The collab service's domain entry point (placeholder: `collab.capabilities` only).

`collab/app.py` builds one `Service(store, terminal)` per process and hands it every
`collab.*` request with the caller the router resolved. The full service (groups, sessions,
tasks, deliveries) replaces this module; its interface is the one here (#16).
"""

from __future__ import annotations

from typing import Any

from pebrel import __version__
from pebrel.collab.store import Store
from pebrel.collab.terminal import Terminal
from pebrel.errors import CollabCode, CollabError

INTEGRATION_PROTOCOL = 1


class Service:
    def __init__(self, store: Store, terminal: Terminal) -> None:
        self.store = store
        self.terminal = terminal

    async def start(self) -> None:
        """Recover what a previous run left and start background work (none here)."""

    def close(self) -> None:
        """Stop background work; the app closes the store afterwards."""

    def on_snapshot(self, snapshot: dict[str, Any]) -> None:
        """A new runtime snapshot (`runtime.snapshot`'s result)."""

    async def handle(
        self, method: str, params: dict[str, Any], caller: dict[str, Any]
    ) -> dict[str, Any]:
        """Answer one validated `collab.*` request; raises CollabError."""
        if method == "collab.capabilities":
            return {
                "server_version": __version__,
                "integration_protocol": INTEGRATION_PROTOCOL,
                "local_only": True,
                "caller": caller,
            }
        raise CollabError(
            CollabCode.INVALID_ARGUMENT, f"{method} is not served", {"method": method}
        )
