"""Injection: the collab service's `collab.capabilities` also reports what its Terminal sees
(#16): the answers of a few runtime methods called through the router, and the revision of
the latest snapshot the router sent it. Nothing else changes.
"""

from __future__ import annotations

from typing import Any

from pebrel.collab.service import Service
from pebrel.errors import PebrelError
from pebrel.injection import COLLAB


def install(process: str) -> None:
    if process != COLLAB:
        return
    original = Service.handle

    async def handle(
        self: Service, method: str, params: dict[str, Any], caller: dict[str, Any]
    ) -> dict[str, Any]:
        result = await original(self, method, params, caller)
        if method != "collab.capabilities":
            return result
        calls: dict[str, Any] = {}
        for name, call_params in (
            ("runtime.snapshot", {}),
            ("pane.read", {"window_id": 1, "pane_id": 1, "lines": 5}),
            ("pane.read", {"window_id": 1, "pane_id": 999}),
            ("collab.capabilities", {}),
        ):
            try:
                answer = await self.terminal.call(name, call_params)
                calls.setdefault(name, []).append({"ok": True, "keys": sorted(answer)})
            except PebrelError as exc:
                calls.setdefault(name, []).append({"ok": False, "code": str(exc.code)})
        snapshot = self.terminal.snapshot()
        return {**result, "terminal": calls, "seen_panes": _panes(snapshot)}

    Service.handle = handle  # type: ignore[method-assign]


def _panes(snapshot: dict[str, Any] | None) -> int | None:
    if snapshot is None:
        return None
    return sum(len(tab["panes"]) for win in snapshot["windows"] for tab in win["tabs"])
