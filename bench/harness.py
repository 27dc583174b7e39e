"""The two sides of a run: a Pebrel runtime and a private tmux server, started side by side.

Both get the same temp HOME (no user rc files), SHELL=/bin/bash, the same locale and the same
80x24 geometry. Everything started here is stopped by `Bench.close()`. `Bench` holds the temp
tree, the environment and the two sides; the sides themselves are in bench/pebrel_side.py and
bench/tmux_side.py.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

from bench.pebrel_side import PebrelSide
from bench.tmux_side import TmuxSide


class Bench:
    """The temp tree, the environment and the two sides."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="pebrel-bench-"))
        for name in ("home", "work", "files"):
            (self.root / name).mkdir()
        bin_dir = str(Path(sys.executable).parent)
        path = os.environ.get("PATH", "/usr/bin:/bin")
        self.env = {
            "HOME": str(self.root / "home"),
            "PATH": f"{bin_dir}{os.pathsep}{path}",
            "SHELL": "/bin/bash",
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "TMPDIR": str(self.root / "work"),
        }
        self.files = self.root / "files"
        self.pebrel = PebrelSide(self.root, self.env)
        self.tmux = TmuxSide(self.root, self.env)

    def start(self) -> None:
        self.tmux.start()
        self.pebrel.start()

    def close_windows(self, pebrel: list[int], tmux: list[str]) -> None:
        """Close a phase's windows on both sides; a Pebrel window that fails to close is left."""
        for window_id in pebrel:
            with contextlib.suppress(Exception):
                self.pebrel.close_window(window_id)
        for tmux_window in tmux:
            self.tmux.kill_window(tmux_window)

    def close(self) -> list[str]:
        problems: list[str] = []
        for stop in (self.pebrel.stop, self.tmux.stop):
            try:
                problems.extend(stop())
            except Exception as exc:  # keep stopping the other side
                problems.append(f"{stop.__qualname__}: {exc!r}")
        shutil.rmtree(self.root, ignore_errors=True)
        return problems
