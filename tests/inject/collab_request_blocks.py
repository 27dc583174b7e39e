"""Injection: the collab service holds `collab.capabilities` while a flag file exists (#16).

While `<data dir>/collab-block` exists, the service's handler of `collab.capabilities` writes
`<data dir>/collab-blocked` (the request is in flight inside the service) and never answers,
so a test can kill the service with the request in flight. Every other method is untouched.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from pebrel.collab.service import Service
from pebrel.injection import COLLAB

METHOD = "collab.capabilities"
FLAG = "collab-block"
IN_FLIGHT = "collab-blocked"


def install(process: str) -> None:
    if process != COLLAB:
        return
    data_dir = Path(os.environ["PEBREL_DATA_DIR"])
    original = Service.handle

    async def handle(
        self: Service, method: str, params: dict[str, Any], caller: dict[str, Any]
    ) -> dict[str, Any]:
        if method == METHOD and (data_dir / FLAG).exists():
            (data_dir / IN_FLIGHT).write_text(str(os.getpid()))
            await asyncio.Event().wait()  # never answers
        return await original(self, method, params, caller)

    Service.handle = handle  # type: ignore[method-assign]
