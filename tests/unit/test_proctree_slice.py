"""proctree.request_short_slice: the router's and the adapter's scheduler request (R1.5 under
load, issue #6), and request_default_slice (a pane worker's, once its pane has started). Run
in a child interpreter so this test process keeps its own settings."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

pytestmark = [
    pytest.mark.timeout(30),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sched_setattr is Linux's"),
]

PROBE = """
import subprocess
from pebrel import proctree
def slice_of(path):
    for line in open(path):
        if line.startswith("se.slice"):
            return int(line.split(":")[1])
    return -1
before = slice_of("/proc/self/sched")
ok = proctree.request_short_slice(100_000)
after = slice_of("/proc/self/sched")
child = subprocess.run(["cat", "/proc/self/sched"], capture_output=True, text=True).stdout
child_slice = next(int(l.split(":")[1]) for l in child.splitlines() if l.startswith("se.slice"))
back = proctree.request_default_slice()
print(ok, before, after, child_slice, back, slice_of("/proc/self/sched"))
"""


def _kernel_at_least(major: int, minor: int) -> bool:
    parts = platform.release().split(".")
    try:
        return (int(parts[0]), int(parts[1].split("-")[0])) >= (major, minor)
    except (IndexError, ValueError):
        return False


def test_the_calling_process_gets_the_short_slice_and_its_children_do_not() -> None:
    out = subprocess.run(
        [sys.executable, "-P", "-c", PROBE],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    ok, before, after, child = out[0] == "True", int(out[1]), int(out[2]), int(out[3])
    back, restored = out[4] == "True", int(out[5])
    assert ok and back
    if not _kernel_at_least(6, 12) or before < 0:
        return  # the kernel takes the call but has no per-task slice to show
    assert after == 100_000
    assert child == before  # reset on fork: a child runs with the default slice
    assert restored == before  # a starting pane worker gives its short slice back
