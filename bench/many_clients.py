"""The client processes of the many-readers phase (bench/load_many.py): each one a process of its
own (a Python client per connection, so the client side is not what is measured on two cores),
on its own connection, alternating a read of a random flooded pane with the runtime-wide listing
for the measuring window, and handing back its latencies and failures.

Three kinds of client: `pebrel` (one persistent JSON Lines connection: `pane.read lines=24`,
`runtime.snapshot`), `tmux` (a new `tmux capture-pane -p` / `tmux list-panes -a` client process
per request) and `tmux-c` (one persistent `tmux -C` control client). The processes are forked
(a spawned one would not find `bench`: bench/__init__.py takes the repository root off
`sys.path`), and each opens its own connection after the fork.
"""

from __future__ import annotations

import json
import random
import socket
import subprocess
import time
from dataclasses import dataclass, field
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from typing import Any

from bench.common import BenchError, MeasurementTimeout, deadline
from bench.tmux_side import TmuxControl
from bench.wire import _request

#: The pause after each request (a client polling, not a tight loop of its own).
GAP_S = 0.005
#: How long a client waits for the signal to start once it is connected.
GO_TIMEOUT_S = 120.0


@dataclass
class Spec:
    """What one client process does: its kind, its panes, where to connect, for how long."""

    kind: str  # "pebrel", "tmux" (a new client process per request) or "tmux-c"
    index: int
    seconds: float
    timeout_s: float
    needle: str  # every read of a flooded pane must show it
    pebrel_targets: list[tuple[int, int]] = field(default_factory=list)  # (window, pane)
    port: int = 0
    token: str = ""
    tmux_panes: list[str] = field(default_factory=list)  # "%N"
    tmux_base: list[str] = field(default_factory=list)  # tmux -L SOCKET -f /dev/null
    tmux_env: dict[str, str] = field(default_factory=dict)


@dataclass
class Outcome:
    """What one client saw: the latencies (ms; a failed request too, a timed-out one at its
    deadline), the reasons of its failures, and the age of the screens Pebrel's reads answered
    with (ms from `screen_captured_at` to the answer's arrival)."""

    reads: list[float] = field(default_factory=list)
    lists: list[float] = field(default_factory=list)
    read_failures: list[str] = field(default_factory=list)
    list_failures: list[str] = field(default_factory=list)
    ages: list[float] = field(default_factory=list)


class _Pebrel:
    """One persistent connection to the runtime (a raw socket: no import of pebrel)."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.sock = socket.create_connection(("127.0.0.1", spec.port), timeout=spec.timeout_s)
        self.reader = self.sock.makefile("rb")
        self.next_id = 0

    def close(self) -> None:
        self.reader.close()
        self.sock.close()

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        self.sock.sendall(_request(self.spec.token, self.next_id, method, params))
        while True:
            line = self.reader.readline()
            if not line:
                raise BenchError("the runtime closed the connection")
            envelope: dict[str, Any] = json.loads(line)
            if envelope.get("id") == self.next_id:
                return envelope


def _envelope_problem(envelope: dict[str, Any]) -> str | None:
    if envelope.get("ok"):
        return None
    error = envelope.get("error")
    if isinstance(error, dict):
        return f"error {error.get('code')}: {str(error.get('message'))[:120]}"
    return f"error envelope without an error: {json.dumps(envelope)[:160]}"


class _Client:
    """A client of one kind: open, read a pane, list the panes, reopen after a broken request."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.rng = random.Random(spec.index * 7919 + 17)
        self.pebrel: _Pebrel | None = None
        self.ctl: TmuxControl | None = None
        self.open()

    def open(self) -> None:
        if self.spec.kind == "pebrel":
            self.pebrel = _Pebrel(self.spec)
        elif self.spec.kind == "tmux-c":
            argv = [*self.spec.tmux_base, "-C", "attach-session", "-t", "ctl"]
            self.ctl = TmuxControl(argv, self.spec.tmux_env)
            self.ctl.command("refresh-client -f no-output")

    def close(self) -> None:
        if self.pebrel is not None:
            self.pebrel.close()
            self.pebrel = None
        if self.ctl is not None:
            if self.ctl.proc.poll() is None:
                self.ctl.proc.kill()
            self.ctl.close()
            self.ctl = None

    def reopen(self) -> None:
        self.close()
        self.open()

    def _tmux(self, *args: str) -> tuple[str | None, str]:
        """One tmux command: (what went wrong or None, its output)."""
        if self.ctl is not None:
            try:
                return None, "\n".join(self.ctl.command(" ".join(args)))
            except BenchError as exc:
                if self.ctl.proc.poll() is not None:
                    raise  # the control client is gone, not an %error answer
                return str(exc)[:160], ""
        proc = subprocess.run(
            [*self.spec.tmux_base, *args],
            env=self.spec.tmux_env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=self.spec.timeout_s,
        )
        if proc.returncode != 0:
            return f"exit {proc.returncode}: {proc.stderr.strip()[:120]}", ""
        return None, proc.stdout

    def read(self, outcome: Outcome) -> str | None:
        """Read a random flooded pane; None when the answer shows the flood."""
        wrong = f"wrong content: {self.spec.needle!r} not on the screen"
        if self.pebrel is not None:
            window_id, pane_id = self.rng.choice(self.spec.pebrel_targets)
            params = {"window_id": window_id, "pane_id": pane_id, "lines": 24}
            envelope = self.pebrel.call("pane.read", params)
            problem = _envelope_problem(envelope)
            if problem is not None:
                return problem
            result = envelope["result"]
            captured = result.get("screen_captured_at")
            if isinstance(captured, int | float) and not isinstance(captured, bool):
                outcome.ages.append((time.time() - captured) * 1000)
            return None if self.spec.needle in str(result.get("text")) else wrong
        problem, text = self._tmux(
            "capture-pane", "-p", "-t", self.rng.choice(self.spec.tmux_panes)
        )
        if problem is not None:
            return problem
        return None if self.spec.needle in text else wrong

    def listing(self) -> str | None:
        """List the runtime's panes; None when every flooded pane is there."""
        if self.pebrel is not None:
            envelope = self.pebrel.call("runtime.snapshot", {})
            problem = _envelope_problem(envelope)
            if problem is not None:
                return problem
            listed = {
                (pane["window_id"], pane["pane_id"])
                for win in envelope["result"]["windows"]
                for tab in win["tabs"]
                for pane in tab["panes"]
            }
            missing = len(set(self.spec.pebrel_targets) - listed)
        else:
            problem, text = self._tmux("list-panes", "-a")
            if problem is not None:
                return problem
            words = set(text.split())
            missing = sum(pane not in words for pane in self.spec.tmux_panes)
        if missing:
            return f"wrong content: {missing} flooded panes missing from the listing"
        return None

    def timed(self, ask: Any, latencies: list[float], failures: list[str]) -> None:
        """Time one request and keep it; after a broken one, a fresh connection."""
        timeout_s = self.spec.timeout_s
        start = time.perf_counter()
        broken = False
        problem: str | None
        try:
            with deadline(timeout_s):
                problem = ask()
            elapsed = (time.perf_counter() - start) * 1000.0
        except (MeasurementTimeout, subprocess.TimeoutExpired, TimeoutError):
            problem = f"no answer within {timeout_s:g} s"
            elapsed = timeout_s * 1000.0
            broken = True
        except Exception as exc:
            problem = f"{type(exc).__name__}: {str(exc)[:160]}"
            elapsed = (time.perf_counter() - start) * 1000.0
            broken = True
        latencies.append(elapsed)
        if problem is not None:
            failures.append(problem)
        if broken:  # the connection may hold a late answer or half a line
            with deadline(30.0):
                self.reopen()


def client_main(spec: Spec, queue: Queue[Any], go: Event) -> None:
    """A client process: connect, say ready, wait for the go, alternate reads and listings for
    `spec.seconds`, hand back the Outcome (or ("error", why))."""
    try:
        with deadline(30.0):
            client = _Client(spec)
    except BaseException as exc:
        queue.put((spec.index, "error", f"{spec.kind} client {spec.index}: {exc!r}"))
        return
    try:
        queue.put((spec.index, "ready", None))
        if not go.wait(GO_TIMEOUT_S):
            return
        outcome = Outcome()
        end = time.monotonic() + spec.seconds
        turn = spec.index % 2  # half the clients start with a listing
        while time.monotonic() < end:
            if turn % 2 == 0:
                client.timed(lambda: client.read(outcome), outcome.reads, outcome.read_failures)
            else:
                client.timed(client.listing, outcome.lists, outcome.list_failures)
            turn += 1
            time.sleep(GAP_S)
        queue.put((spec.index, "done", outcome))
    except BaseException as exc:
        queue.put((spec.index, "error", f"{spec.kind} client {spec.index}: {exc!r}"))
    finally:
        try:
            with deadline(10.0):
                client.close()
        except BaseException:
            pass
