"""Shared fixtures: a real runtime in a temp data dir, driven through the CLI and the socket.

Every runtime started here is stopped in the finalizer, and the finalizer fails the test if
any process that carries this runtime's data dir in its environment outlived `runtime stop`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from pebrel.client import Client
from pebrel.injection import INJECT_ENV

BIN_DIR = Path(sys.executable).parent
PEBREL = str(BIN_DIR / "pebrel")


def processes_of(data_dir: Path) -> list[psutil.Process]:
    """Every live process whose environment names this data dir (router, workers, shells...)."""
    marker = f"PEBREL_DATA_DIR={data_dir}"
    found = []
    for proc in psutil.process_iter(["pid"]):
        if proc.pid == os.getpid():
            continue
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
            with open(f"/proc/{proc.pid}/environ", "rb") as handle:
                environ = handle.read().split(b"\0")
        except (OSError, psutil.Error):
            continue
        if marker.encode() in environ:
            found.append(proc)
    return found


#: How often the wait helpers below look again: they hold the only pauses of the tests.
POLL_INTERVAL_S = 0.02
#: The same inside an event loop, where the condition is usually a timer of that loop.
ASYNC_POLL_INTERVAL_S = 0.005


def poll_until(
    predicate: Callable[[], Any], timeout_s: float, interval_s: float = POLL_INTERVAL_S
) -> Any:
    """Poll `predicate` until truthy or `timeout_s` has passed; return the last value seen."""
    deadline = time.monotonic() + timeout_s
    while True:
        last = predicate()
        if last or time.monotonic() >= deadline:
            return last
        time.sleep(interval_s)  # the poll interval of the wait helpers


def wait_for(
    predicate: Callable[[], Any], timeout_s: float, what: str, interval_s: float = POLL_INTERVAL_S
) -> Any:
    """Poll `predicate` until truthy; fail with the last value seen (never a bare sleep)."""
    last = poll_until(predicate, timeout_s, interval_s)
    if not last:
        pytest.fail(f"timed out after {timeout_s}s waiting for {what}; last seen: {last!r}")
    return last


def assert_never(
    predicate: Callable[[], Any],
    window_s: float,
    reason: str,
    interval_s: float = POLL_INTERVAL_S,
) -> None:
    """A negative window: fail as soon as `predicate` is truthy within `window_s`.

    Proves that something does not happen; nothing can show that for ever, so the caller
    bounds the window and says in `reason` why it is long enough (what would have happened
    within it, and how soon)."""
    started = time.monotonic()
    seen = poll_until(predicate, window_s, interval_s)
    if seen:
        elapsed = time.monotonic() - started
        pytest.fail(f"happened after {elapsed:.2f}s of a {window_s}s window ({reason}): {seen!r}")


async def poll_until_async(
    predicate: Callable[[], Any], timeout_s: float, interval_s: float = ASYNC_POLL_INTERVAL_S
) -> Any:
    """`poll_until` inside a running event loop: the loop runs its timers while this polls."""
    deadline = time.monotonic() + timeout_s
    while True:
        last = predicate()
        if last or time.monotonic() >= deadline:
            return last
        await asyncio.sleep(interval_s)  # the poll interval of the async wait helpers


async def wait_for_async(
    predicate: Callable[[], Any],
    timeout_s: float,
    what: str,
    interval_s: float = ASYNC_POLL_INTERVAL_S,
) -> Any:
    """`wait_for` inside a running event loop."""
    last = await poll_until_async(predicate, timeout_s, interval_s)
    if not last:
        pytest.fail(f"timed out after {timeout_s}s waiting for {what}; last seen: {last!r}")
    return last


async def assert_never_async(
    predicate: Callable[[], Any],
    window_s: float,
    reason: str,
    interval_s: float = ASYNC_POLL_INTERVAL_S,
) -> None:
    """`assert_never` inside a running event loop (its timers run during the window)."""
    started = time.monotonic()
    seen = await poll_until_async(predicate, window_s, interval_s)
    if seen:
        elapsed = time.monotonic() - started
        pytest.fail(f"happened after {elapsed:.2f}s of a {window_s}s window ({reason}): {seen!r}")


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.stdout)
        return loaded


class Runtime:
    """A running Pebrel runtime of one temp data dir."""

    def __init__(self, data_dir: Path, env: dict[str, str]) -> None:
        self.data_dir = data_dir
        self.env = env
        self._clients: list[Client] = []

    def cli(self, *args: str, timeout: float = 60, check: bool = False, **env: str) -> CliResult:
        proc = subprocess.run(
            [PEBREL, *args],
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        result = CliResult(proc.returncode, proc.stdout, proc.stderr)
        if check and proc.returncode != 0:
            pytest.fail(f"pebrel {' '.join(args)} -> {proc.returncode}: {proc.stdout}{proc.stderr}")
        return result

    def client(self) -> Client:
        client = Client(self.data_dir)
        self._clients.append(client)
        return client

    def call(
        self, method: str, params: dict[str, Any] | None = None, timeout_s: float = 60
    ) -> dict[str, Any]:
        """Send one request on a fresh connection; return the envelope."""
        with Client(self.data_dir, timeout_s=timeout_s) as client:
            return client.call(method, params or {})

    def ok(
        self, method: str, params: dict[str, Any] | None = None, timeout_s: float = 60
    ) -> dict[str, Any]:
        envelope = self.call(method, params, timeout_s)
        assert envelope["ok"], json.dumps(envelope)
        result: dict[str, Any] = envelope["result"]
        return result

    def error(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        envelope = self.call(method, params)
        assert not envelope["ok"], json.dumps(envelope)
        error: dict[str, Any] = envelope["error"]
        return error

    def snapshot(self) -> dict[str, Any]:
        return self.ok("runtime.snapshot")

    def pane(self, pane_id: int, window_id: int = 1) -> dict[str, Any]:
        for win in self.snapshot()["windows"]:
            for tab in win["tabs"]:
                for pane in tab["panes"]:
                    if pane["pane_id"] == pane_id and pane["window_id"] == window_id:
                        return dict(pane)
        raise KeyError((window_id, pane_id))

    def read_text(self, pane_id: int, window_id: int = 1, lines: int = 200) -> str:
        text: str = self.ok(
            "pane.read", {"window_id": window_id, "pane_id": pane_id, "lines": lines}
        )["text"]
        return text

    def wait_text(
        self, pane_id: int, needle: str, window_id: int = 1, timeout_s: float = 15
    ) -> str:
        def seen() -> str | None:
            text = self.read_text(pane_id, window_id)
            return text if needle in text else None

        found: str = wait_for(seen, timeout_s, f"{needle!r} in pane {window_id}:{pane_id}")
        return found

    def run(self, pane_id: int, command: str, window_id: int = 1) -> dict[str, Any]:
        return self.ok("pane.run", {"window_id": window_id, "pane_id": pane_id, "command": command})

    @property
    def pid(self) -> int:
        info = json.loads((self.data_dir / "runtime.port").read_text())
        return int(info["pid"])

    def close_clients(self) -> None:
        for client in self._clients:
            client.close()
        self._clients.clear()


INJECT_DIR = Path(__file__).parent / "inject"


def inject_env(*names: str) -> dict[str, str]:
    """The environment that installs tests/inject/<name>.py into a runtime's processes
    (pebrel/injection.py): merge it into the env a runtime starts with."""
    files = [str(INJECT_DIR / f"{name}.py") for name in names]
    for file in files:
        assert Path(file).is_file(), file
    return {INJECT_ENV: os.pathsep.join(files)}


def base_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    env = {
        "HOME": str(home),
        "PATH": f"{BIN_DIR}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "SHELL": "/bin/bash",
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PEBREL_DATA_DIR": str(data),
    }
    # The runtime's processes take the run's warning filters along (nox runs the newest
    # CPython with DeprecationWarning as an error, in Pebrel's own processes too).
    if "PYTHONWARNINGS" in os.environ:
        env["PYTHONWARNINGS"] = os.environ["PYTHONWARNINGS"]
    for key in (
        "PEBREL_WINDOW_ID",
        "PEBREL_PANE_ID",
        "NEBULA_WINDOW_ID",
        "NEBULA_PANE_ID",
        INJECT_ENV,
    ):
        env.pop(key, None)
    return env


def stop_and_check(rt: Runtime) -> None:
    """Stop the runtime; kill and report anything of this data dir that survived."""
    rt.close_clients()
    rt.cli("runtime", "stop", timeout=60)
    leftovers: list[psutil.Process] = []

    def all_exited() -> bool:
        leftovers[:] = processes_of(rt.data_dir)
        return not leftovers

    if not poll_until(all_exited, 10, interval_s=0.05):
        described = [(p.pid, p.name(), p.cmdline()) for p in leftovers if p.is_running()]
        for proc in leftovers:
            with contextlib.suppress(psutil.Error):
                proc.send_signal(signal.SIGKILL)
        pytest.fail(f"processes outlived `pebrel runtime stop`: {described}")


@pytest.fixture
def runtime_env(tmp_path: Path) -> dict[str, str]:
    return base_env(tmp_path)


@contextlib.contextmanager
def started_runtime(env: dict[str, str]) -> Iterator[Runtime]:
    """A runtime of env's data dir, started, then stopped and checked for leftovers."""
    rt = Runtime(Path(env["PEBREL_DATA_DIR"]), env)
    started = rt.cli("runtime", "start", timeout=60)
    try:
        assert started.code == 0, started
        yield rt
    finally:
        stop_and_check(rt)


@pytest.fixture
def runtime(tmp_path: Path, runtime_env: dict[str, str]) -> Iterator[Runtime]:
    """A started runtime (window 1, one pane running bash); stopped and checked afterwards."""
    with started_runtime(runtime_env) as rt:
        yield rt


def at_prompt(rt: Runtime, pane_id: int = 1, window_id: int = 1) -> None:
    """Wait until a pane's shell has drawn its first prompt (a `true` run succeeds)."""
    rt.run(pane_id, "true", window_id)


def prompt_read(rt: Runtime, pane_id: int = 1, lines: int = 120) -> dict[str, Any]:
    """A read of the pane once its last line is a prompt (`#` or `$` at the end): pane.run
    answers at the command's end, and the next prompt's screen may still be on its way to the
    router (docs/protocol.md, "How fresh a read is")."""

    def drawn() -> dict[str, Any] | None:
        read = rt.ok("pane.read", {"pane_id": pane_id, "lines": lines})
        last = read["lines"][-1].rstrip() if read["lines"] else ""
        return read if last.endswith(("#", "$")) else None

    found: dict[str, Any] = wait_for(drawn, 10, f"a prompt at the end of pane {pane_id}")
    return found
