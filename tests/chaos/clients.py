"""The clients of a chaos run: each a thread on its own connection, doing mixed pane work.

Each client works in a window of its own (splits, closes, reads, runs, execs, waits, and
agent turns with the fake AI CLIs of tests/fakes) and sends one request at a time, so every
line it reads must be the answer to that request: any other line is a stray envelope, a
missing line within the request's deadline a lost answer, a closed connection while the
adapter lives a dropped client. Error answers are fine when the schema lists their code for
the method (a pane killed under a `pane.run` answers `invalid_state` or `run_aborted`); an
`internal_error`, or a code the schema does not list, is a violation.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pebrel import schema
from pebrel.client import Client, RuntimeUnavailable
from pebrel.envelope import encode_request
from tests.chaos.runtime import ChaosRuntime

#: Added to a request's own timeout for its client-side deadline: room for a SIGSTOP of the
#: adapter, the router's busy moments on a 2-core machine, and a pane start.
DEADLINE_MARGIN_S = 20.0
#: The timeout the clients give their waiting requests.
WORK_TIMEOUT_MS = 8000
#: How many panes a client keeps in its window at most.
MAX_PANES = 3


def allowed_errors(method: str) -> frozenset[str]:
    """The error codes the schema lets `method` answer, `internal_error` excepted."""
    contract = schema.load_schema()
    codes = set(contract["methods"][method].get("errors", [])) | set(contract["common_errors"])
    return frozenset(codes - {"internal_error"})


@dataclass
class Ledger:
    """Every request's outcome and every violation, shared by the clients and the killer."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    outcomes: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    #: Requests in flight per (window, pane): the killer counts those it interrupts.
    in_flight: Counter[tuple[int, int]] = field(default_factory=Counter)
    interrupted: int = 0

    def count(self, method: str, outcome: str) -> None:
        with self.lock:
            self.outcomes[f"{method} {outcome}"] += 1

    def violation(self, text: str) -> None:
        with self.lock:
            self.violations.append(f"{time.strftime('%H:%M:%S')} {text}")

    def interrupt(self, pane: tuple[int, int]) -> None:
        with self.lock:
            self.interrupted += self.in_flight[pane]

    @property
    def requests(self) -> int:
        return sum(self.outcomes.values())


class Lost(Exception):
    """The connection is out of step (no answer in time, or closed): open a new one."""


class ChaosClient(threading.Thread):
    """One of the run's clients: mixed work in a window of its own until told to stop."""

    def __init__(
        self,
        index: int,
        rt: ChaosRuntime,
        seed: int,
        ledger: Ledger,
        stop: threading.Event,
        agents: bool,
    ) -> None:
        super().__init__(name=f"chaos-client-{index}", daemon=True)
        self.index = index
        self.rt = rt
        self.rng = random.Random(seed)
        self.ledger = ledger
        self.stop = stop
        self.agents = agents
        self.client: Client | None = None
        self.window = 0
        self.panes: list[int] = []
        self.serial = 0
        self.error: BaseException | None = None

    # -- one request -------------------------------------------------------------------------

    def request(self, method: str, params: dict[str, Any], timeout_s: float = 0.0) -> Any:
        """Send one request and read its one answer; the result, or the error's code."""
        if self.client is None:
            self.client = Client(self.rt.data_dir, timeout_s=None)
        client = self.client
        pane = (params.get("window_id", 0), params.get("pane_id", 0))
        deadline = time.monotonic() + timeout_s + DEADLINE_MARGIN_S
        with self.ledger.lock:
            self.ledger.in_flight[pane] += 1
        try:
            request_id = f"c{self.index}-{self.serial}"
            self.serial += 1
            line = encode_request(method, params, request_id=request_id, token=client.info.token)
            try:
                client.sock.settimeout(max(0.01, deadline - time.monotonic()))
                client.sock.sendall(line)
                while True:
                    client.sock.settimeout(max(0.01, deadline - time.monotonic()))
                    envelope = client.read_line()
                    if envelope.get("id") == request_id:
                        return self.judge(method, params, envelope)
                    self.ledger.violation(f"stray envelope while {method} waited: {envelope}")
            except TimeoutError as exc:
                self.ledger.count(method, "no answer")
                self.ledger.violation(f"no answer to {method} {params} within its deadline")
                raise Lost(method) from exc
            except (RuntimeUnavailable, OSError, json.JSONDecodeError) as exc:
                self.ledger.count(method, "closed")
                if not self.rt.ending:
                    self.ledger.violation(f"connection lost during {method} {params}: {exc!r}")
                raise Lost(method) from exc
        finally:
            with self.ledger.lock:
                self.ledger.in_flight[pane] -= 1

    def judge(self, method: str, params: dict[str, Any], envelope: dict[str, Any]) -> Any:
        if envelope.get("ok"):
            self.ledger.count(method, "ok")
            return envelope["result"]
        error = envelope.get("error") or {}
        code = str(error.get("code"))
        self.ledger.count(method, code)
        if code not in allowed_errors(method):
            self.ledger.violation(f"{method} {params} answered {code}: {error.get('message')}")
        return code

    # -- the work ----------------------------------------------------------------------------

    def run(self) -> None:
        try:
            while not self.stop.is_set() and not self.rt.ending:
                try:
                    self.step()
                except Lost:
                    self.reconnect()
        except BaseException as exc:  # reported by the run, which joins every client
            self.error = exc
        finally:
            if self.client is not None:
                self.client.close()

    def reconnect(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
        if self.rt.ending:
            return
        with contextlib.suppress(RuntimeUnavailable, OSError):
            self.client = Client(self.rt.data_dir, timeout_s=None)

    def target(self, pane: int) -> dict[str, Any]:
        return {"window_id": self.window, "pane_id": pane}

    def step(self) -> None:
        if not self.panes:
            self.open_window()
            return
        pane = self.rng.choice(self.panes)
        ops = [
            (self.read, 4),
            (self.run_command, 3),
            (self.exec_command, 3),
            (self.wait_command, 2),
            (self.split, 1 if len(self.panes) < MAX_PANES else 0),
            (self.close, 1 if len(self.panes) > 1 else 0),
            (self.agent_turn, 1 if self.agents else 0),
            (self.collab_read, 1),
        ]
        op = self.rng.choices([o for o, _ in ops], weights=[w for _, w in ops])[0]
        op(pane)

    def forget(self, pane: int, answer: Any) -> bool:
        """Drop a pane that is gone or exited (closing an exited one); True if it was."""
        if answer == "target_not_found":
            with contextlib.suppress(ValueError):
                self.panes.remove(pane)
            if not self.panes:
                self.window = 0
            return True
        if answer == "invalid_state":
            self.request("pane.close", {**self.target(pane), "confirm": True})
            with contextlib.suppress(ValueError):
                self.panes.remove(pane)
            return True
        return False

    def open_window(self) -> None:
        created = self.request("window.create", {})
        if isinstance(created, dict):
            self.window, self.panes = created["window_id"], [created["pane_id"]]

    def collab_read(self, pane: int) -> None:
        """A collab request: answered by the collab service, or INTEGRATION_RUNTIME_UNAVAILABLE
        (retryable) while the router restarts it; never a hang (#16)."""
        self.request("collab.task.list", {})

    def read(self, pane: int) -> None:
        answer = self.request("pane.read", {**self.target(pane), "lines": self.rng.randint(1, 300)})
        if isinstance(answer, dict) and answer.get("exited"):
            self.forget(pane, "invalid_state")
        else:
            self.forget(pane, answer)

    def run_command(self, pane: int) -> None:
        pause = self.rng.choice(["0", "0.2", "1", "2"])
        params = {
            **self.target(pane),
            "command": f"echo run-{self.index}-{self.serial}; sleep {pause}",
            "timeout_ms": WORK_TIMEOUT_MS,
        }
        self.forget(pane, self.request("pane.run", params, WORK_TIMEOUT_MS / 1000))

    def exec_command(self, pane: int) -> None:
        pause = self.rng.choice(["0", "0.3", "1.5"])
        params = {
            **self.target(pane),
            "argv": ["sh", "-c", f"echo exec-{self.index}; sleep {pause}"],
            "timeout_ms": WORK_TIMEOUT_MS,
        }
        self.forget(pane, self.request("pane.exec", params, WORK_TIMEOUT_MS / 1000))

    def wait_command(self, pane: int) -> None:
        typed = self.request("pane.prompt", {**self.target(pane), "text": "sleep 1"})
        if self.forget(pane, typed) or not isinstance(typed, dict):
            return
        params = {
            **self.target(pane),
            "state": "settled",
            "after_seq": typed["state_change_seq"],
            "timeout_ms": WORK_TIMEOUT_MS // 2,
        }
        self.forget(pane, self.request("pane.wait", params, WORK_TIMEOUT_MS / 2000))

    def split(self, pane: int) -> None:
        direction = self.rng.choice(["right", "down"])
        split = self.request("pane.split", {**self.target(pane), "direction": direction})
        if isinstance(split, dict):
            self.panes.append(split["pane_id"])
        else:
            self.forget(pane, split)

    def close(self, pane: int) -> None:
        self.request("pane.close", {**self.target(pane), "confirm": True})
        self.panes.remove(pane)

    def agent_turn(self, pane: int) -> None:
        """Start a fake agent in a new tab of the window, give it one prompt, close it."""
        name = f"chaos-{self.index}-{self.serial}"
        params = {"window_id": self.window, "name": name, "kind": "claude"}
        started = self.request("agent.start", {**params, "ready_timeout_ms": WORK_TIMEOUT_MS})
        if not isinstance(started, dict):
            if started == "target_not_found":
                self.forget(pane, started)
            return
        where = {"window_id": started["window_id"], "pane_id": started["pane_id"]}
        prompted = self.request("agent.prompt", {"agent": name, "text": f"turn {self.serial}"})
        if isinstance(prompted, dict):
            params = {
                "agent": name,
                "state": "completed",
                "after_seq": prompted["state_change_seq"],
                "timeout_ms": WORK_TIMEOUT_MS,
            }
            self.request("agent.wait", params, WORK_TIMEOUT_MS / 1000)
        self.request("pane.close", {**where, "confirm": True})
