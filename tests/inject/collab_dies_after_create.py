"""Injection: the collab service dies (SIGKILL) right after `collab.integration.create`
committed, before its answer is sent, once (#17).

While `<data dir>/collab-die-after-create` exists, the service carries out the create, removes
the file and kills itself: the identity is stored, its answer lost (the router answers the
request INTEGRATION_RUNTIME_UNAVAILABLE). The service the router restarts runs on.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from pebrel.collab.service import Service
from pebrel.injection import COLLAB

METHOD = "collab.integration.create"
FLAG = "collab-die-after-create"


def install(process: str) -> None:
    if process != COLLAB:
        return
    data_dir = Path(os.environ["PEBREL_DATA_DIR"])
    original = Service.handle

    async def handle(
        self: Service, method: str, params: dict[str, Any], caller: dict[str, Any]
    ) -> dict[str, Any]:
        result = await original(self, method, params, caller)
        if method == METHOD and (data_dir / FLAG).exists():
            (data_dir / FLAG).unlink()
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    Service.handle = handle  # type: ignore[method-assign]
