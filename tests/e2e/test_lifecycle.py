"""The runtime's life cycle and files (R1.5, DESIGN "Data dir and discovery"): stopping a
runtime that does not answer, file modes under any umask, no symlinked log, no ipc dir left
after a kill, and what a pane says when the fork server dies (#15)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from pebrel import entrypoints
from pebrel.entrypoints import module_argv
from tests.conftest import (
    PEBREL,
    Runtime,
    at_prompt,
    base_env,
    processes_of,
    started_runtime,
    stop_and_check,
    wait_for,
)

pytestmark = pytest.mark.timeout(60)


def router_child(rt: Runtime, module: str) -> psutil.Process:
    """The router's child started as `python -P -m <module>`."""
    for child in psutil.Process(rt.pid).children():
        try:
            if child.cmdline()[1:4] == module_argv(module)[1:]:
                return child
        except psutil.Error:
            continue
    pytest.fail(f"no {module} among the router's children")


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def fresh_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A pinned environment with an empty data dir; any runtime started in it is stopped."""
    env = base_env(tmp_path)
    yield env
    stop_and_check(Runtime(Path(env["PEBREL_DATA_DIR"]), env))


def test_stop_ends_a_runtime_that_does_not_answer(runtime: Runtime) -> None:
    """R1.5, #15: with its adapter stopped (SIGSTOP) the runtime does not answer; `status`
    says running but not answering, `stop` ends every process of it, `start` works again."""
    router = runtime.pid
    processes = {p.pid for p in processes_of(runtime.data_dir)}
    router_child(runtime, entrypoints.ADAPTER).send_signal(signal.SIGSTOP)

    status = runtime.cli("runtime", "status")
    assert status.code == 3, status
    error = status.json["error"]
    assert error["code"] == "runtime_unavailable"
    assert error["details"] == {"status": "not_answering", "pid": router}
    assert "running but not answering" in error["message"]

    stopped = runtime.cli("runtime", "stop", timeout=40)
    assert stopped.code == 0, stopped
    result = stopped.json["result"]
    assert result["was_running"] is True and result["pid"] == router
    assert result["answered"] is False and "stale" not in result
    assert not processes_of(runtime.data_dir), "stop returned before the runtime ended"
    assert all(
        not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie" for pid in processes
    )
    assert not (runtime.data_dir / "runtime.port").exists()
    after = runtime.cli("runtime", "status")
    assert after.code == 3 and after.json["error"]["details"]["status"] == "stopped", after

    again = runtime.cli("runtime", "start")
    assert again.code == 0, again
    assert again.json["result"]["already_running"] is False
    assert runtime.pid != router


def test_start_refuses_while_a_runtime_does_not_answer(runtime: Runtime) -> None:
    """#15: `start` over a runtime that runs but does not answer says so (exit 3) and starts
    no second router."""
    router = runtime.pid
    router_child(runtime, entrypoints.ADAPTER).send_signal(signal.SIGSTOP)
    started = runtime.cli("runtime", "start")
    assert started.code == 3, started
    assert started.json["error"]["details"] == {"status": "not_answering", "pid": router}
    routers = [
        p
        for p in processes_of(runtime.data_dir)
        if p.cmdline()[1:4] == module_argv(entrypoints.ROUTER)[1:]
    ]
    assert [p.pid for p in routers] == [router]


def test_files_are_private_under_umask_000(tmp_path: Path) -> None:
    """#15: under umask 000 the data dir (and the parents it creates), runtime.log, the lock
    files and runtime.port are still private (0700 / 0600)."""
    env = base_env(tmp_path)
    data = tmp_path / "deep" / "er" / "data"
    env["PEBREL_DATA_DIR"] = str(data)
    rt = Runtime(data, env)
    try:
        started = subprocess.run(
            ["sh", "-c", 'umask 000; exec "$0" runtime start', PEBREL],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert started.returncode == 0, started
        assert {mode(d) for d in (data, data.parent, data.parent.parent)} == {0o700}
        for name in ("runtime.log", "start.lock", "runtime.lock", "runtime.port"):
            assert mode(data / name) == 0o600, name
    finally:
        stop_and_check(rt)


def test_a_symlinked_log_is_refused(fresh_env: dict[str, str], tmp_path: Path) -> None:
    """#15: a runtime.log that is a symbolic link is never written through: `start` fails with
    exit 3 and says why; the link's target is untouched and no process is left."""
    data = Path(fresh_env["PEBREL_DATA_DIR"])
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep\n")
    (data / "runtime.log").symlink_to(target)
    started = subprocess.run(
        [PEBREL, "runtime", "start"],
        env=fresh_env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert started.returncode == 3, started
    error = json.loads(started.stdout)["error"]
    assert error["code"] == "runtime_unavailable"
    assert "symbolic link" in error["message"] and "runtime.log" in error["message"]
    assert target.read_text() == "keep\n"
    assert (data / "runtime.log").is_symlink()
    assert not processes_of(data)


@pytest.mark.parametrize("then", ["start", "stop"])
def test_ipc_dir_of_a_killed_router_is_removed(runtime: Runtime, then: str) -> None:
    """#15: a router killed with SIGKILL leaves its ipc dir; the next start (or a stop, which
    finds no runtime) removes it."""
    ipc_dir = Path(json.loads((runtime.data_dir / "runtime.lock").read_text())["ipc_dir"])
    assert ipc_dir.is_dir()
    router = psutil.Process(runtime.pid)
    router.kill()
    router.wait(10)
    # Its adapter, fork server and workers end with it (parent-death signal).
    wait_for(lambda: not processes_of(runtime.data_dir), 15, "the killed runtime's processes gone")
    assert ipc_dir.is_dir()
    result = runtime.cli("runtime", then)
    assert result.code == 0, result
    if then == "stop":
        assert result.json["result"] == {"status": "stopped", "was_running": False, "stale": True}
    assert not ipc_dir.exists()


def test_panes_say_the_fork_server_died(runtime: Runtime) -> None:
    """#15, R1.5: a killed fork server ends its workers; their panes say so in `exit_reason`,
    and the runtime starts new panes through a new fork server."""
    at_prompt(runtime)
    forkserver = router_child(runtime, entrypoints.FORKSERVER)
    forkserver.kill()
    wait_for(lambda: runtime.pane(1)["exited"], 15, "pane 1 exited")
    assert runtime.pane(1)["exit_reason"] == "the fork server exited (killed by signal 9)"
    pane_id = runtime.ok("tab.new", {"window_id": 1})["pane_id"]
    at_prompt(runtime, pane_id)
    assert not runtime.pane(pane_id)["exited"]


def test_started_runtime_records_its_router(tmp_path: Path) -> None:
    """#15: runtime.lock names the router holding it (how stop finds one that does not answer)."""
    with started_runtime(base_env(tmp_path)) as rt:
        record = json.loads((rt.data_dir / "runtime.lock").read_text())
        assert record["pid"] == rt.pid
