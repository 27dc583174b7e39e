"""Injection: the collab service dies (SIGKILL) right after the runtime answered a session's
`agent.launch`, before the outcome is written, once (I4.3, #18).

While `<data dir>/collab-die-after-launch` exists, the next launch is typed, the file removed
and the service killed: the session stays `launching` in the store. The service the router
restarts runs on (and settles it: collab/tracking.py `recover_launches`).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from pebrel.collab.service import SeenTerminal
from pebrel.injection import COLLAB

FLAG = "collab-die-after-launch"


def install(process: str) -> None:
    if process != COLLAB:
        return
    data_dir = Path(os.environ["PEBREL_DATA_DIR"])
    original = SeenTerminal.call

    async def call(self: SeenTerminal, method: str, params: dict[str, Any]) -> dict[str, Any]:
        result = await original(self, method, params)
        if method == "agent.launch" and (data_dir / FLAG).exists():
            (data_dir / FLAG).unlink()
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    SeenTerminal.call = call  # type: ignore[method-assign]
