"""The one test-injection point of Pebrel's own processes.

Tests provoke failures that no request can cause (a handler that cannot start, a dispatch
that never confirms, a worker that dies at a chosen moment) by installing code into the
runtime's processes, never by branches in production code. `PEBREL_TEST_INJECT` lists files
(separated by `os.pathsep`); at its start each Pebrel process (the router, the frontend
adapter, the fork server, whose pane workers inherit it, and the collab service) loads each
file as a module and calls its `install(process)` with the process's name from `PROCESSES`.
Only the test fixtures set the variable (tests/inject/ holds the files); without it this
module does nothing.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from typing import Final

logger = logging.getLogger(__name__)

INJECT_ENV: Final = "PEBREL_TEST_INJECT"
ROUTER: Final = "router"
ADAPTER: Final = "adapter"
FORKSERVER: Final = "forkserver"
COLLAB: Final = "collab"
PROCESSES: Final = (ROUTER, ADAPTER, FORKSERVER, COLLAB)


def install(process: str) -> None:
    """Load the files `PEBREL_TEST_INJECT` names into this process and call their `install`."""
    listed = os.environ.get(INJECT_ENV, "")
    for index, path in enumerate(p for p in listed.split(os.pathsep) if p):
        spec = importlib.util.spec_from_file_location(f"pebrel_injected_{index}", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"{INJECT_ENV}: cannot load {path!r}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        logger.warning("test injection installed", extra={"path": path, "pebrel_process": process})
        module.install(process)
