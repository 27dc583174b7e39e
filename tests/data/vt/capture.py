"""Regenerate the raw PTY captures used by tests/unit/test_ingest_differential.py.

Run ``python tests/data/vt/capture.py`` (the commands run in the repository root). Each
capture is the exact byte stream a pane worker reads from an 80x24 PTY (TERM=xterm-256color,
LANG=C.UTF-8) while the command runs; interactive programs get their keys after a short
pause. The files are committed so the differential test is reproducible; regenerating them on
another machine gives different (equally valid) bytes.
"""

from __future__ import annotations

import os
import select
import sys
import time
from pathlib import Path

import ptyprocess

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
LIMIT = 96 * 1024

PROGRESS = r"""
import sys, time
for i in range(0, 101):
    bar = "#" * (i * 30 // 100)
    colour = 32 if i == 100 else 33
    sys.stdout.write(f"\r\x1b[{colour}m[{bar:<30}]\x1b[0m {i:3d}% \x1b[K")
    sys.stdout.flush()
    time.sleep(0.002)  # pace the bar so it is drawn as many separate frames
sys.stdout.write("\n")
for n in range(3):
    for i in range(0, 101, 5):
        sys.stdout.write(f"\rstep {n}: {'=' * (i // 5)}> {i}%")
    sys.stdout.write("\n")
"""

UNICODE = r"""
import sys
out = []
out.append("CJK: 漢字かなカナ한국어 全角ＡＢＣ")
out.append("combining: e\u0301 a\u0308 o\u0302\u0323 n\u0303 Z\u0336a\u0337l\u0338g\u0335o")
out.append("emoji: \U0001F600 \U0001F680 ok")
out.append("tabs:\tone\ttwo\tthree\t|")
out.append("\t\tindented\tcells")
out.append("wide at the edge: " + "x" * 61 + "漢字漢字")
out.append("long: " + "0123456789" * 25)
out.append("long CJK: " + "漢字" * 50)
out.append("mixed \x1b[1;31mbold red 漢字\x1b[0m and \x1b[4munderline é\x1b[0m")
out.append("box: ┌──┬──┐ │ab│cd│ └──┴──┘")
sys.stdout.write("\n".join(out) + "\n")
"""

OSC_MARKS = r"""
import sys
w = sys.stdout.write
for n in range(12):
    w("\x1b]133;A\x07$ \x1b]133;B\x07")
    w(f"echo line {n}\r\n")
    w("\x1b]133;C\x07")
    w(f"line {n}\r\n" * (n % 4))
    w(f"\x1b]133;D;{n % 3}\x07\x1b]7;file://host/tmp/dir{n}\x07")
    w(f"\x1b]0;title {n}\x07")
"""

CAPTURES: dict[str, tuple[list[str], list[tuple[float, bytes]]]] = {
    "ls_color": (["ls", "--color=always", "-la", "/usr/lib"], []),
    "git_log": (
        ["git", "--no-pager", "log", "--color=always", "--stat", "-n", "25"],
        [],
    ),
    "top_batch": (["top", "-b", "-n", "1", "-w", "100"], []),
    "top_interactive": (["top", "-d", "0.3"], [(1.0, b"q")]),
    "vim_start": (
        ["vim", "-u", "NONE", "-N", "-n", "-i", "NONE", "README.md"],
        [(0.8, b"G"), (0.3, b":q!\r")],
    ),
    "less_file": (["less", "pyproject.toml"], [(0.5, b"G"), (0.3, b"q")]),
    "progress": ([sys.executable, "-c", PROGRESS], []),
    "unicode": ([sys.executable, "-c", UNICODE], []),
    "osc_marks": ([sys.executable, "-c", OSC_MARKS], []),
}


def capture(argv: list[str], keys: list[tuple[float, bytes]]) -> bytes:
    env = dict(os.environ, TERM="xterm-256color", LANG="C.UTF-8", COLUMNS="80", LINES="24")
    proc = ptyprocess.PtyProcess.spawn(argv, cwd=str(REPO), env=env, dimensions=(24, 80))
    out = bytearray()
    pending = list(keys)
    deadline = time.monotonic() + (pending[0][0] if pending else 30.0)
    try:
        while len(out) < LIMIT:
            timeout = max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([proc.fd], [], [], timeout)
            if not ready:
                if not pending:
                    break
                proc.write(pending.pop(0)[1])
                deadline = time.monotonic() + (pending[0][0] if pending else 5.0)
                continue
            try:
                data = os.read(proc.fd, 65536)
            except OSError:
                break
            if not data:
                break
            out += data
    finally:
        proc.terminate(force=True)
    return bytes(out[:LIMIT])


def main() -> None:
    for name, (argv, keys) in CAPTURES.items():
        data = capture(argv, keys)
        (HERE / f"{name}.bin").write_bytes(data)
        print(f"{name}: {len(data)} bytes")


if __name__ == "__main__":
    main()
