"""What one runtime takes, and what happens past it (docs/protocol.md "Limits", #15).

The runtime raises its own open-file limit and leaves the user's to the programs in its panes;
a thousand idle authenticated connections and subscribers leave other clients answered; a pane
past the router's descriptors is refused with `action_failed`, never a crash (R1.5, R2.7).
`python -m bench limits` measures the same at full scale (256 panes, timings, memory).
"""

from __future__ import annotations

import contextlib
import resource
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from pebrel import entrypoints, fdlimit
from pebrel.entrypoints import module_argv
from tests.conftest import (
    PEBREL,
    Runtime,
    at_prompt,
    base_env,
    inject_env,
    started_runtime,
    stop_and_check,
)
from tests.e2e.test_transport import Wire, port_info

pytestmark = pytest.mark.timeout(120)

#: The soft limit the runtime below is started with: the common default.
USER_SOFT = 1024


def nofile(pid: int) -> tuple[int, int]:
    """A process's (soft, hard) open-file limit, from /proc."""
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return int(soft), int(hard)
    raise AssertionError("no open-file limit")


def raise_own_limit(needed: int) -> None:
    """This test process opens many sockets itself: raise its soft limit (skip if it cannot)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        if hard != resource.RLIM_INFINITY and hard < needed:
            pytest.skip(f"the hard open-file limit ({hard}) is below {needed}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


def child(rt: Runtime, module: str) -> psutil.Process:
    for proc in psutil.Process(rt.pid).children():
        with contextlib.suppress(psutil.Error):
            if proc.cmdline()[1:4] == module_argv(module)[1:]:
                return proc
    pytest.fail(f"no {module} among the router's children")


@pytest.fixture
def low_limit_runtime(tmp_path: Path) -> Iterator[Runtime]:
    """A runtime started under a 1024 soft open-file limit, as on many CI machines."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2 * USER_SOFT:
        pytest.skip(f"the hard open-file limit ({hard}) leaves nothing to raise")
    env = base_env(tmp_path)
    rt = Runtime(Path(env["PEBREL_DATA_DIR"]), env)
    try:
        started = subprocess.run(
            ["sh", "-c", f'ulimit -Sn {USER_SOFT}; exec "$0" runtime start', PEBREL],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert started.returncode == 0, started
        yield rt
    finally:
        stop_and_check(rt)


def test_the_runtime_raises_its_limit_and_panes_keep_the_users(
    low_limit_runtime: Runtime,
) -> None:
    """#15: router and adapter run with the hard limit (at most 65536); the fork server, the
    pane's shell and a `pane.exec` program keep the 1024 the runtime was started with, and no
    pane sees the variable that carries it."""
    rt = low_limit_runtime
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    raised = fdlimit.target(USER_SOFT, hard)
    assert raised > USER_SOFT
    assert nofile(rt.pid)[0] == raised
    assert nofile(child(rt, entrypoints.ADAPTER).pid)[0] == raised
    assert nofile(child(rt, entrypoints.FORKSERVER).pid)[0] == USER_SOFT
    at_prompt(rt)
    assert nofile(rt.pane(1)["pid"])[0] == USER_SOFT
    ran = rt.ok("pane.exec", {"pane_id": 1, "argv": ["sh", "-c", "ulimit -Sn; env"]})
    lines = ran["stdout"].splitlines()
    assert lines[0] == str(USER_SOFT)
    assert not [line for line in lines if line.startswith(fdlimit.ORIGINAL_ENV)]
    log = (rt.data_dir / "runtime.log").read_text()
    assert f"open-file limit {raised} (was {USER_SOFT}" in log


def test_a_thousand_idle_authenticated_connections(low_limit_runtime: Runtime) -> None:
    """#15: 1,000 authenticated connections held idle, 16 of them subscribers, on a runtime
    started under a 1024-descriptor limit: a new client is answered, and so is each held one."""
    rt = low_limit_runtime
    raise_own_limit(1200)
    at_prompt(rt)
    held: list[Wire] = []
    try:
        for index in range(1000):
            wire = Wire(rt)
            held.append(wire)
            if index % 64 == 0:
                wire.send("events.subscribe", request_id=index)
            else:
                wire.send("runtime.describe", request_id=index)
            assert b'"ok":true' in wire.read_line().replace(b" ", b""), index
        assert rt.ok("runtime.describe")["pid"] == rt.pid
        assert rt.run(1, "echo limits-$((6*7))")["exit_code"] == 0
        rt.wait_text(1, "limits-42")
        for index in range(1, 1000, 37):  # the held connections are answered too
            if index % 64:
                held[index].send("runtime.describe", request_id=f"again-{index}")
                assert b'"ok":true' in held[index].read_line().replace(b" ", b""), index
        for index in range(0, 1000, 64):  # and the subscribers were sent events
            assert b'"type":"event"' in held[index].read_line().replace(b" ", b""), index
    finally:
        for wire in held:
            wire.close()
    assert rt.ok("runtime.describe")["pid"] == rt.pid


@pytest.fixture
def few_router_fds(tmp_path: Path) -> Iterator[Runtime]:
    with started_runtime({**base_env(tmp_path), **inject_env("few_router_fds")}) as rt:
        yield rt


def test_a_pane_past_the_descriptor_limit_is_refused(few_router_fds: Runtime) -> None:
    """#15: with the router's descriptors nearly used up, a new pane answers `action_failed`
    (reason `open_file_limit`, nothing created) instead of crashing the router (ZeroMQ aborts
    on EMFILE); after closing panes new ones start again."""
    rt = few_router_fds
    router = rt.pid
    created: list[int] = []
    refused = None
    for _ in range(80):
        answer = rt.call("window.create")
        if not answer["ok"]:
            refused = answer["error"]
            break
        created.append(answer["result"]["window_id"])
    assert refused is not None, f"no refusal after {len(created)} windows"
    assert created, "refused from the start: the injection's margin is too small"
    assert refused["code"] == "action_failed", refused
    assert refused["details"]["reason"] == "open_file_limit", refused
    assert "too many open files" in refused["message"]
    windows = {w["window_id"] for w in rt.snapshot()["windows"]}
    assert windows == {1, *created}, "a refused window.create left something behind"
    again = rt.call("pane.split", {"window_id": 1, "pane_id": 1, "direction": "right"})
    assert not again["ok"] and again["error"]["code"] == "action_failed", again
    for window_id in created[:4]:
        rt.ok("window.close", {"window_id": window_id, "confirm": True})
    new = rt.ok("window.create")["window_id"]
    rt.run(1, "true", window_id=new)
    assert rt.pid == router


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs ss (iproute2)")
def test_the_listener_queues_bursts_in_the_kernel(runtime: Runtime) -> None:
    """#15: the adapter accepts 16 connections per pass of its loop (a burst of 1,000 wrong
    tokens no longer holds up other clients' answers for the whole burst; bench limits
    measures it), while the kernel still queues as many as it allows (SOMAXCONN)."""
    port = port_info(runtime)["port"]
    listed = subprocess.run(
        ["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, timeout=10, check=True
    ).stdout.split()
    somaxconn = int(Path("/proc/sys/net/core/somaxconn").read_text())
    assert int(listed[2]) == min(socket.SOMAXCONN, somaxconn), listed
