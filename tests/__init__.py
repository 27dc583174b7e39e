"""Pebrel's tests. They always test the installed package, never the clone's folders.

`python -m pytest` puts the working directory first on `sys.path`; run from the clone, the
clone's `pebrel/` folder (the core only: `pebrel.router`, `pebrel.workers` and `pebrel.cli`
are installed from sibling folders) would shadow the installed package. pytest itself runs
with `--import-mode=importlib` (pyproject.toml), which leaves `sys.path` alone, so dropping the
clone root here, before anything imports `pebrel`, is enough.
"""

from __future__ import annotations

import sys
from pathlib import Path

_CLONE_ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _CLONE_ROOT]
