"""The runtime a chaos run works on: start and stop it, find its processes, check its leftovers.

A chaos run starts its runtime with `pebrel runtime start` in a data dir of its own and a
private `TMPDIR` (the ZeroMQ ipc dir and the panes' key files go there), so that what the run
leaves behind can be listed exactly: no process whose environment names the data dir
(`PEBREL_DATA_DIR=<dir>`, as tests/conftest.py's `processes_of`), no file in the data dir but
the documented ones, nothing in the temp dir.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil

from pebrel import entrypoints
from pebrel.client import Client
from pebrel.datadir import LOG_FILE, RUNTIME_LOCK, SETTINGS_FILE, START_LOCK
from tests.conftest import poll_until, processes_of

#: What a data dir may hold once its runtime ended (README, "Settings and logs"): the collab
#: service's database directory outlives the runtime, as its tasks do.
DOCUMENTED_LEFTOVERS = frozenset({LOG_FILE, RUNTIME_LOCK, START_LOCK, SETTINGS_FILE, "collab"})

#: How long the runtime's processes may take to go after a stop or an adapter death.
END_TIMEOUT_S = 20.0


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        args: list[str] = proc.cmdline()
    except psutil.Error:
        return []
    return args


def _started_as(proc: psutil.Process, module: str) -> bool:
    return _cmdline(proc)[1:4] == entrypoints.module_argv(module)[1:]


class ChaosRuntime:
    """One runtime life in `root`/data, with `root`/tmp as its TMPDIR."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        self.data_dir = root / "data"
        self.tmp_dir = root / "tmp"
        home = root / "home"
        for folder in (self.data_dir, self.tmp_dir, home):
            folder.mkdir(parents=True, exist_ok=True)
        self.env = {
            **env,
            "HOME": str(home),
            "PEBREL_DATA_DIR": str(self.data_dir),
            "TMPDIR": str(self.tmp_dir),
        }
        self.exe = str(Path(sys.executable).parent / "pebrel")
        self.pid = 0
        #: Set before the adapter is killed on purpose: the runtime is expected to end.
        self.ending = False

    def cli(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.exe, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            cwd=self.root,
        )

    def start(self) -> None:
        proc = self.cli("runtime", "start")
        if proc.returncode != 0:
            raise RuntimeError(f"pebrel runtime start failed: {proc.stdout}{proc.stderr}")
        self.pid = int(json.loads(proc.stdout)["result"]["pid"])
        self.ending = False

    def stop(self) -> dict[str, Any]:
        """`pebrel runtime stop`; its result (raises if it failed)."""
        proc = self.cli("runtime", "stop")
        if proc.returncode != 0:
            raise RuntimeError(f"pebrel runtime stop failed: {proc.stdout}{proc.stderr}")
        result: dict[str, Any] = json.loads(proc.stdout)["result"]
        return result

    def call(self, method: str, params: dict[str, Any], timeout_s: float = 30) -> dict[str, Any]:
        """One request on a fresh connection; its envelope."""
        with Client(self.data_dir, timeout_s=timeout_s) as client:
            return client.call(method, params)

    # -- processes ---------------------------------------------------------------------------

    def processes(self) -> list[psutil.Process]:
        """Every live process whose environment names this data dir."""
        return processes_of(self.data_dir)

    def router_child(self, module: str) -> psutil.Process | None:
        try:
            children = psutil.Process(self.pid).children()
        except psutil.Error:
            return None
        return next((c for c in children if _started_as(c, module)), None)

    def forkserver_children(self) -> list[psutil.Process]:
        server = self.router_child(entrypoints.FORKSERVER)
        if server is None:
            return []
        with contextlib.suppress(psutil.Error):
            return list(server.children())
        return []

    def workers(self) -> list[tuple[psutil.Process, int]]:
        """Pane workers with their shell's pid (a worker runs exactly one shell)."""
        found = []
        for worker in self.forkserver_children():
            with contextlib.suppress(psutil.Error):
                shells = worker.children()
                if shells:
                    found.append((worker, shells[0].pid))
        return found

    def spares(self) -> list[psutil.Process]:
        """The fork server's children without a shell: the spare (or a worker starting)."""
        found = []
        for child in self.forkserver_children():
            with contextlib.suppress(psutil.Error):
                if not child.children():
                    found.append(child)
        return found

    # -- what is left --------------------------------------------------------------------------

    def leftovers(self) -> list[str]:
        """What outlived the runtime: processes, undocumented data dir files, temp files."""
        found: list[psutil.Process] = []

        def none_left() -> bool:
            found[:] = self.processes()
            return not found

        problems = []
        if not poll_until(none_left, END_TIMEOUT_S, interval_s=0.05):
            described = [(p.pid, _cmdline(p)) for p in found]
            problems.append(f"processes outlived the runtime: {described}")
            for proc in found:
                with contextlib.suppress(psutil.Error):
                    proc.send_signal(signal.SIGKILL)
        extra = sorted(
            p.name for p in self.data_dir.iterdir() if p.name not in DOCUMENTED_LEFTOVERS
        )
        if extra:
            problems.append(f"undocumented files left in the data dir: {extra}")
        temp = sorted(p.name for p in self.tmp_dir.iterdir())
        if temp:
            problems.append(f"files left in the runtime's TMPDIR: {temp}")
        return problems

    def log_summary(self) -> dict[str, int]:
        """How many tracebacks and error lines runtime.log holds."""
        path = self.data_dir / LOG_FILE
        text = path.read_text(errors="replace") if path.exists() else ""
        return {
            "tracebacks": text.count("Traceback (most recent call last)"),
            "error_lines": sum(
                '"level": "ERROR"' in line or " ERROR " in line for line in text.splitlines()
            ),
        }
