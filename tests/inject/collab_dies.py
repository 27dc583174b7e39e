"""Injection: the collab service dies (SIGKILL) at a chosen point, once (#16 item 6).

The fault switch is a file in the data dir, removed by the service just before it dies, so
the service the router restarts runs on:

- `collab-die-after-commits` holding N: right after the commit that brought the events
  appended since the file appeared to N or more (one commit holds a whole batch of writes:
  collab/store.py's group commit; they are durable, their answers not yet sent);
- `collab-die-before-write`: after a delivery's `writing` stage committed, before the text is
  sent to the runtime (nothing typed);
- `collab-die-after-write`: after the runtime answered the text's write, before `delivered`
  is committed (the text typed once, its stage still `writing`).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from pebrel.injection import COLLAB

AFTER_COMMITS = "collab-die-after-commits"
BEFORE_WRITE = "collab-die-before-write"
AFTER_WRITE = "collab-die-after-write"
WRITES = ("agent.prompt", "agent.paste")


def die(switch: Path) -> None:
    switch.unlink()
    os.kill(os.getpid(), signal.SIGKILL)


def install(process: str) -> None:
    if process != COLLAB:
        return
    from pebrel.collab.app import RouterTerminal
    from pebrel.collab.store import Event, Store

    data_dir = Path(os.environ["PEBREL_DATA_DIR"])
    appended = 0
    retain = Store.retain

    def counted(self: Store, events: list[Event]) -> None:
        nonlocal appended
        retain(self, events)
        switch = data_dir / AFTER_COMMITS
        if switch.exists():  # counted from when the switch appeared
            appended += len(events)
            if appended >= int(switch.read_text()):
                die(switch)

    call = RouterTerminal.call

    async def writing(self: RouterTerminal, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method in WRITES and (data_dir / BEFORE_WRITE).exists():
            die(data_dir / BEFORE_WRITE)
        result = await call(self, method, params)
        if method in WRITES and (data_dir / AFTER_WRITE).exists():
            die(data_dir / AFTER_WRITE)
        return result

    Store.retain = counted  # type: ignore[method-assign]
    RouterTerminal.call = writing  # type: ignore[method-assign]
