"""Durability of the collab service (#16 item 6; I2.6, I3.1, I3.4).

The service is SIGKILLed at chosen points by a test-only fault switch
(tests/inject/collab_dies.py), or the whole runtime is: every acknowledged write is there after
the restart, sequences have no gaps or duplicates and keep their event ids, a write retried with
its idempotency key is recorded once, and a text recorded as being written is never written
again.
"""

from __future__ import annotations

import contextlib
import signal
from pathlib import Path
from typing import Any

import psutil
import pytest

from pebrel.client import Client
from tests.agent_fixtures import fake_agents_env, started_runtime
from tests.collab_fixtures import collab, kill_collab, received, serving
from tests.conftest import Runtime, assert_never, base_env, inject_env, processes_of, wait_for

pytestmark = pytest.mark.timeout(300)

UNAVAILABLE = "INTEGRATION_RUNTIME_UNAVAILABLE"


def events(rt: Runtime, group: str = "team") -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    after = 0
    while True:
        page = collab(rt, "events", "list", "--group", group, "--after", str(after),
                      "--limit", "1000")["events"]  # fmt: skip
        if not page:
            return found
        found += page
        after = page[-1]["sequence"]


def gapless(found: list[dict[str, Any]]) -> None:
    assert [e["sequence"] for e in found] == list(range(1, len(found) + 1))
    assert len({e["event_id"] for e in found}) == len(found)


def create(i: int, group: str) -> dict[str, Any]:
    return {"group": group, "title": f"t{i}", "content": f"c{i}", "idempotency_key": f"k{i}"}


def test_acknowledged_writes_and_event_ids_survive_a_kill(tmp_path: Path) -> None:
    with started_runtime(base_env(tmp_path)) as rt:
        wait_for(lambda: serving(rt), 20, "the collab service")
        group = collab(rt, "group", "create", "team")["group"]["group_id"]
        made = [rt.ok("collab.task.create", create(i, group))["task"]["task_id"] for i in range(30)]
        before = events(rt)
        kill_collab(rt)
        wait_for(lambda: serving(rt), 30, "the restarted collab service")
        assert events(rt) == before
        gapless(before)
        listed = collab(rt, "task", "list", "--group", "team")["tasks"]
        assert [t["task_id"] for t in listed] == made


def test_a_burst_killed_in_the_middle_loses_and_doubles_nothing(tmp_path: Path) -> None:
    env = {**base_env(tmp_path), **inject_env("collab_dies")}
    with started_runtime(env) as rt:
        wait_for(lambda: serving(rt), 20, "the collab service")
        group = collab(rt, "group", "create", "team")["group"]["group_id"]
        (rt.data_dir / "collab-die-after-commits").write_text("400")
        answers: dict[int, dict[str, Any]] = {}
        with Client(rt.data_dir, timeout_s=120) as client:
            ids = {client.send("collab.task.create", create(i, group)): i for i in range(1000)}
            while len(answers) < len(ids):
                envelope = client.read_line()
                answers[ids[envelope["id"]]] = envelope
        acknowledged = {i: a["result"]["task"]["task_id"] for i, a in answers.items() if a["ok"]}
        refused = [i for i, a in answers.items() if not a["ok"]]
        assert refused, "the service died during the burst"
        codes = {answers[i]["error"]["code"] for i in refused}
        assert codes == {UNAVAILABLE}, [answers[i]["error"] for i in refused[:3]]
        assert all(answers[i]["error"]["details"]["retryable"] for i in refused)
        assert not (rt.data_dir / "collab-die-after-commits").exists()
        wait_for(lambda: serving(rt), 30, "the restarted collab service")
        retried = {i: rt.ok("collab.task.create", create(i, group))["task"]["task_id"]
                   for i in refused}  # fmt: skip
        for i, task_id in acknowledged.items():  # acknowledged before the kill: still there
            assert rt.ok("collab.task.create", create(i, group))["task"]["task_id"] == task_id
        tasks = collab(rt, "task", "list", "--group", "team")["tasks"]
        assert len(tasks) == 1000
        assert {t["task_id"] for t in tasks} == set(acknowledged.values()) | set(retried.values())
        found = events(rt)
        gapless(found)
        assert [e["kind"] for e in found].count("task.created") == 1000


def assignee(rt: Runtime) -> str:
    wait_for(lambda: serving(rt), 20, "the collab service")
    rt.ok("agent.start", {"name": "worker", "kind": "claude"})
    collab(rt, "group", "create", "team")
    session = collab(rt, "session", "register", "--agent", "worker", "--group", "team")
    return str(session["session"]["session_id"])


def receipt(rt: Runtime, message_id: str) -> dict[str, Any]:
    found: dict[str, Any] = collab(rt, "message", "get", message_id)["message"]["receipt"]
    return found


@pytest.mark.parametrize("switch", ["collab-die-before-write", "collab-die-after-write"])
def test_a_text_being_written_when_the_service_died_is_never_written_again(
    tmp_path: Path, switch: str
) -> None:
    log = tmp_path / "received.jsonl"
    env = {
        **fake_agents_env(tmp_path, FAKE_AGENT_RECEIVED_LOG=str(log), FAKE_AGENT_WORK_MS="50"),
        **inject_env("collab_dies"),
    }
    with started_runtime(env) as rt:
        ses = assignee(rt)
        (rt.data_dir / switch).write_text("")
        made = collab(rt, "task", "create", "--group", "team", "--title", "T",
                      "--content", "MARK-ONCE", "--assignee", ses)  # fmt: skip
        wait_for(lambda: not (rt.data_dir / switch).exists(), 30, "the service to die")
        wait_for(lambda: serving(rt), 30, "the restarted collab service")
        wait_for(lambda: receipt(rt, made["message_id"])["stage"] == "failed", 20, "failed")
        got = receipt(rt, made["message_id"])
        assert "outcome unknown" in (got["reason"] or ""), got
        typed = 0 if switch == "collab-die-before-write" else 1
        wait_for(lambda: len(received(log)) == typed, 20, f"{typed} text(s) typed")
        assert_never(lambda: len(received(log)) != typed, 2.0, "the text typed again")
        assert receipt(rt, made["message_id"])["stage"] == "failed"
        gapless(events(rt))


def test_the_whole_runtime_killed_keeps_every_acknowledged_fact(tmp_path: Path) -> None:
    env = fake_agents_env(tmp_path, FAKE_AGENT_WORK_MS="50")
    with started_runtime(env) as rt:
        ses = assignee(rt)
        made = collab(rt, "task", "create", "--group", "team", "--title", "T",
                      "--content", "c", "--assignee", ses)  # fmt: skip
        before = events(rt)
        for proc in processes_of(rt.data_dir):
            with contextlib.suppress(psutil.Error):
                proc.send_signal(signal.SIGKILL)
        wait_for(lambda: not processes_of(rt.data_dir), 20, "every process gone")
        started = rt.cli("runtime", "start", timeout=60)
        assert started.code == 0, started
        wait_for(lambda: serving(rt), 30, "the collab service of the new runtime")
        after = events(rt)
        assert after[: len(before)] == before
        gapless(after)
        session = collab(rt, "session", "get", ses)["session"]
        assert (session["online"], session["offline_reason"]) == (False, "runtime_restarted")
        task = collab(rt, "task", "get", made["task"]["task_id"])["task"]
        assert task["title"] == "T" and task["current_attempt_id"] == made["attempt_id"]
