"""Defects the chaos runs (tests/chaos) found, each pinned by its own test (issue 15, R1.5)."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from pebrel import entrypoints
from pebrel.client import Client
from tests.conftest import Runtime, base_env, inject_env, started_runtime, wait_for
from tests.e2e.test_robustness import gone, router_children, worker_of

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def slow_rc_runtime(tmp_path: Path) -> Iterator[Runtime]:
    """A runtime with a TMPDIR of its own whose bash panes take 2 s to their first prompt."""
    env = base_env(tmp_path)
    (Path(env["HOME"]) / ".bashrc").write_text("sleep 2\n")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env["TMPDIR"] = str(tmp)
    with started_runtime(env) as rt:
        yield rt
    assert sorted(tmp.iterdir()) == [], "the runtime left files in its TMPDIR"


def temp_files(rt: Runtime) -> list[str]:
    tmp = Path(rt.env["TMPDIR"])
    return sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*") if p.is_file())


def test_a_worker_killed_before_the_first_prompt_leaves_no_key_file(
    slow_rc_runtime: Runtime,
) -> None:
    """A pane worker SIGKILLed while its shell has not drawn its first prompt: the shell's
    key file (which the worker removes at that prompt) used to stay in the temp dir for good,
    one per such kill; it lies in the runtime's ipc dir now, and the router removes it."""
    rt = slow_rc_runtime
    pane_id = rt.ok("pane.split", {"pane_id": 1, "direction": "down"})["pane_id"]
    worker = wait_for(lambda: worker_of(rt, pane_id), 10, "the new pane's worker")
    assert any("key-" in Path(f).name for f in temp_files(rt)), temp_files(rt)
    worker.send_signal(signal.SIGKILL)
    wait_for(lambda: rt.pane(pane_id)["exited"], 15, f"pane {pane_id} marked exited")
    assert not any(f"key-{worker.pid}" in f or "pebrel-key-" in f for f in temp_files(rt))


def test_a_read_on_its_way_to_a_worker_that_dies_is_answered_from_the_kept_screen(
    runtime: Runtime,
) -> None:
    """pane.read waiting on a worker that is SIGKILLed used to answer `invalid_state` ("the
    pane's worker exited"), though a dead worker's pane is readable (docs/protocol.md,
    pane.read): it is answered like any read of that pane now, `exited` and with its reason."""
    # more lines than a published screen holds (120), so that a longer read asks the worker
    runtime.run(1, "seq 1 200; echo before-the-kill")
    runtime.ok("pane.read", {"pane_id": 1, "lines": 50})  # kept: the screen the router holds
    worker = worker_of(runtime, 1)
    worker.send_signal(signal.SIGSTOP)
    try:
        with Client(runtime.data_dir, timeout_s=30) as client:
            # more lines than a published screen holds: asked of the worker, so it waits
            read_id = client.send("pane.read", {"pane_id": 1, "lines": 300})
            # The same connection's next request is answered while the read waits on the
            # stopped worker: by then the read has reached it.
            probe_id = client.send("runtime.snapshot", {})
            first = client.read_line()
            assert first["id"] == probe_id, first
            worker.send_signal(signal.SIGKILL)
            answer = client.read_line()
    finally:
        with contextlib.suppress(psutil.Error):
            worker.send_signal(signal.SIGKILL)
    assert answer["id"] == read_id and answer["ok"], answer
    assert answer["result"]["exited"] is True
    assert "killed by signal 9" in answer["result"]["exit_reason"]


def test_a_read_sent_to_a_dead_worker_before_its_exit_is_known_is_answered(
    runtime: Runtime,
) -> None:
    """A worker that is dead but whose exit the router has not heard yet (the fork server
    reports it): a pane.read sent to it used to answer `invalid_state` ("the pane's worker is
    unreachable") at once; it is answered once the exit is known, from the kept screen."""
    runtime.run(1, "seq 1 200; echo before-the-kill")  # a read of 300 lines asks the worker
    runtime.ok("pane.read", {"pane_id": 1, "lines": 50})
    worker = worker_of(runtime, 1)
    forkserver = router_children(runtime, entrypoints.FORKSERVER)[0]
    forkserver.send_signal(signal.SIGSTOP)  # it cannot report the worker's exit meanwhile
    try:
        worker.send_signal(signal.SIGKILL)
        wait_for(lambda: gone(worker.pid), 10, f"worker {worker.pid} dead")
        with Client(runtime.data_dir, timeout_s=30) as client:
            read_id = client.send("pane.read", {"pane_id": 1, "lines": 300})
            forkserver.send_signal(signal.SIGCONT)
            answer = client.read_line()
    finally:
        forkserver.send_signal(signal.SIGCONT)
    assert answer["id"] == read_id and answer["ok"], answer
    assert answer["result"]["exited"] is True
    assert "killed by signal 9" in answer["result"]["exit_reason"]


def test_a_signal_while_a_loop_closes_is_not_written_to_a_closed_fd(tmp_path: Path) -> None:
    """A signal between an event loop closing its wakeup fd and removing its signal handlers
    (asyncio's order) was written to the closed fd: "Exception ignored ... Bad file
    descriptor" in runtime.log at a chaos run's stop (or, the number reused, a byte into
    another file). Every process now unhooks the wakeup fd before its loop closes."""
    env = {**base_env(tmp_path), **inject_env("signal_as_loop_closes")}
    with started_runtime(env) as rt:
        split = rt.ok("pane.split", {"pane_id": 1, "direction": "down"})
        rt.run(split["pane_id"], "echo a-worker-with-a-loop")
        rt.ok("pane.close", {"pane_id": split["pane_id"], "confirm": True})
    log = (rt.data_dir / "runtime.log").read_text()
    assert "Bad file descriptor" not in log and "Exception ignored" not in log, log
