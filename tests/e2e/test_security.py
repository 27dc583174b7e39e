"""Security checks (docs/protocol.md "Security", #15): a symlinked `runtime.port` or a data
dir of another user is refused, the token shows nowhere but `runtime.port`, and a burst of
wrong-token connections is closed without a byte while authenticated clients are answered.

File modes under umask 000 are tests/e2e/test_lifecycle.py's; the constant-time comparison and
the ownership check without root are tests/unit/test_token_compare.py and
tests/unit/test_datadir_trust.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pebrel import entrypoints
from pebrel.entrypoints import module_argv
from tests.conftest import (
    Runtime,
    at_prompt,
    base_env,
    processes_of,
    stop_and_check,
)
from tests.e2e.test_limits import raise_own_limit
from tests.e2e.test_robustness import pebrel as run_cli
from tests.e2e.test_transport import Wire, port_info
from tests.e2e.test_transport_limits import closed_by_server

pytestmark = pytest.mark.timeout(120)

NOBODY = 65534


def refused(result: subprocess.CompletedProcess[str], why: str) -> None:
    """Exit 3 with a `runtime_unavailable` envelope that says why (docs/protocol.md)."""
    assert result.returncode == 3, result
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "runtime_unavailable", error
    assert why in error["message"], error


@pytest.fixture
def fresh_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = base_env(tmp_path)
    yield env
    stop_and_check(Runtime(Path(env["PEBREL_DATA_DIR"]), env))


# ---- runtime.port a symbolic link --------------------------------------------------------------


def test_start_refuses_a_symlinked_port_file(fresh_env: dict[str, str], tmp_path: Path) -> None:
    """`runtime start` (and the router itself) refuse a runtime.port that is a symbolic link:
    exit 3 (the router alone: 4), nothing started, the link and its target untouched."""
    data = Path(fresh_env["PEBREL_DATA_DIR"])
    target = tmp_path / "elsewhere.json"
    target.write_text("keep\n")
    (data / "runtime.port").symlink_to(target)
    refused(run_cli(fresh_env, "runtime", "start"), "runtime.port is a symbolic link")
    router = subprocess.run(
        module_argv(entrypoints.ROUTER),
        env=fresh_env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert router.returncode == 4, router
    assert "runtime.port is a symbolic link" in router.stderr
    assert target.read_text() == "keep\n"
    assert (data / "runtime.port").is_symlink()
    assert not processes_of(data)


def test_clients_refuse_a_symlinked_port_file(runtime: Runtime, tmp_path: Path) -> None:
    """A runtime.port replaced by a symbolic link (to a file naming another listener) is not
    followed: every CLI call exits 3 and nothing connects to that listener."""
    real = runtime.data_dir / "runtime.port"
    saved = real.read_bytes()
    decoy = socket.create_server(("127.0.0.1", 0))
    decoy.settimeout(0.2)
    target = tmp_path / "decoy.port"
    target.write_text(json.dumps({**json.loads(saved), "port": decoy.getsockname()[1]}))
    real.unlink()
    real.symlink_to(target)
    try:
        for args in (["runtime", "status"], ["pane", "read", "1"], ["pane", "list"]):
            refused(run_cli(runtime.env, *args), "runtime.port is a symbolic link")
        with pytest.raises(TimeoutError):
            decoy.accept()
    finally:
        decoy.close()
        real.unlink()
        real.write_bytes(saved)
        real.chmod(0o600)


# ---- a data dir of another user ----------------------------------------------------------------


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to chown (unit test covers the check)")
def test_a_data_dir_of_another_user_is_refused(fresh_env: dict[str, str]) -> None:
    """A data dir owned by another user is refused by start, stop, status and every client:
    exit 3, nothing started, nothing written into it."""
    data = Path(fresh_env["PEBREL_DATA_DIR"])
    os.chown(data, NOBODY, NOBODY)
    try:
        for args in (["runtime", "start"], ["runtime", "stop"], ["runtime", "status"]):
            refused(run_cli(fresh_env, *args), f"is owned by uid {NOBODY}")
        refused(run_cli(fresh_env, "pane", "read", "1"), f"is owned by uid {NOBODY}")
        assert not list(data.iterdir())
        assert not processes_of(data)
    finally:
        os.chown(data, 0, 0)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to chown (unit test covers the check)")
def test_clients_refuse_a_port_file_of_another_user(runtime: Runtime) -> None:
    """A runtime.port another user owns (they could name their own listener) is not used."""
    port = runtime.data_dir / "runtime.port"
    os.chown(port, NOBODY, NOBODY)
    try:
        refused(run_cli(runtime.env, "pane", "read", "1"), f"is owned by uid {NOBODY}")
    finally:
        os.chown(port, 0, 0)
    assert runtime.cli("pane", "read", "1").code == 0


# ---- the token shows nowhere but runtime.port --------------------------------------------------


def near_miss(token: str) -> str:
    """The token with its last character changed (never the token itself)."""
    return token[:-1] + ("1" if token.endswith("0") else "0")


def provoke_errors(rt: Runtime, token: str) -> list[bytes]:
    """Requests the runtime refuses, with near-miss tokens among them; every byte answered."""
    seen: list[bytes] = []
    for wrong in (token[:-1], token + "0", near_miss(token), token[::-1]):
        with Wire(rt) as wire:
            wire.send("runtime.describe", token=wrong)
            seen.append(wire.read_line())
            assert seen[-1] == b"", seen[-1]
        with Wire(rt) as wire:
            wire.send_raw(f"PING {wrong}\n".encode())
            seen.append(wire.read_line())
    with Wire(rt) as wire:
        wire.send("runtime.describe", request_id=1)
        seen.append(wire.read_line())
        bad: list[tuple[str, Any]] = [
            ("pane.read", {"pane_id": "one"}),
            ("pane.read", {"pane_id": 99}),
            ("pane.run", {"pane_id": 1}),
            ("no.such.method", {}),
            ("pane.exec", {"pane_id": 1, "argv": ["/no/such/program"]}),
            ("window.close", {"window_id": 99}),
        ]
        for index, (method, params) in enumerate(bad, start=2):
            wire.send(method, params, request_id=index)
            seen.append(wire.read_line())
        wire.send_raw(b"{not json\n")
        seen.append(wire.read_line())
        wire.send("runtime.describe", request_id=99, token=token + "x")  # closes it
        seen.append(wire.read_line())
    return seen


def test_the_token_shows_nowhere_but_the_port_file(runtime: Runtime) -> None:
    """Not in `ps` output (arguments and environments), not in runtime.log, snapshots, error
    answers, nor in a pane's environment: panes reach the runtime through the CLI, which
    reads runtime.port (0600) from the data dir."""
    token = port_info(runtime)["token"]
    at_prompt(runtime)
    answers = provoke_errors(runtime, token)
    assert len(answers) > 10
    for line in answers:
        assert token.encode() not in line, line

    snapshot = json.dumps(runtime.snapshot())
    assert token not in snapshot
    assert token not in json.dumps(runtime.ok("runtime.describe"))

    ps = subprocess.run(
        ["ps", "-e", "e", "-ww", "-o", "pid,args"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    assert token not in ps
    processes = processes_of(runtime.data_dir)
    assert len(processes) >= 5  # router, adapter, fork server, worker, shell (and spare)
    for proc in processes:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            for name in ("cmdline", "environ"):
                raw = Path(f"/proc/{proc.pid}/{name}").read_bytes()
                assert token.encode() not in raw, (proc.pid, name)

    env = runtime.ok("pane.exec", {"pane_id": 1, "argv": ["env"]})["stdout"]
    assert "PEBREL_DATA_DIR=" in env  # how a pane finds runtime.port
    assert token not in env
    runtime.run(1, "env; cat /proc/$$/environ | tr '\\0' '\\n'; echo env-done")
    assert token not in runtime.wait_text(1, "env-done")

    log = (runtime.data_dir / "runtime.log").read_text(errors="replace")
    assert "PEBREL_DATA_DIR" in log or "runtime started" in log
    assert token not in log


# ---- a burst of wrong tokens -------------------------------------------------------------------


def test_a_burst_of_wrong_tokens_is_closed_and_others_are_answered(runtime: Runtime) -> None:
    """1,000 connections with wrong tokens (near misses, empty, legacy lines) arrive at once:
    each is closed without a byte, and every request an authenticated client makes meanwhile is
    answered correctly (timings are bench/'s: `python -m bench limits`)."""
    raise_own_limit(1400)
    at_prompt(runtime)
    info = port_info(runtime)
    token = info["token"]
    wrongs = [
        Wire(runtime).request_line("runtime.describe", token=near_miss(token)),
        Wire(runtime).request_line("runtime.describe", token=""),
        Wire(runtime).request_line("runtime.snapshot", token=token * 2),
        f"PING {token[:-1]}\n".encode(),
        b"garbage\n",
    ]
    burst: list[socket.socket] = []
    done = threading.Event()
    errors: list[BaseException] = []

    def flood() -> None:
        try:
            for index in range(1000):
                sock = socket.create_connection(("127.0.0.1", info["port"]), timeout=10)
                burst.append(sock)
                sock.sendall(wrongs[index % len(wrongs)])
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            done.set()

    answered = 0
    thread = threading.Thread(target=flood)
    try:
        with Wire(runtime) as client:
            client.send("runtime.describe", request_id="first")
            assert json.loads(client.read_line())["ok"]
            thread.start()
            while not done.is_set() or answered < 20:
                method, params = (
                    ("pane.read", {"pane_id": 1, "lines": 5})
                    if answered % 2
                    else ("runtime.describe", {})
                )
                client.send(method, params, request_id=answered)
                answer = json.loads(client.read_line(timeout_s=30))
                assert answer["id"] == answered and answer["ok"], answer
                answered += 1
        thread.join(60)
        assert not errors, errors
        assert len(burst) == 1000
        assert all(closed_by_server(sock, 10) for sock in burst)
    finally:
        thread.join(60)
        for sock in burst:
            sock.close()
    assert runtime.ok("runtime.describe")["pid"] == runtime.pid
