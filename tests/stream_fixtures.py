"""Helpers for end-to-end tests of the durable event stream (#17, I2): a principal with its
credential file, task events made fast as the user, and `events subscribe` run as a process
whose JSON lines are collected as they come."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pebrel.client import Client
from pebrel.integration_client import CREDENTIAL_ENV
from tests.collab_fixtures import serving
from tests.conftest import PEBREL, Runtime, wait_for
from tests.integration_fixtures import (
    Line,
    add_principal,
    group,
    listening,
    signed_in,
    write_credential,
)

RETRYABLE = "INTEGRATION_RUNTIME_UNAVAILABLE"


@dataclass
class Bridge:
    """A principal of one group, able to read tasks and events, with its credential file."""

    rt: Runtime
    group_id: str
    principal: str
    token: str
    credential: Path

    @property
    def env(self) -> dict[str, str]:
        return {**self.rt.env, CREDENTIAL_ENV: str(self.credential)}

    def cli(self, *args: str, timeout: float = 60) -> tuple[int, dict[str, Any]]:
        """`pebrel collab --principal P ARGS`: its status and its one answer line."""
        as_principal = Runtime(self.rt.data_dir, self.env)
        done = as_principal.cli("collab", "--principal", self.principal, *args, timeout=timeout)
        assert done.stdout.strip(), (done.code, done.stderr)
        line: dict[str, Any] = json.loads(done.stdout)
        return done.code, line

    def ack(self, consumer: str, cursor: str) -> tuple[int, dict[str, Any]]:
        return self.cli("events", "ack", cursor, "--consumer", consumer)

    def line(self) -> Line:
        return signed_in(self.rt, self.principal, self.token)


def bridge(rt: Runtime, tmp_path: Path, name: str = "bridge", group_name: str = "team") -> Bridge:
    """A new group and a principal `name` of it (task.read, events.read)."""
    wait_for(lambda: serving(rt), 30, "the collab service")
    listening(rt)
    group_id = group(rt, group_name)
    token = add_principal(rt, group_id, name)
    path = write_credential(tmp_path / f"{name}.credential.json", name, token)
    return Bridge(rt, group_id, name, token, path)


def create_params(group_id: str, i: int, content: str = "c") -> dict[str, Any]:
    return {
        "group": group_id,
        "title": f"t{i}",
        "content": content,
        "idempotency_key": f"task-{group_id}-{i}",
    }


def make_tasks(
    rt: Runtime, group_id: str, start: int, n: int, content: str = "c", batch: int = 200
) -> None:
    """Tasks `start`..`start+n-1` (one `task.created` event each), pipelined as the user; a
    write refused while the service restarts is sent again with its key until it is done."""
    todo = list(range(start, start + n))
    while todo:
        failed: list[int] = []
        try:
            with Client(rt.data_dir, timeout_s=120) as client:
                for at in range(0, len(todo), batch):
                    chunk = todo[at : at + batch]
                    ids = {
                        client.send("collab.task.create", create_params(group_id, i, content)): i
                        for i in chunk
                    }
                    while ids:
                        answer = client.read_line()
                        i = ids.pop(answer["id"])
                        if not answer["ok"]:
                            assert answer["error"]["code"] == RETRYABLE, answer
                            failed.append(i)
        except OSError:
            failed = todo  # the keys make a repeat of a done write harmless
        if failed:
            wait_for(lambda: serving(rt), 60, "the collab service back")
        todo = failed


def journal(rt: Runtime, group_id: str) -> list[dict[str, Any]]:
    """Every retained event of the group, as the user reads them."""
    found: list[dict[str, Any]] = []
    after = 0
    while True:
        page = rt.ok("collab.events.list", {"group": group_id, "after": after, "limit": 1000})
        if not page["events"]:
            return found
        found += page["events"]
        after = page["events"][-1]["sequence"]


class Subscriber:
    """`pebrel collab --principal P events subscribe --consumer C --jsonl [ARGS]`, its output
    lines collected by a thread as they come."""

    def __init__(self, b: Bridge, consumer: str, *args: str) -> None:
        self.proc = subprocess.Popen(
            [PEBREL, "collab", "--principal", b.principal, "events", "subscribe",
             "--consumer", consumer, "--jsonl", *args],
            env=b.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        self.lines: list[dict[str, Any]] = []
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.append(json.loads(raw))

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [line for line in list(self.lines) if line["type"] == kind]

    def events(self) -> list[dict[str, Any]]:
        return self.of("event")

    def wait(self, what: str, predicate: Any, timeout_s: float = 30) -> Any:
        return wait_for(lambda: predicate(self), timeout_s, f"{what}; lines: {self.lines[-5:]}")

    def subscribed(self, times: int = 1) -> None:
        self.wait(
            f"{times} subscribe(s)",
            lambda s: len([x for x in s.of("connection") if x["state"] == "subscribed"]) >= times,
        )

    def exit(self, timeout_s: float = 30) -> int:
        code = self.proc.wait(timeout_s)
        self.reader.join(10)
        return code

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


@contextlib.contextmanager
def subscriber(b: Bridge, consumer: str, *args: str) -> Iterator[Subscriber]:
    sub = Subscriber(b, consumer, *args)
    try:
        yield sub
    finally:
        sub.stop()


def subscribe_line(b: Bridge, consumer: str) -> tuple[Line, dict[str, Any]]:
    """A raw connection with a stream of ``consumer``; the subscribe's result."""
    conn = b.line()
    answer = conn.call(1, "events.subscribe", {"consumer": consumer})
    assert answer["ok"] is True, answer
    return conn, answer["result"]


def read_events(conn: Line, n: int, timeout_s: float = 30) -> list[dict[str, Any]]:
    """The next ``n`` event lines of a raw stream (heartbeats skipped)."""
    found: list[dict[str, Any]] = []
    while len(found) < n:
        line = conn.read(timeout_s)
        assert line["type"] in ("event", "heartbeat"), line
        if line["type"] == "event":
            found.append(line)
    return found
