"""The CLI client path stays light: no zmq, msgpack, pyte or psutil (R8, TRAPS "CLI", issue 6)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest

HEAVY = ("zmq", "msgpack", "pyte", "psutil", "importlib.metadata")
#: Standard modules the hot verbs kept off their path (each costs a CLI call a millisecond or
#: more); checked only beyond what the `import click, json, socket` floor loads itself.
SLOW_STDLIB = (
    "asyncio",
    "subprocess",
    "tempfile",
    "dataclasses",
    "secrets",
    "hashlib",
    "tomllib",
    "encodings.idna",
    "pathlib",
)

#: Runs `pebrel ARGS...` in this interpreter, then reports its exit status, every module it
#: loaded and the ones the bare floor loads, as one JSON line on stderr.
RUNNER = """
import sys
import click, json, socket
floor = sorted(sys.modules)
from pebrel.cli.main import main
status = 0
try:
    main(sys.argv[1:], prog_name="pebrel")
except SystemExit as exc:
    status = exc.code
report = {"status": status, "modules": sorted(sys.modules), "floor": floor}
sys.stderr.write("\\n" + json.dumps(report) + "\\n")
"""


class Verb(NamedTuple):
    id: str
    args: tuple[str, ...]


#: The hot verbs of issue 6, as a client inside pane 1 of window 1 runs them.
HOT_VERBS = (
    Verb("pane-read", ("pane", "read", "1", "--window", "1", "--lines", "40")),
    Verb("pane-send", ("pane", "send", "1", "true", "--window", "1")),
    Verb("pane-send-wait", ("pane", "send", "1", "true", "--window", "1", "--wait")),
    Verb("pane-exec", ("pane", "exec", "1", "--window", "1", "--", "true")),
    Verb("pane-wait", ("pane", "wait", "1", "--window", "1", "--timeout-ms", "5000")),
    Verb("hook", ("hook", "stop", "--kind", "claude", "--message", "done")),
)
PANE_ENV = {"PEBREL_WINDOW_ID": "1", "PEBREL_PANE_ID": "1"}


class Run(NamedTuple):
    status: Any
    modules: set[str]
    floor: set[str]


def run_cli(args: tuple[str, ...], env: dict[str, str]) -> Run:
    """Run the CLI in a fresh interpreter; what it exited with and what it imported."""
    proc = subprocess.run(
        [sys.executable, "-P", "-c", RUNNER, *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    return Run(report["status"], set(report["modules"]), set(report["floor"]))


def test_cli_main_imports_nothing_heavy() -> None:
    imports = "import sys, pebrel.cli.main, pebrel.client"
    code = f"{imports}; print(sorted(set({HEAVY!r}) & set(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-P", "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_pebrel_package_import_is_bare() -> None:
    code = f"import sys, pebrel; print(sorted(set({HEAVY!r}) & set(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-P", "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_cli_main_loads_no_command_module() -> None:
    """The console script imports pebrel.cli.main on every call: it must not import the commands."""
    code = (
        "import sys, pebrel.cli.main; print(sorted(m for m in sys.modules if m.endswith('_cmd')))"
    )
    out = subprocess.run(
        [sys.executable, "-P", "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("verb", HOT_VERBS, ids=[v.id for v in HOT_VERBS])
def test_hot_verb_without_runtime_imports_nothing_heavy(tmp_path: Path, verb: Verb) -> None:
    """Issue 6: the whole code path of a hot verb (here: no runtime answers) stays off zmq,
    msgpack, pyte, psutil and importlib.metadata, and imports no command module but its own."""
    env = {"PATH": "/usr/bin:/bin", "PEBREL_DATA_DIR": str(tmp_path), **PANE_ENV}
    run = run_cli(verb.args, env)
    assert run.status == (0 if verb.args[0] == "hook" else 3)
    assert set(HEAVY) & run.modules == set()
    own = "pebrel.cli.hook_cmd" if verb.args[0] == "hook" else "pebrel.cli.pane_cmd"
    assert {m for m in run.modules if m.endswith("_cmd")} == {own}
    assert "pebrel.cli.agent_params" not in run.modules


def test_ctl_verb_loads_no_resource_command_module(tmp_path: Path) -> None:
    """`ctl read` shares pane read's params builder and options, not the pane command module."""
    env = {"PATH": "/usr/bin:/bin", "PEBREL_DATA_DIR": str(tmp_path), **PANE_ENV}
    run = run_cli(("ctl", "read", "--pane", "1", "--lines", "40"), env)
    assert run.status == 3
    assert set(HEAVY) & run.modules == set()
    assert {m for m in run.modules if m.endswith("_cmd")} == {"pebrel.cli.ctl_cmd"}
