"""The CLI client path stays light: no zmq, msgpack, pyte or psutil (R8, TRAPS "CLI")."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("zmq", "msgpack", "pyte", "psutil", "importlib.metadata")


def test_cli_main_imports_nothing_heavy() -> None:
    code = f"import sys, cli.main, pebrel.client; print(sorted(set({HEAVY!r}) & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_pebrel_package_import_is_bare() -> None:
    code = f"import sys, pebrel; print(sorted(set({HEAVY!r}) & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
