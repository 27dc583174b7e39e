"""Robustness of the runtime: real terminals, dying workers and shells, clean stops (R1.5).

Also the CLI's exit statuses (DESIGN "Result shapes") and the discovery file's life cycle
(DESIGN "Data dir and discovery").
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
    stop_and_check,
    wait_for,
)


def gone(pid: int) -> bool:
    """The process no longer runs (a zombie counts as gone)."""
    try:
        status: str = psutil.Process(pid).status()
    except psutil.NoSuchProcess:
        return True
    return bool(status == psutil.STATUS_ZOMBIE)


def cmdline(proc: psutil.Process) -> list[str]:
    try:
        args: list[str] = proc.cmdline()
    except psutil.Error:
        return []
    return args


def started_as(proc: psutil.Process, module: str) -> bool:
    """`proc` runs `python -P -m <module>` (pebrel/entrypoints.py)."""
    return cmdline(proc)[1:4] == module_argv(module)[1:]


def router_children(rt: Runtime, module: str) -> list[psutil.Process]:
    """Children of the router started as `python -P -m <module>`."""
    return [child for child in psutil.Process(rt.pid).children() if started_as(child, module)]


def forkserver_children(rt: Runtime) -> list[psutil.Process]:
    """Children of the router's fork server (`python -P -m pebrel.workers.forkserver`)."""
    return [w for fs in router_children(rt, entrypoints.FORKSERVER) for w in fs.children()]


def pane_workers(rt: Runtime) -> list[psutil.Process]:
    """Pane workers: the fork server's children that run a shell (the spare has none)."""
    return [w for w in forkserver_children(rt) if w.children()]


def spare_workers(rt: Runtime) -> list[psutil.Process]:
    """The fork server's spare: a worker forked ahead of time, waiting for a pane."""
    return [w for w in forkserver_children(rt) if not w.children()]


def worker_of(rt: Runtime, pane_id: int, window_id: int = 1) -> psutil.Process:
    """The pane worker process whose child is the pane's shell."""
    shell_pid = rt.pane(pane_id, window_id)["pid"]
    for worker in pane_workers(rt):
        if shell_pid in [c.pid for c in worker.children()]:
            return worker
    pytest.fail(f"no worker with shell pid {shell_pid} among the fork server's children")


def child_named(parent_pid: int, name: str, args: list[str]) -> psutil.Process | None:
    for child in psutil.Process(parent_pid).children(recursive=True):
        if cmdline(child) == [name, *args]:
            return child
    return None


@pytest.fixture
def fresh_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A pinned environment with an empty data dir; any runtime started in it is stopped."""
    env = base_env(tmp_path)
    yield env
    stop_and_check(Runtime(Path(env["PEBREL_DATA_DIR"]), env))


def pebrel(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PEBREL, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def dead_pid() -> int:
    """A pid that just exited (and was reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def write_stale_port_file(data_dir: Path, pid: int) -> dict[str, Any]:
    info = {
        "port": free_port(),
        "token": "0" * 64,
        "pid": pid,
        "version": "0.0.0",
        "protocol": "nebula.runtime",
        "started_at": time.time() - 3600,
        "runtime_id": "stale0000000000",
    }
    path = data_dir / "runtime.port"
    path.write_text(json.dumps(info))
    path.chmod(0o600)
    return info


# -- a real terminal in every pane ------------------------------------------------------------


def test_pane_has_a_real_tty(runtime: Runtime) -> None:
    """R1.5: the shell's stdin is a pseudo-terminal slave (`tty` prints /dev/pts/N)."""
    runtime.run(1, "tty")
    assert any(re.fullmatch(r"/dev/pts/\d+", line) for line in runtime.read_text(1).split("\n"))


def test_stty_size_matches_the_snapshot(runtime: Runtime) -> None:
    """R1.5: the PTY's window size is the pane's rows and cols from the snapshot."""
    pane = runtime.pane(1)
    runtime.run(1, "stty size")
    assert f"{pane['rows']} {pane['cols']}" in runtime.read_text(1).split("\n")


def test_foreground_job_owns_the_terminal(runtime: Runtime) -> None:
    """R1.5: job control works: a foreground `sleep` is the terminal's foreground group."""
    at_prompt(runtime)
    shell_pid = runtime.pane(1)["pid"]
    sent = runtime.ok("pane.prompt", {"pane_id": 1, "text": "sleep 30"})
    runtime.ok(
        "pane.wait",
        {"pane_id": 1, "state": "running", "after_seq": sent["state_change_seq"] - 1},
    )
    sleep: psutil.Process = wait_for(
        lambda: child_named(shell_pid, "sleep", ["30"]), 10, "sleep 30 under the shell"
    )
    sleep_pgid = os.getpgid(sleep.pid)

    def tpgid() -> int | None:
        out = subprocess.run(
            ["ps", "-o", "tpgid=", "-p", str(shell_pid)], capture_output=True, text=True
        ).stdout.strip()
        return int(out) if out and int(out) == sleep_pgid else None

    assert wait_for(tpgid, 10, f"tpgid of shell {shell_pid} == {sleep_pgid}") == sleep_pgid
    assert sleep_pgid != shell_pid
    assert os.getsid(sleep.pid) == shell_pid


# -- a worker or a shell dies -----------------------------------------------------------------


def kill_worker(rt: Runtime, pane_id: int = 1) -> int:
    """SIGKILL the pane's worker; return the pane's shell pid."""
    at_prompt(rt, pane_id)
    shell_pid: int = rt.pane(pane_id)["pid"]
    worker = worker_of(rt, pane_id)
    worker.send_signal(signal.SIGKILL)
    wait_for(lambda: rt.pane(pane_id)["exited"], 15, f"pane {pane_id} marked exited")
    return shell_pid


def test_killed_worker_marks_pane_exited(runtime: Runtime) -> None:
    """R1.5: a worker killed by SIGKILL -> its pane is exited, with a reason naming the worker."""
    kill_worker(runtime)
    pane = runtime.pane(1)
    assert pane["exited"] is True
    assert pane["exit_reason"] and "worker" in pane["exit_reason"]


def test_killed_worker_takes_its_shell_along(runtime: Runtime) -> None:
    """R1.5: the shell of a pane whose worker died is ended, not left running."""
    shell_pid = kill_worker(runtime)
    wait_for(lambda: gone(shell_pid), 10, f"shell {shell_pid} gone")


def test_runtime_serves_after_a_worker_is_killed(runtime: Runtime) -> None:
    """R1.5: a dead worker never takes the router down: split, create and run still work."""
    kill_worker(runtime)
    split = runtime.ok("pane.split", {"pane_id": 1, "direction": "right"})
    assert runtime.run(split["pane_id"], "echo split-alive")["exit_code"] == 0
    created = runtime.ok("window.create")
    result = runtime.run(created["pane_id"], "echo window-alive", created["window_id"])
    assert result["status"] == "finished" and result["exit_code"] == 0
    assert "window-alive" in runtime.read_text(created["pane_id"], created["window_id"])


def one_spare(rt: Runtime) -> psutil.Process:
    """The fork server's spare, once it has (re)forked it (it waits a moment after a split)."""
    found: list[psutil.Process] = wait_for(
        lambda: (s := spare_workers(rt)) and len(s) == 1 and s, 10, "one spare worker"
    )
    return found[0]


def test_a_new_pane_takes_the_spare_and_a_new_spare_follows(runtime: Runtime) -> None:
    """R3.4: a split is served by the worker forked ahead of time; another one replaces it."""
    spare = one_spare(runtime)
    split = runtime.ok("pane.split", {"pane_id": 1, "direction": "down"})
    assert worker_of(runtime, split["pane_id"]).pid == spare.pid
    assert runtime.run(split["pane_id"], "echo from-the-spare")["exit_code"] == 0
    assert one_spare(runtime).pid != spare.pid


def test_a_killed_spare_is_replaced_and_panes_still_start(runtime: Runtime) -> None:
    """R1.5: a spare that dies unused is not reported as a pane's exit and is replaced."""
    spare = one_spare(runtime)
    spare.kill()
    # Reaped, not just a zombie: a zombie leader's other threads can still hold its pipe open,
    # and a config written then is lost with it (that pane would fail to start, as a worker
    # dying during start does).
    wait_for(lambda: not psutil.pid_exists(spare.pid), 10, f"spare {spare.pid} reaped")
    split = runtime.ok("pane.split", {"pane_id": 1, "direction": "right"})
    assert runtime.run(split["pane_id"], "echo after-spare-died")["exit_code"] == 0
    worker = worker_of(runtime, split["pane_id"])
    assert worker.pid != spare.pid
    assert not runtime.pane(1)["exited"]
    assert one_spare(runtime).pid not in (spare.pid, worker.pid)


def sched_slice(pid: int) -> int | None:
    """The scheduler slice of a process in ns (kernels >= 6.12 show it), or None."""
    try:
        with open(f"/proc/{pid}/sched") as sched:
            for line in sched:
                if line.startswith("se.slice"):
                    return int(line.split(":")[1])
    except OSError:
        pass
    return None


def test_a_starting_worker_gives_its_short_slice_back_at_its_first_prompt(
    runtime: Runtime,
) -> None:
    """Issue 6 item 4: a spare, and the worker it becomes until its shell's first prompt, run
    with short scheduler slices (they yield a core at once to the router, the adapter and the
    client waiting for the pane's answer); a started pane's worker has the default slice, so
    that workers in a flood never compete with the router on equal terms."""
    spare = one_spare(runtime)
    default = sched_slice(os.getpid())
    if sched_slice(spare.pid) is None or default is None:
        pytest.skip("this kernel shows no per-task scheduler slice")
    assert sched_slice(spare.pid) == 100_000
    split = runtime.ok("pane.split", {"pane_id": 1, "direction": "right"})
    assert runtime.run(split["pane_id"], "true")["exit_code"] == 0  # its first prompt came
    worker = worker_of(runtime, split["pane_id"])
    wait_for(lambda: sched_slice(worker.pid) == default, 5, "the worker's default slice")
    shell = runtime.pane(split["pane_id"])["pid"]
    assert sched_slice(shell) == default  # the shell never had the short one


def exit_shell(rt: Runtime) -> int:
    """Split pane 1, make the new pane's shell `exit 0`; return the new pane's id."""
    pane_id: int = rt.ok("pane.split", {"pane_id": 1, "direction": "down"})["pane_id"]
    at_prompt(rt, pane_id)
    rt.run(pane_id, "echo last-words")
    rt.ok("pane.prompt", {"pane_id": pane_id, "text": "exit 0"})
    wait_for(lambda: rt.pane(pane_id)["exited"], 15, f"pane {pane_id} marked exited")
    return pane_id


def test_exited_shell_marks_pane_exited_and_keeps_its_screen(runtime: Runtime) -> None:
    """R1.5, R4.4: `exit 0` -> exited with a reason; pane.read still shows the last screen."""
    pane_id = exit_shell(runtime)
    pane = runtime.pane(pane_id)
    assert pane["exited"] is True and pane["exit_reason"]
    result = runtime.ok("pane.read", {"pane_id": pane_id})
    assert result["exited"] is True
    assert result["exit_reason"] == pane["exit_reason"]
    assert "last-words" in result["lines"]
    assert any(line.endswith("exit 0") for line in result["lines"])


def test_exited_pane_refuses_prompt(runtime: Runtime) -> None:
    """R1.5: typing into an exited pane -> invalid_state, not submitted."""
    pane_id = exit_shell(runtime)
    error = runtime.error("pane.prompt", {"pane_id": pane_id, "text": "echo nobody"})
    assert error["code"] == "invalid_state", error
    assert error["details"]["submitted"] is False


def test_exited_pane_closes_without_confirm(runtime: Runtime) -> None:
    """R3.4: an exited pane is not busy: pane.close needs no confirm."""
    pane_id = exit_shell(runtime)
    runtime.ok("pane.close", {"pane_id": pane_id})
    panes = [p["pane_id"] for t in runtime.snapshot()["windows"][0]["tabs"] for p in t["panes"]]
    assert panes == [1]


# -- runtime stop ends everything -------------------------------------------------------------


def test_stop_ends_detached_and_background_children(runtime: Runtime) -> None:
    """R1.5: `runtime stop` ends nohup, setsid and background jobs, workers, frontend, router."""
    at_prompt(runtime)
    runtime.run(1, "nohup sleep 301 >/dev/null 2>&1 &")
    runtime.run(1, "setsid sleep 302 >/dev/null 2>&1 < /dev/null &")
    runtime.run(1, "sleep 303 &")
    wanted = {"301", "302", "303"}

    def sleeps() -> dict[str, int] | None:
        found = {
            cmd[1]: p.pid
            for p in processes_of(runtime.data_dir)
            if len(cmd := cmdline(p)) == 2 and cmd[0] == "sleep" and cmd[1] in wanted
        }
        return found if set(found) == wanted else None

    pids: dict[str, int] = dict(wait_for(sleeps, 10, "the three sleeps"))
    pids["router"] = runtime.pid
    frontends = router_children(runtime, entrypoints.ADAPTER)
    forkservers = router_children(runtime, entrypoints.FORKSERVER)
    workers = pane_workers(runtime)
    spares = spare_workers(runtime)
    assert len(frontends) == 1 and len(forkservers) == 1 and len(workers) == 1
    assert len(spares) == 1
    pids["frontend"] = frontends[0].pid
    pids["forkserver"] = forkservers[0].pid
    pids["worker"] = workers[0].pid
    pids["spare"] = spares[0].pid
    pids["shell"] = runtime.pane(1)["pid"]
    stopped = runtime.cli("runtime", "stop")
    assert stopped.code == 0, stopped
    wait_for(
        lambda: all(gone(pid) for pid in pids.values()),
        10,
        f"every one of {pids} gone after stop",
    )
    assert not (runtime.data_dir / "runtime.port").exists()


def _slice_ns(pid: int) -> int | None:
    try:
        sched = Path(f"/proc/{pid}/sched").read_text()
    except OSError:
        return None
    for line in sched.splitlines():
        if line.startswith("se.slice"):
            return int(line.split(":")[1])
    return None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/PID/sched is Linux's")
def test_router_and_adapter_ask_for_short_slices_and_workers_do_not(runtime: Runtime) -> None:
    """#6: the processes on every request's path preempt busy pane workers at once (EEVDF
    custom slice); the workers and shells keep the default."""
    router = _slice_ns(runtime.pid)
    if router is None:
        pytest.skip("this kernel shows no per-task slice in /proc/PID/sched")
    adapter = _slice_ns(router_children(runtime, entrypoints.ADAPTER)[0].pid)
    worker = _slice_ns(pane_workers(runtime)[0].pid)
    shell = _slice_ns(runtime.pane(1)["pid"])
    assert worker is not None and shell is not None
    if router == worker:
        pytest.skip("this kernel has no custom slices (EEVDF, Linux >= 6.12)")
    assert router == adapter == 100_000
    assert worker == shell and worker > router


def test_a_killed_frontend_adapter_stops_the_runtime(runtime: Runtime) -> None:
    """R1.5: with its frontend adapter gone no client can reach the runtime, so it stops
    like `runtime stop` (port file removed, every process ended) instead of lingering."""
    runtime.run(1, "sleep 304 &")
    pids = {
        "router": runtime.pid,
        "forkserver": router_children(runtime, entrypoints.FORKSERVER)[0].pid,
        "worker": pane_workers(runtime)[0].pid,
        "shell": runtime.pane(1)["pid"],
    }
    frontend = router_children(runtime, entrypoints.ADAPTER)[0]
    frontend.kill()
    wait_for(
        lambda: all(gone(pid) for pid in pids.values()),
        15,
        f"every one of {pids} gone after the frontend adapter was killed",
    )
    assert not (runtime.data_dir / "runtime.port").exists()
    assert runtime.cli("runtime", "status").code == 3
    log = (runtime.data_dir / "runtime.log").read_text()
    assert "the frontend adapter is gone: stopping the runtime" in log


# -- start, status, stale discovery -----------------------------------------------------------


def test_second_start_reports_the_running_runtime(runtime: Runtime) -> None:
    """DESIGN Processes: `runtime start` is idempotent: the same pid, already_running."""
    pid = runtime.pid
    again = runtime.cli("runtime", "start")
    assert again.code == 0, again
    assert again.json["result"]["already_running"] is True
    assert again.json["result"]["pid"] == pid
    routers = [p.pid for p in processes_of(runtime.data_dir) if started_as(p, entrypoints.ROUTER)]
    assert routers == [pid]


def test_status_exits_0_while_running(runtime: Runtime) -> None:
    """R2.1: `runtime status` -> 0 and the running pid while the runtime answers."""
    status = runtime.cli("runtime", "status")
    assert status.code == 0, status
    assert status.json["ok"] is True
    assert status.json["result"]["pid"] == runtime.pid


def test_status_exits_3_after_stop(runtime: Runtime) -> None:
    """R2.1: after stop, `runtime status` -> 3 with a runtime_unavailable envelope."""
    runtime.cli("runtime", "stop", check=True)
    status = runtime.cli("runtime", "status")
    assert status.code == 3, status
    assert status.json["ok"] is False
    assert status.json["error"]["code"] == "runtime_unavailable"


@pytest.mark.parametrize("owner", ["dead-pid", "foreign-live-pid"])
def test_stale_port_file_is_reported_not_trusted(fresh_env: dict[str, str], owner: str) -> None:
    """DESIGN discovery: a runtime.port of a gone (or unrelated) pid -> status 3."""
    data_dir = Path(fresh_env["PEBREL_DATA_DIR"])
    pid = dead_pid() if owner == "dead-pid" else os.getpid()
    write_stale_port_file(data_dir, pid)
    status = pebrel(fresh_env, "runtime", "status")
    assert status.returncode == 3, status
    assert json.loads(status.stdout)["error"]["code"] == "runtime_unavailable"


@pytest.mark.parametrize("owner", ["dead-pid", "foreign-live-pid"])
def test_start_replaces_a_stale_port_file(fresh_env: dict[str, str], owner: str) -> None:
    """DESIGN discovery: `runtime start` over a stale runtime.port starts and rewrites it."""
    data_dir = Path(fresh_env["PEBREL_DATA_DIR"])
    stale = write_stale_port_file(data_dir, dead_pid() if owner == "dead-pid" else os.getpid())
    started = pebrel(fresh_env, "runtime", "start")
    assert started.returncode == 0, started
    result = json.loads(started.stdout)["result"]
    assert result["already_running"] is False
    info = json.loads((data_dir / "runtime.port").read_text())
    assert info["pid"] == result["pid"] != stale["pid"]
    assert info["runtime_id"] != stale["runtime_id"]
    assert pebrel(fresh_env, "runtime", "status").returncode == 0


def test_stop_never_signals_the_pid_of_a_stale_port_file(fresh_env: dict[str, str]) -> None:
    """DESIGN discovery: `runtime stop` with a stale file naming a live, unrelated process."""
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        write_stale_port_file(Path(fresh_env["PEBREL_DATA_DIR"]), bystander.pid)
        stopped = pebrel(fresh_env, "runtime", "stop")
        assert stopped.returncode == 0, stopped
        assert bystander.poll() is None, "runtime stop killed an unrelated process"
    finally:
        bystander.kill()
        bystander.wait()


def test_concurrent_starts_leave_exactly_one_router(fresh_env: dict[str, str]) -> None:
    """DESIGN Processes: two concurrent `runtime start` -> one runtime, both report it."""
    procs = [
        subprocess.Popen(
            [PEBREL, "runtime", "start"],
            env=fresh_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [proc.communicate(timeout=60) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    pids = {json.loads(out)["result"]["pid"] for out, _ in outputs}
    assert len(pids) == 1
    data_dir = Path(fresh_env["PEBREL_DATA_DIR"])
    assert json.loads((data_dir / "runtime.port").read_text())["pid"] in pids
    routers = [p.pid for p in processes_of(data_dir) if started_as(p, entrypoints.ROUTER)]
    assert routers == list(pids)


# -- CLI exit statuses ------------------------------------------------------------------------


def test_cli_exit_0_on_success(runtime: Runtime) -> None:
    """R2.1: an answered request -> exit 0 and an ok envelope."""
    listed = runtime.cli("pane", "list")
    assert listed.code == 0, listed
    assert [p["pane_id"] for p in listed.json["result"]["panes"]] == [1]


def test_cli_exit_1_on_error_envelope(runtime: Runtime) -> None:
    """R2.1, R2.2: the runtime answered an error -> exit 1, the envelope on stdout."""
    result = runtime.cli("pane", "read", "99")
    assert result.code == 1, result
    assert result.json["ok"] is False
    assert result.json["error"]["code"] == "target_not_found"


def test_cli_exit_2_on_usage_error(runtime: Runtime) -> None:
    """DESIGN Result shapes: a usage error -> exit 2, nothing sent."""
    result = runtime.cli("pane", "read", "notanumber")
    assert result.code == 2, result
    assert result.stdout == ""


def test_cli_exit_3_without_runtime(fresh_env: dict[str, str]) -> None:
    """DESIGN Result shapes: no runtime -> exit 3 with a runtime_unavailable envelope."""
    result = pebrel(fresh_env, "pane", "list")
    assert result.returncode == 3, result
    envelope = json.loads(result.stdout)
    assert envelope["ok"] is False
    assert envelope["error"]["code"] == "runtime_unavailable"
