"""The Program Status Protocol's feature check, as programs such as Claude Code make it, for
the stand-ins beside this file (fake_agent.py, status_emitter.py; test stand-ins only).

Both put this directory first on ``sys.path`` (a script's own directory is) and import it as
``status_gate``."""

from __future__ import annotations

import os
import select
import sys
import time


def query() -> tuple[bool, bytes]:
    """Send the OSC 7501 query, then DA1 (which every terminal answers), and read the answers
    from stdin (the caller has the terminal in raw mode): supported if the query's answer
    comes before DA1's. Also returns the bytes that came back."""
    sys.stdout.write("\x1b]7501;?\x1b\\\x1b[c")
    sys.stdout.flush()
    got = b""
    deadline = time.monotonic() + 5
    while not (b"\x1b[?" in got and got.endswith(b"c")):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([0], [], [], left)[0]:
            break
        got += os.read(0, 256)
    answer, attributes = got.find(b"\x1b]7501;?"), got.find(b"\x1b[?")
    return answer >= 0 and (attributes < 0 or answer < attributes), got
