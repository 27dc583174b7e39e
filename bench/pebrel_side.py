"""The Pebrel side of a run: a Pebrel runtime started with `pebrel runtime start` in its own
temp data dir, driven over one persistent connection (`PebrelSide`), its panes (`PebrelPane`),
and the finding and stopping of every process of that data dir when the run ends."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from bench.common import COLS, ROWS, BenchError, run_command
from pebrel.client import Client


def pebrel_executable() -> str:
    beside = Path(sys.executable).parent / "pebrel"
    if beside.exists():
        return str(beside)
    found = shutil.which("pebrel")
    if found is None:
        raise BenchError("the `pebrel` console script is not installed next to this Python")
    return found


@dataclass
class PebrelPane:
    window_id: int
    pane_id: int

    @property
    def target(self) -> dict[str, int]:
        return {"window_id": self.window_id, "pane_id": self.pane_id}


class PebrelSide:
    """A Pebrel runtime in its own data dir, driven over one persistent connection."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.data_dir = root / "pebrel-data"
        self.data_dir.mkdir()
        self.env = {**env, "PEBREL_DATA_DIR": str(self.data_dir)}
        self.cwd = root / "work"
        self.exe = pebrel_executable()
        self.client: Client | None = None
        self.started = False

    def cli(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return run_command([self.exe, *args], self.env, self.cwd, timeout)

    def start(self) -> None:
        self.started = True
        proc = self.cli("runtime", "start", timeout=60)
        if proc.returncode != 0:
            raise BenchError(f"pebrel runtime start failed: {proc.stdout}{proc.stderr}")
        self.client = Client(self.data_dir, timeout_s=120)

    def reconnect(self) -> None:
        """A fresh connection (after a timeout left a request or a half-read line behind)."""
        if self.client is not None:
            with contextlib.suppress(Exception):
                self.client.close()
        self.client = Client(self.data_dir, timeout_s=120)

    @property
    def token(self) -> str:
        return str(json.loads((self.data_dir / "runtime.port").read_text())["token"])

    @property
    def port(self) -> int:
        return int(json.loads((self.data_dir / "runtime.port").read_text())["port"])

    @property
    def pid(self) -> int:
        return int(json.loads((self.data_dir / "runtime.port").read_text())["pid"])

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        assert self.client is not None
        return self.client.call(method, params or {})

    def ok(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        envelope = self.call(method, params)
        if not envelope.get("ok"):
            raise BenchError(f"{method} failed: {json.dumps(envelope.get('error'))}")
        result: dict[str, Any] = envelope["result"]
        return result

    def new_window(self) -> PebrelPane:
        result = self.ok("window.create", {"cols": COLS, "rows": ROWS, "cwd": str(self.cwd)})
        return PebrelPane(int(result["window_id"]), int(result["pane_id"]))

    def split(self, pane: PebrelPane, direction: str = "down") -> PebrelPane:
        result = self.ok("pane.split", {**pane.target, "direction": direction})
        return PebrelPane(int(result["window_id"]), int(result["pane_id"]))

    def run(self, pane: PebrelPane, command: str) -> dict[str, Any]:
        return self.ok("pane.run", {**pane.target, "command": command, "timeout_ms": 120_000})

    def ready(self, pane: PebrelPane) -> None:
        """Until the pane's shell has drawn its first prompt (a `true` run succeeds)."""
        self.run(pane, "true")

    def settle(self, pane: PebrelPane, timeout_ms: int = 60_000) -> None:
        self.ok("pane.wait", {**pane.target, "state": "settled", "timeout_ms": timeout_ms})

    def prompt(self, pane: PebrelPane, text: str) -> int:
        """Type a line and Enter; retry while a previous input is inside its submit barrier."""
        while True:
            envelope = self.call("pane.prompt", {**pane.target, "text": text})
            if envelope.get("ok"):
                return int(envelope["result"]["state_change_seq"])
            if envelope.get("error", {}).get("code") != "input_in_progress":
                raise BenchError(f"pane.prompt failed: {json.dumps(envelope.get('error'))}")
            time.sleep(0.002)

    def read(self, pane: PebrelPane, lines: int = ROWS) -> str:
        return str(self.ok("pane.read", {**pane.target, "lines": lines})["text"])

    def close_pane(self, pane: PebrelPane) -> None:
        self.call("pane.close", {**pane.target, "confirm": True})

    def close_window(self, window_id: int) -> None:
        self.call("window.close", {"window_id": window_id, "confirm": True})

    def panes(self) -> list[dict[str, Any]]:
        snap = self.ok("runtime.snapshot")
        return [pane for win in snap["windows"] for tab in win["tabs"] for pane in tab["panes"]]

    def shell_pid(self, pane: PebrelPane) -> int:
        for record in self.panes():
            if record["window_id"] == pane.window_id and record["pane_id"] == pane.pane_id:
                return int(record["pid"])
        raise BenchError(f"pane {pane} not in the snapshot")

    def processes(self) -> list[psutil.Process]:
        """Every live process whose environment names this runtime's data dir."""
        marker = f"PEBREL_DATA_DIR={self.data_dir}".encode()
        found = []
        for proc in psutil.process_iter(["pid"]):
            if proc.pid == os.getpid():
                continue
            try:
                with open(f"/proc/{proc.pid}/environ", "rb") as handle:
                    environ = handle.read().split(b"\0")
                if marker in environ and proc.status() != psutil.STATUS_ZOMBIE:
                    found.append(proc)
            except (OSError, psutil.Error):
                continue
        return found

    def stop(self) -> list[str]:
        """Stop the runtime; kill (by pid) anything of this data dir that outlived it."""
        problems: list[str] = []
        if self.client is not None:
            with contextlib.suppress(Exception):
                self.client.close()
            self.client = None
        if not self.started:
            return problems
        try:
            proc = self.cli("runtime", "stop", timeout=60)
            if proc.returncode not in (0, 3):
                problems.append(f"pebrel runtime stop -> {proc.returncode}: {proc.stdout}")
        except subprocess.TimeoutExpired:
            problems.append("pebrel runtime stop timed out")
        end = time.monotonic() + 10
        leftovers = self.processes()
        while leftovers and time.monotonic() < end:
            time.sleep(0.1)
            leftovers = self.processes()
        for leftover in leftovers:
            problems.append(f"killed leftover pid {leftover.pid} {leftover.name()}")
            with contextlib.suppress(psutil.Error):
                leftover.kill()
        return problems
