"""The two sides of a run: a Pebrel runtime and a private tmux server, started side by side.

Both get the same temp HOME (no user rc files), SHELL=/bin/bash, the same locale and the same
80x24 geometry. Everything started here is stopped by `Bench.close()`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import psutil

from pebrel.client import Client

COLS = 80
ROWS = 24
HISTORY_LINES = 10_000


class MeasurementTimeout(Exception):
    """A measurement ran past its deadline."""


class BenchError(Exception):
    """A measurement could not be taken; the message says why."""


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise MeasurementTimeout("timed out")


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise MeasurementTimeout in the main thread once `seconds` have passed (SIGALRM)."""
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def pebrel_executable() -> str:
    beside = Path(sys.executable).parent / "pebrel"
    if beside.exists():
        return str(beside)
    found = shutil.which("pebrel")
    if found is None:
        raise BenchError("the `pebrel` console script is not installed next to this Python")
    return found


def poll(predicate: Any, timeout_s: float, what: str, interval_s: float = 0.01) -> Any:
    end = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < end:
        last = predicate()
        if last:
            return last
        time.sleep(interval_s)
    raise BenchError(f"timed out after {timeout_s:g}s waiting for {what}")


# --------------------------------------------------------------------------- Pebrel


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
        return subprocess.run(
            [self.exe, *args],
            env=self.env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

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
        for proc in leftovers:
            problems.append(f"killed leftover pid {proc.pid} {proc.name()}")
            with contextlib.suppress(psutil.Error):
                proc.kill()
        return problems


# --------------------------------------------------------------------------- tmux

TMUX_CONF = f"""\
set -g default-shell /bin/bash
set -g default-command "/bin/bash"
set -g history-limit {HISTORY_LINES}
set -g default-size {COLS}x{ROWS}
set -g status off
set -g escape-time 0
set -g remain-on-exit off
"""


PANE_FORMAT = "'#{pane_id} #{pane_pid} #{window_id}'"


class TmuxControl:
    """A persistent `tmux -C` control-mode client (the comparator of a persistent connection)."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin = self.proc.stdin
        self.stdout = self.proc.stdout
        self.buffer = b""
        self._block("attach-session")  # the block answering the command line's own command

    def _line(self) -> bytes:
        while b"\n" not in self.buffer:
            chunk = os.read(self.stdout.fileno(), 65536)
            if not chunk:
                raise BenchError("tmux control client closed its output")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def _block(self, command: str) -> list[str]:
        while True:
            line = self._line()
            if line.startswith(b"%begin"):
                break
        out: list[bytes] = []
        while True:
            line = self._line()
            if line.startswith((b"%end", b"%error")):
                if line.startswith(b"%error"):
                    text = b" ".join(out).decode(errors="replace")
                    raise BenchError(f"tmux {command!r}: {text}")
                return [item.decode(errors="replace") for item in out]
            out.append(line)

    def command(self, command: str) -> list[str]:
        """Run one command; return its output lines (raise on %error)."""
        self.stdin.write(command.encode() + b"\n")
        return self._block(command)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        with contextlib.suppress(OSError):
            self.stdout.close()


@dataclass
class TmuxPane:
    pane_id: str  # "%N"
    pid: int
    window_id: str  # "@N"


class TmuxSide:
    """A private tmux server (`tmux -L pebrel-bench-<pid>`) with the same geometry and env."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.socket = f"pebrel-bench-{os.getpid()}"
        self.tmpdir = root / "tmux"
        self.tmpdir.mkdir()
        self.env = {**env, "TMUX_TMPDIR": str(self.tmpdir)}
        self.env.pop("TMUX", None)
        self.conf = root / "tmux.conf"
        self.conf.write_text(TMUX_CONF)
        self.cwd = root / "work"
        self.exe = shutil.which("tmux") or "tmux"
        self.base = [self.exe, "-L", self.socket, "-f", os.devnull]
        self.ctl: TmuxControl | None = None
        self.started = False
        self.version = ""
        self._signals = 0

    def cli(self, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.base, *args],
            env=self.env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def start(self) -> None:
        self.version = subprocess.run(
            [self.exe, "-V"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
        self.started = True
        # A session the control client attaches to: it never shows measured panes' output.
        proc = self.cli("new-session", "-d", "-s", "ctl", "-x", str(COLS), "-y", str(ROWS))
        if proc.returncode != 0:
            raise BenchError(f"tmux new-session failed: {proc.stderr}")
        # Options are sourced once the server runs: tmux 3.3a crashes on some of them at startup.
        proc = self.cli("source-file", str(self.conf))
        if proc.returncode != 0:
            raise BenchError(f"tmux source-file failed: {proc.stderr}")
        proc = self.cli("new-session", "-d", "-s", "bench", "-x", str(COLS), "-y", str(ROWS))
        if proc.returncode != 0:
            raise BenchError(f"tmux new-session failed: {proc.stderr}")
        self.ctl = TmuxControl([*self.base, "-C", "attach-session", "-t", "ctl"], self.env)
        self.ctl.command("refresh-client -f no-output")

    def command(self, command: str) -> list[str]:
        assert self.ctl is not None
        return self.ctl.command(command)

    def reconnect(self) -> None:
        """A fresh control client (after a timeout left one blocked or mid-answer)."""
        if self.ctl is not None:
            self.ctl.proc.kill()
            self.ctl.close()
        self.ctl = TmuxControl([*self.base, "-C", "attach-session", "-t", "ctl"], self.env)
        self.ctl.command("refresh-client -f no-output")

    def server_pid(self) -> int:
        return int(self.command("display-message -p '#{pid}'")[0])

    def new_window(self, ready: bool = True) -> TmuxPane:
        line = self.command(f"new-window -d -t bench: -c {self.cwd} -P -F {PANE_FORMAT}")[0]
        pane_id, pid, window_id = line.split()
        pane = TmuxPane(pane_id, int(pid), window_id)
        if ready:
            self.ready(pane)
        return pane

    def split(self, pane: TmuxPane, command: str | None = None) -> TmuxPane:
        tail = f" {quote(command)}" if command else ""
        line = self.command(f"split-window -d -t {pane.pane_id} -P -F {PANE_FORMAT}{tail}")[0]
        pane_id, pid, window_id = line.split()
        return TmuxPane(pane_id, int(pid), window_id)

    def wait_for(self, channel: str) -> None:
        """Block until `channel` is signalled.

        In control mode tmux answers `wait-for` at once and holds the client's *next* command
        until the signal: a no-op after it is what really waits.
        """
        self.command(f"wait-for {channel}")
        self.command("display-message -p ok")

    def channel(self) -> str:
        self._signals += 1
        return f"bench-{self._signals}"

    def send(self, pane: TmuxPane, text: str) -> None:
        self.command(f"send-keys -t {pane.pane_id} -l {quote(text)}")
        self.command(f"send-keys -t {pane.pane_id} Enter")

    def run_and_wait(self, pane: TmuxPane, command: str) -> None:
        """Type `command; tmux wait-for -S ch` and block on `wait-for ch`."""
        ch = self.channel()
        self.command(
            f"send-keys -t {pane.pane_id} {quote(f'{command}; tmux wait-for -S {ch}')} Enter"
        )
        self.wait_for(ch)

    def ready(self, pane: TmuxPane) -> None:
        self.run_and_wait(pane, "true")

    def capture(self, pane: TmuxPane) -> str:
        return "\n".join(self.command(f"capture-pane -p -t {pane.pane_id}"))

    def kill_pane(self, pane: TmuxPane) -> None:
        with contextlib.suppress(BenchError):
            self.command(f"kill-pane -t {pane.pane_id}")

    def kill_window(self, window_id: str) -> None:
        with contextlib.suppress(BenchError):
            self.command(f"kill-window -t {window_id}")

    def pane_count(self) -> int:
        return len(self.command("list-panes -a -F '#{pane_id}'"))

    def stop(self) -> list[str]:
        problems: list[str] = []
        if self.ctl is not None:
            self.ctl.close()
            self.ctl = None
        if self.started:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.cli("kill-server", timeout=10)
        return problems


def quote(text: str) -> str:
    """Quote an argument for a tmux command line (single quotes, as in sh)."""
    return "'" + text.replace("'", "'\\''") + "'"


# --------------------------------------------------------------------------- both


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

    def close(self) -> list[str]:
        problems: list[str] = []
        for stop in (self.pebrel.stop, self.tmux.stop):
            try:
                problems.extend(stop())
            except Exception as exc:  # keep stopping the other side
                problems.append(f"{stop.__qualname__}: {exc!r}")
        shutil.rmtree(self.root, ignore_errors=True)
        return problems
