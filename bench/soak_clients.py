"""The soak's clients: one thread per client, each on its own persistent connection, doing one
kind of work in a loop with a think time between requests, and checking every answer.

An error is any error envelope, a lost connection, no answer within the request deadline, or a
wrong answer (a `pane.run` or `pane.exec` exit code or output that is not the one asked for, a
snapshot missing a long-lived pane, an agent turn whose final message is not its prompt's, an
event whose revision went backwards). Errors seen after the soak began stopping are not counted.
"""

from __future__ import annotations

import contextlib
import json
import random
import socket
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pebrel.client import Client

#: Deadline of one request (waiting calls add their own timeout).
REQUEST_TIMEOUT_S = 60.0
MAX_KEPT_ERRORS = 50


class WrongAnswer(Exception):
    """The runtime answered, but not what the request asked for."""


@dataclass
class Stats:
    """Latencies and errors of every client, shared by all threads (one lock)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    minute: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: int = 0
    minute_errors: int = 0
    events: int = 0
    kept: list[str] = field(default_factory=list)

    def ok(self, method: str, ms: float) -> None:
        with self.lock:
            self.latencies[method].append(ms)
            self.minute[method].append(ms)

    def error(self, where: str, text: str) -> None:
        with self.lock:
            self.errors += 1
            self.minute_errors += 1
            if len(self.kept) < MAX_KEPT_ERRORS:
                self.kept.append(f"{time.strftime('%H:%M:%S')} {where}: {text}")

    def take_minute(self) -> tuple[dict[str, list[float]], int]:
        with self.lock:
            minute, errors = dict(self.minute), self.minute_errors
            self.minute = defaultdict(list)
            self.minute_errors = 0
        return minute, errors


@dataclass
class Target:
    window_id: int
    pane_id: int

    @property
    def p(self) -> dict[str, int]:
        return {"window_id": self.window_id, "pane_id": self.pane_id}


@dataclass
class Plan:
    """The long-lived panes by role, made by the setup (bench/soak.py)."""

    printers: list[Target]
    bursty: list[Target]
    idle: list[Target]  # also the base panes of the churn windows
    runners: list[Target]
    agents: list[str]
    rows: int

    @property
    def all(self) -> list[Target]:
        return [*self.printers, *self.bursty, *self.idle, *self.runners]


class Worker(threading.Thread):
    """One client: a connection, a loop of `step()`s, think time in between."""

    def __init__(
        self,
        name: str,
        data_dir: Path,
        stats: Stats,
        stop: threading.Event,
        think_s: float,
        step: Callable[[Worker], None],
    ) -> None:
        super().__init__(name=name, daemon=True)
        self.data_dir, self.stats, self.stop, self.think_s = data_dir, stats, stop, think_s
        self.step_fn = step
        self.rng = random.Random(name)
        self.client: Client | None = None
        self.counter = 0

    def connect(self) -> Client:
        if self.client is None:
            self.client = Client(self.data_dir, timeout_s=REQUEST_TIMEOUT_S)
        return self.client

    def drop(self) -> None:
        if self.client is not None:
            with contextlib.suppress(Exception):
                self.client.close()
        self.client = None

    def interrupt(self) -> None:
        """Unblock a read in progress (at the end of the soak)."""
        if self.client is not None:
            with contextlib.suppress(OSError):
                self.client.sock.shutdown(socket.SHUT_RDWR)

    def call(self, method: str, params: dict[str, Any], wait_s: float = 0.0) -> dict[str, Any]:
        """One request; its answer's result, or WrongAnswer/an exception (counted by run)."""
        client = self.connect()
        started = time.perf_counter()
        envelope = client.call(method, params, timeout_s=REQUEST_TIMEOUT_S + wait_s)
        ms = (time.perf_counter() - started) * 1000
        if not envelope.get("ok"):
            raise WrongAnswer(f"{method} error {json.dumps(envelope.get('error'))[:400]}")
        self.stats.ok(method, ms)
        result: dict[str, Any] = envelope["result"]
        return result

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.step_fn(self)
            except Exception as exc:
                if self.stop.is_set():
                    break
                self.stats.error(self.name, f"{type(exc).__name__}: {exc}"[:600])
                self.drop()  # a half-read answer must not be taken for the next one's
            self.counter += 1
            self.stop.wait(self.rng.uniform(0.5, 1.5) * self.think_s)
        self.drop()


def expect(condition: bool, text: str) -> None:
    if not condition:
        raise WrongAnswer(text)


# --------------------------------------------------------------------------- the roles


def reader(plan: Plan) -> Callable[[Worker], None]:
    def step(w: Worker) -> None:
        if w.rng.random() < 0.25:
            pane = w.rng.choice([*plan.printers, *plan.bursty, *plan.runners])
            result = w.call("pane.read", {**pane.p, "screen": True})
            expect(len(result["lines"]) == plan.rows, f"screen read of {pane}: wrong row count")
            return
        pane = w.rng.choice(plan.all)
        result = w.call("pane.read", {**pane.p, "lines": w.rng.choice([5, 24, 200, 2000])})
        expect(isinstance(result.get("text"), str), f"pane.read of {pane}: no text")

    return step


def snapshotter(plan: Plan) -> Callable[[Worker], None]:
    wanted = {(t.window_id, t.pane_id) for t in plan.all}
    state = {"revision": 0}

    def step(w: Worker) -> None:
        snap = w.call("runtime.snapshot", {})
        panes = {
            (p["window_id"], p["pane_id"]): p
            for win in snap["windows"]
            for tab in win["tabs"]
            for p in tab["panes"]
        }
        missing = wanted - set(panes)
        expect(not missing, f"snapshot lacks long-lived panes {sorted(missing)}")
        dead = [k for k in wanted if panes[k]["exited"]]
        expect(not dead, f"long-lived panes exited: {dead}")
        expect(snap["revision"] >= state["revision"], "snapshot revision went backwards")
        state["revision"] = snap["revision"]

    return step


def runner(pane: Target) -> Callable[[Worker], None]:
    def step(w: Worker) -> None:
        code = w.rng.choice([0, 0, 0, 1, 3, 42])
        result = w.call(
            "pane.run",
            {**pane.p, "command": f"echo run-{w.counter}; (exit {code})", "timeout_ms": 30_000},
            wait_s=30,
        )
        status = "finished" if code == 0 else "failed"
        expect(
            (result["status"], result["exit_code"]) == (status, code),
            f"pane.run (exit {code}) on {pane} -> {result['status']} {result['exit_code']}",
        )
        if w.counter % 4 == 0:
            waited = w.call(
                "pane.wait", {**pane.p, "state": "settled", "timeout_ms": 10_000}, wait_s=10
            )
            expect(waited["state"] != "running", f"pane.wait settled on {pane}: {waited}")

    return step


def executor(plan: Plan) -> Callable[[Worker], None]:
    def step(w: Worker) -> None:
        pane = w.rng.choice(plan.all)
        code = w.rng.choice([0, 0, 1, 7])
        token = f"exec-{w.name}-{w.counter}"
        argv = ["sh", "-c", 'printf %s "$1"; exit "$2"', "sh", token, str(code)]
        result = w.call("pane.exec", {**pane.p, "argv": argv, "timeout_ms": 30_000}, wait_s=30)
        expect(
            (result["exit_code"], result["stdout"]) == (code, token),
            f"pane.exec on {pane}: {result['exit_code']} {result['stdout']!r}",
        )

    return step


def waiter(plan: Plan) -> Callable[[Worker], None]:
    def step(w: Worker) -> None:
        if w.rng.random() < 0.5:
            pane, state = w.rng.choice(plan.idle), "settled"
        else:
            pane, state = w.rng.choice(plan.printers), "running"
        result = w.call("pane.wait", {**pane.p, "state": state, "timeout_ms": 10_000}, wait_s=10)
        ok = result["state"] != "running" if state == "settled" else result["state"] == state
        expect(ok, f"pane.wait {state} on {pane}: {result['state']}")

    return step


def agent_turns(name: str) -> Callable[[Worker], None]:
    def step(w: Worker) -> None:
        text = f"turn {w.counter} of {name}"
        sent = w.call("agent.prompt", {"agent": name, "text": text})
        expect(sent["submitted"] is True, f"agent.prompt {name}: not submitted")
        done = w.call(
            "agent.wait",
            {
                "agent": name,
                "generation": sent["generation"],
                "state": "completed",
                "after_seq": sent["state_change_seq"],
                "timeout_ms": 60_000,
            },
            wait_s=60,
        )
        expect(
            done.get("last_message") == f"final: {text}",
            f"agent {name}: last_message {done.get('last_message')!r}",
        )

    return step


def tab_churn(base: Target, cols: int, rows: int) -> Callable[[Worker], None]:
    def step(w: Worker) -> None:
        tab = w.call("tab.new", {"window_id": base.window_id, "cols": cols, "rows": rows})
        first = Target(base.window_id, int(tab["pane_id"]))
        split = w.call("pane.split", {**first.p, "direction": "down"})
        second = Target(base.window_id, int(split["pane_id"]))
        done = w.call("pane.run", {**second.p, "command": "true", "timeout_ms": 30_000}, wait_s=30)
        expect(done["exit_code"] == 0, f"pane.run true in a new pane: {done}")
        w.call(
            "tab.close",
            {"window_id": base.window_id, "tab_index": int(tab["tab_index"]), "confirm": True},
        )

    return step


def pane_churn(base: Target) -> Callable[[Worker], None]:
    def step(w: Worker) -> None:
        split = w.call("pane.split", {**base.p, "direction": w.rng.choice(["down", "right"])})
        pane = Target(base.window_id, int(split["pane_id"]))
        if w.counter % 2 == 0:
            done = w.call(
                "pane.run", {**pane.p, "command": "true", "timeout_ms": 30_000}, wait_s=30
            )
            expect(done["exit_code"] == 0, f"pane.run true in a new pane: {done}")
        w.call("pane.close", {**pane.p, "confirm": True})

    return step


class Subscriber(threading.Thread):
    """events.subscribe on its own connection; reads every event, checks the revisions."""

    def __init__(self, name: str, data_dir: Path, stats: Stats, stop: threading.Event) -> None:
        super().__init__(name=name, daemon=True)
        self.data_dir, self.stats, self.stop = data_dir, stats, stop
        self.client: Client | None = None

    def interrupt(self) -> None:
        if self.client is not None:
            with contextlib.suppress(OSError):
                self.client.sock.shutdown(socket.SHUT_RDWR)

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self._follow()
            except Exception as exc:
                if self.stop.is_set():
                    break
                self.stats.error(self.name, f"{type(exc).__name__}: {exc}"[:600])
            if self.client is not None:
                with contextlib.suppress(Exception):
                    self.client.close()
                self.client = None

    def _follow(self) -> None:
        # Events come only on a change; the churners change the layout every few seconds.
        self.client = Client(self.data_dir, timeout_s=600)
        started = time.perf_counter()
        ack = self.client.call("events.subscribe", {})
        if not ack.get("ok"):
            raise WrongAnswer(f"events.subscribe error {ack.get('error')}")
        self.stats.ok("events.subscribe", (time.perf_counter() - started) * 1000)
        revision = int(ack["result"]["revision"])
        while not self.stop.is_set():
            line = self.client.read_line()
            if line.get("type") != "event":
                raise WrongAnswer(f"subscriber got {json.dumps(line)[:300]}")
            if int(line["revision"]) < revision:
                raise WrongAnswer(f"event revision {line['revision']} after {revision}")
            revision = int(line["revision"])
            with self.stats.lock:
                self.stats.events += 1
