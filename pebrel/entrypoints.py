"""How Pebrel starts its own Python processes: the router, the frontend adapter, the fork server
and the collab service.

Each runs as `python -P -m pebrel.<module>`. `-P` (safe path, Python 3.11+) keeps the working
directory off `sys.path`: started from a clone of the repository, the clone's own `pebrel/`
folder would otherwise shadow the installed package (it holds the core only; `pebrel.router`,
`pebrel.workers` and `pebrel.cli` are installed from sibling folders).
"""

from __future__ import annotations

import sys
from typing import Final

ROUTER: Final = "pebrel.router"
ADAPTER: Final = "pebrel.router.adapter"
FORKSERVER: Final = "pebrel.workers.forkserver"
COLLAB: Final = "pebrel.collab"


def module_argv(module: str) -> list[str]:
    """The argv that runs `module` with this interpreter, the working directory off sys.path."""
    return [sys.executable, "-P", "-m", module]
