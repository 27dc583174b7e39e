"""tmux as the oracle for plain text on a screen (R4.4): what `capture-pane -p` shows for bytes.

A private tmux server (its own `-L` socket name, a config that only turns the status line
off) runs one pane of the given size that writes the bytes and then waits; the test reads the
pane's rows and kills only that server. tmux is the reference for plain text (ASCII, CJK) only:
it has its own width rules for emoji and drops some zero-width characters (tmux 3.3a drops
U+200D).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

TMUX = shutil.which("tmux")
needs_tmux = pytest.mark.skipif(TMUX is None, reason="tmux is not installed")

#: How long one tmux command may take (the server starts on the first one).
TMUX_TIMEOUT_S = 20


def _tmux(socket: str, *args: str, env: dict[str, str]) -> str:
    assert TMUX is not None
    done = subprocess.run(
        [TMUX, "-u", "-L", socket, "-f", str(Path(env["HOME"]) / "tmux.conf"), *args],
        capture_output=True,
        text=True,
        timeout=TMUX_TIMEOUT_S,
        env=env,
        check=True,
    )
    return done.stdout


def capture(data: bytes, cols: int, rows: int, workdir: Path, join: bool = False) -> list[str]:
    """The rows tmux shows (or, with ``join``, its logical lines) after ``data`` is written
    to a fresh ``cols`` x ``rows`` pane, trailing blank rows left out."""
    socket = f"pebrel-test-{uuid.uuid4().hex[:12]}"
    source = workdir / f"{socket}.bin"
    source.write_bytes(data)
    (workdir / "tmux.conf").write_text("set -g status off\n")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workdir),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "xterm-256color",
        "TMUX_TMPDIR": str(workdir),
    }
    # The pane writes the bytes raw (no ONLCR), then tells the test it has.
    script = (
        f"stty raw -echo; cat '{source}'; "
        f"{TMUX} -L {socket} wait-for -S written; exec sleep {TMUX_TIMEOUT_S * 3}"
    )
    try:
        _tmux(socket, "new-session", "-d", "-x", str(cols), "-y", str(rows), script, env=env)
        _tmux(socket, "wait-for", "written", env=env)
        shown = _tmux(socket, "capture-pane", "-p", *(["-J"] if join else []), env=env)
    finally:
        with contextlib.suppress(subprocess.SubprocessError):
            _tmux(socket, "kill-server", env=env)
    lines = [line.rstrip(" ") for line in shown.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines
