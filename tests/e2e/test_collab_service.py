"""The collab service process: routing, caller, supervision, shutdown (FEATURES I1; #16).

`collab.*` requests go through the runtime API to the collab service (its own process, started
and supervised by the router). These tests drive a real runtime: `collab.capabilities` answers
and says who the runtime takes the caller for (the test process is the user, a process in a
pane is that pane); with the service killed, terminal methods keep working, `collab.*` answers
INTEGRATION_RUNTIME_UNAVAILABLE (retryable) at once, a request in flight is answered the same,
and the service comes back with a new pid; `runtime stop` leaves no collab process behind; the
database is private (dir 0700, files 0600).
"""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from pebrel.client import Client
from tests.collab_fixtures import collab_pids, kill_collab, serving
from tests.conftest import (
    Runtime,
    at_prompt,
    base_env,
    inject_env,
    poll_until,
    started_runtime,
    wait_for,
)

pytestmark = pytest.mark.timeout(120)

UNAVAILABLE = "INTEGRATION_RUNTIME_UNAVAILABLE"


def assert_unavailable(envelope: dict[str, Any]) -> None:
    assert envelope["ok"] is False, envelope
    assert envelope["error"]["code"] == UNAVAILABLE, envelope
    assert envelope["error"]["details"]["retryable"] is True, envelope


def test_capabilities_answer_and_name_the_caller(runtime: Runtime, tmp_path: Path) -> None:
    """I1 (#16): the test process is the user; a process started in a pane is that pane."""
    result = wait_for(lambda: serving(runtime), 20, "the collab service")
    assert result["integration_protocol"] == 1 and result["local_only"] is True
    assert isinstance(result["server_version"], str)
    assert result["caller"] == {"kind": "user"}

    split = runtime.ok("pane.split", {"window_id": 1, "pane_id": 1, "direction": "right"})
    pane_id = split["pane_id"]
    at_prompt(runtime, pane_id)
    out = tmp_path / "caller.json"
    script = (
        "import json, sys; from pathlib import Path; from pebrel.client import Client; "
        f"e = Client(Path({str(runtime.data_dir)!r})).call('collab.capabilities', {{}}); "
        f"Path({str(out)!r}).write_text(json.dumps(e))"
    )
    ran = runtime.run(pane_id, f"{sys.executable} -c {json.dumps(script)}")
    assert ran["exit_code"] == 0, (ran, runtime.read_text(pane_id))
    envelope = json.loads(out.read_text())
    assert envelope["ok"], envelope
    assert envelope["result"]["caller"] == {"kind": "pane", "window_id": 1, "pane_id": pane_id}


def test_killed_service_is_unavailable_then_back(runtime: Runtime) -> None:
    """I1 (#16): the runtime outlives its collab service and restarts it."""
    wait_for(lambda: serving(runtime), 20, "the collab service")
    at_prompt(runtime)
    killed = kill_collab(runtime)
    began = time.monotonic()
    assert_unavailable(runtime.call("collab.capabilities", timeout_s=10))
    assert time.monotonic() - began < 5
    # Terminal methods are untouched.
    assert runtime.run(1, "echo still-here")["exit_code"] == 0
    runtime.wait_text(1, "still-here")
    # It comes back, a new process.
    wait_for(lambda: serving(runtime), 20, "the restarted collab service")
    assert collab_pids(runtime) and killed not in collab_pids(runtime)


def test_request_in_flight_when_the_service_dies_is_answered(tmp_path: Path) -> None:
    """I1 (#16): a request the service holds when it is killed is answered, not left hanging."""
    env = {**base_env(tmp_path), **inject_env("collab_request_blocks")}
    with started_runtime(env) as rt:
        wait_for(lambda: serving(rt), 20, "the collab service")
        (rt.data_dir / "collab-block").write_text("")
        answers: list[dict[str, Any]] = []

        def ask() -> None:
            with Client(rt.data_dir, timeout_s=30) as client:
                answers.append(client.call("collab.capabilities", {}))

        asker = threading.Thread(target=ask, daemon=True)
        asker.start()
        in_flight = rt.data_dir / "collab-blocked"
        wait_for(in_flight.exists, 15, "the request to be held by the collab service")
        os.kill(int(in_flight.read_text()), signal.SIGKILL)
        asker.join(15)
        assert not asker.is_alive(), "the request in flight was not answered"
        assert_unavailable(answers[0])
        (rt.data_dir / "collab-block").unlink()
        wait_for(lambda: serving(rt), 20, "the restarted collab service")


def test_a_service_that_cannot_start_leaves_the_runtime_running(tmp_path: Path) -> None:
    """I1 (#16): a collab database that cannot be opened does not stop the runtime."""
    env = {**base_env(tmp_path), **inject_env("collab_store_fails")}
    with started_runtime(env) as rt:
        for _ in range(3):
            assert_unavailable(rt.call("collab.capabilities", timeout_s=20))
        at_prompt(rt)
        assert rt.run(1, "echo fine")["exit_code"] == 0
        assert poll_until(
            lambda: "collab service exited" in (rt.data_dir / "runtime.log").read_text(), 10
        )


def test_stop_leaves_no_collab_process_and_the_database_is_private(tmp_path: Path) -> None:
    """I1, I2 (#16): `runtime stop` ends the service; its files are 0600 in a 0700 dir."""
    env = base_env(tmp_path)
    with started_runtime(env) as rt:
        wait_for(lambda: serving(rt), 20, "the collab service")
        pids = collab_pids(rt)
        assert len(pids) == 1
    # started_runtime's finalizer stopped the runtime and checked for leftovers already;
    # the service was told to stop and closed its database itself.
    log = (Path(env["PEBREL_DATA_DIR"]) / "runtime.log").read_text()
    assert "collab service stopped" in log
    assert not psutil.pid_exists(pids[0]) or psutil.Process(pids[0]).status() == "zombie"
    folder = Path(env["PEBREL_DATA_DIR"]) / "collab"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    files = list(folder.iterdir())
    assert any(f.name == "collab.db" for f in files)
    for file in files:
        assert stat.S_IMODE(file.stat().st_mode) == 0o600, file


def test_the_service_calls_the_runtime_and_sees_its_snapshots(tmp_path: Path) -> None:
    """I1 (#16): the service's Terminal runs runtime methods through the router as the user
    would (errors keep their codes; collab.* is not reachable that way) and gets each new
    snapshot."""
    env = {**base_env(tmp_path), **inject_env("collab_calls_terminal")}
    with started_runtime(env) as rt:
        first = wait_for(lambda: serving(rt), 20, "the collab service")
        calls = first["terminal"]
        assert calls["runtime.snapshot"][0]["ok"] is True
        assert "windows" in calls["runtime.snapshot"][0]["keys"]
        assert calls["pane.read"][0]["ok"] is True and "text" in calls["pane.read"][0]["keys"]
        assert calls["pane.read"][1] == {"ok": False, "code": "target_not_found"}
        assert calls["collab.capabilities"] == [{"ok": False, "code": "method_not_found"}]
        assert first["seen_panes"] == 1
        rt.ok("pane.split", {"window_id": 1, "pane_id": 1, "direction": "down"})
        wait_for(
            lambda: (serving(rt) or {}).get("seen_panes") == 2, 10, "the snapshot with the split"
        )
