"""Injection: the collab service cannot open its database, at every start (#16).

Every run of the service exits at once; the runtime must start and run all the same, and
answer `collab.*` with INTEGRATION_RUNTIME_UNAVAILABLE.
"""

from __future__ import annotations

from pathlib import Path

from pebrel.collab import store
from pebrel.injection import COLLAB


def install(process: str) -> None:
    if process != COLLAB:
        return

    def refuse(self: store.Store, data_dir: Path) -> None:
        raise OSError("injected: the collab database cannot be opened")

    store.Store.__init__ = refuse  # type: ignore[method-assign]
