"""Side-by-side benchmarks of Pebrel against tmux and the physical floor (`python -m bench`).

`python -m bench` runs from the repository root, where the source folder `pebrel/` would
shadow the installed package (which maps `collab/`, `router/`, ... into `pebrel.*`). The
repository root is therefore taken off `sys.path` before anything imports `pebrel`: the
`bench` package itself is already imported and finds its modules through its own path.
"""

from __future__ import annotations

import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if "pebrel" not in sys.modules:
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _ROOT]
