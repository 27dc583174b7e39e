"""The chaos engine: kill or stop a random runtime process every few seconds while clients work.

`python -m bench chaos [--minutes N] [--seed S]` runs rounds of a few minutes; tests/chaos
runs one short round. A round starts a runtime (its own data dir and TMPDIR,
bench/chaos_runtime.py), starts the clients (bench/chaos_clients.py), and then, every
`interval` seconds, picks a victim (a pane worker, the fork server, the spare, a shell, the
frontend adapter) and SIGKILLs it or SIGSTOPs it for a moment and SIGCONTs it. After each
blow it checks what the docs promise:

- a killed worker's or shell's pane is `exited` with an `exit_reason`, and `pane.read` of it
  answers; a killed fork server's panes likewise, and the next pane starts;
- a stopped process runs again after SIGCONT and its pane answers `pane.read` and `pane.exec`
  (a stopped fork server or spare: a new window starts and runs a command);
- the runtime answers a `runtime.snapshot` after every blow.

The clients check that every request got exactly one answer within its deadline. A round
ends with `pebrel runtime stop`, or with a SIGKILL of the frontend adapter, which ends the
runtime (docs/architecture.md, "The links"); either way no process of the runtime may be
left, nor a file but the documented ones. Every random choice comes from the seed (printed;
set it with `--seed` or PEBREL_CHAOS_SEED), so a run's sequence of blows can be replayed.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from pebrel import entrypoints
from tests.chaos.clients import ChaosClient, Ledger
from tests.chaos.runtime import ChaosRuntime
from tests.conftest import poll_until

SEED_ENV = "PEBREL_CHAOS_SEED"
VICTIMS = ("worker", "shell", "forkserver", "spare", "adapter", "collab")
#: How long a killed pane may take to show as exited, a stopped process to answer again.
SETTLE_S = 20.0


def seed_from_env() -> int:
    """PEBREL_CHAOS_SEED if set, else a fresh random seed."""
    value = os.environ.get(SEED_ENV)
    return int(value) if value else random.SystemRandom().randrange(1, 2**31)


@dataclass
class RoundConfig:
    seed: int
    duration_s: float
    clients: int = 8
    agents: bool = True
    interval_s: tuple[float, float] = (1.5, 4.0)
    stop_s: tuple[float, float] = (0.2, 2.0)
    #: Victims picked during the round; the adapter is SIGSTOPped only (its SIGKILL ends it).
    victims: tuple[str, ...] = VICTIMS
    #: "stop": the round ends with `pebrel runtime stop`; "adapter": with a SIGKILL of it.
    end: str = "stop"


@dataclass
class RoundReport:
    seed: int
    end: str
    blows: Counter[str] = field(default_factory=Counter)
    requests: int = 0
    interrupted: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    log: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def summary(self) -> str:
        blows = ", ".join(f"{k} {v}" for k, v in sorted(self.blows.items()))
        return (
            f"seed {self.seed}, end by {self.end}: {self.seconds:.0f} s, blows: {blows}; "
            f"{self.requests} requests ({self.interrupted} in flight on a killed pane), "
            f"{len(self.violations)} violations; runtime.log: {self.log}"
        )

    def outcome_lines(self) -> list[str]:
        """One line per method: how its requests were answered (`ok`, or the error codes)."""
        by_method: dict[str, list[str]] = {}
        for key, count in sorted(self.outcomes.items()):
            method, _, outcome = key.partition(" ")
            by_method.setdefault(method, []).append(f"{outcome} {count}")
        return [f"{method}: {', '.join(parts)}" for method, parts in by_method.items()]


class Chaos:
    """One round: the runtime, its clients, and the blows."""

    def __init__(self, root: Path, env: dict[str, str], config: RoundConfig) -> None:
        self.config = config
        self.rt = ChaosRuntime(root, env)
        self.rng = random.Random(config.seed)
        self.ledger = Ledger()
        self.stop = threading.Event()
        self.report = RoundReport(config.seed, config.end)
        self.clients: list[ChaosClient] = []
        self.finished = False
        self.bag: list[tuple[str, bool]] = []

    def violation(self, text: str) -> None:
        self.ledger.violation(f"[chaos] {text}")

    def run(self) -> RoundReport:
        started = time.monotonic()
        self.rt.start()
        try:
            self.clients = [
                ChaosClient(
                    i,
                    self.rt,
                    self.config.seed * 1000 + i,
                    self.ledger,
                    self.stop,
                    self.config.agents,
                )
                for i in range(self.config.clients)
            ]
            for client in self.clients:
                client.start()
            end = started + self.config.duration_s
            while time.monotonic() < end:
                self.stop.wait(self.rng.uniform(*self.config.interval_s))  # the blows' pace
                self.blow()
                self.check_answers()
            self.finish()
            self.finished = True
        finally:
            self.stop.set()
            for client in self.clients:
                client.join(60)
                if client.is_alive():
                    self.violation(f"{client.name} still runs 60 s after the round")
                elif client.error is not None:
                    self.violation(f"{client.name} failed: {client.error!r}")
            if not self.finished:  # a failure cut the round short: end its runtime
                self.rt.cli("runtime", "stop")
            self.report.violations.extend(self.rt.leftovers())
        self.report.log = self.rt.log_summary()
        if self.report.log["tracebacks"]:
            self.report.violations.append(f"runtime.log holds tracebacks: {self.report.log}")
        self.report.seconds = time.monotonic() - started
        self.report.requests = self.ledger.requests
        self.report.interrupted = self.ledger.interrupted
        self.report.outcomes = self.ledger.outcomes
        self.report.violations[:0] = self.ledger.violations
        return self.report

    # -- the blows ---------------------------------------------------------------------------

    def next_blow(self) -> tuple[str, bool]:
        """The next victim kind and whether it is killed (else stopped): every pair once per
        shuffled bag, so that a short round has each (the adapter is only stopped here)."""
        if not self.bag:
            self.bag = [(k, True) for k in self.config.victims if k != "adapter"]
            self.bag += [(k, False) for k in self.config.victims]
            self.rng.shuffle(self.bag)
        return self.bag.pop()

    def blow(self) -> None:
        kind, kill = self.next_blow()
        hold = self.rng.uniform(*self.config.stop_s)
        pick = self.rng.random()
        busy_first = self.rng.random() < 0.7
        victim, pane = self.victim(kind, pick, busy_first)
        if victim is None:
            return
        self.report.blows[f"{'kill' if kill else 'stop'} {kind}"] += 1
        if kill:
            if pane is not None:
                self.ledger.interrupt(pane)
            self.signal(victim, signal.SIGKILL)
            self.after_kill(kind, victim, pane)
        else:
            self.signal(victim, signal.SIGSTOP)
            self.stop.wait(hold)  # how long it stays stopped
            self.signal(victim, signal.SIGCONT)
            self.after_stop(kind, victim, pane)

    def signal(self, victim: psutil.Process, signum: int) -> None:
        with contextlib.suppress(psutil.NoSuchProcess):
            victim.send_signal(signum)

    def victim(
        self, kind: str, pick: float, busy_first: bool
    ) -> tuple[psutil.Process | None, tuple[int, int] | None]:
        """The process to hit, and the pane it serves (for a worker or a shell)."""
        if kind == "adapter":
            return self.rt.router_child(entrypoints.ADAPTER), None
        if kind == "forkserver":
            return self.rt.router_child(entrypoints.FORKSERVER), None
        if kind == "collab":  # the router restarts it; terminal requests never notice
            return self.rt.router_child(entrypoints.COLLAB), None
        if kind == "spare":
            spares = self.rt.spares()
            return (spares[int(pick * len(spares))] if spares else None), None
        panes = {p["pid"]: (p["window_id"], p["pane_id"]) for p in self.live_panes()}
        workers = [
            (w, shell)
            for w, shell in sorted(self.rt.workers(), key=lambda x: x[1])
            if shell in panes
        ]
        with self.ledger.lock:
            busy = [(w, shell) for w, shell in workers if self.ledger.in_flight[panes[shell]] > 0]
        if busy and busy_first:  # most blows land on a pane with a request in flight
            workers = busy
        if not workers:
            return None, None
        worker, shell = workers[int(pick * len(workers))]
        if kind == "worker":
            return worker, panes[shell]
        try:
            return psutil.Process(shell), panes[shell]
        except psutil.NoSuchProcess:
            return None, None

    def snapshot(self) -> dict[str, Any] | None:
        envelope = self.rt.call("runtime.snapshot", {})
        if not envelope.get("ok"):
            self.violation(f"runtime.snapshot answered {envelope}")
            return None
        result: dict[str, Any] = envelope["result"]
        return result

    def live_panes(self) -> list[dict[str, Any]]:
        snap = self.snapshot() or {"windows": []}
        return [
            pane
            for window in snap["windows"]
            for tab in window["tabs"]
            for pane in tab["panes"]
            if not pane["exited"]
        ]

    def pane(self, where: tuple[int, int]) -> dict[str, Any] | None:
        """The pane's snapshot record, or None if it was closed."""
        snap = self.snapshot() or {"windows": []}
        for window in snap["windows"]:
            for tab in window["tabs"]:
                for pane in tab["panes"]:
                    if (pane["window_id"], pane["pane_id"]) == where:
                        return dict(pane)
        return None

    def after_kill(self, kind: str, victim: psutil.Process, pane: tuple[int, int] | None) -> None:
        if pane is not None:
            self.check_exited(pane)
        # A pane started before the router reaped the fork server may have gone to its spare,
        # which dies with it: such a pane is exited with the fork server's reason
        # (docs/protocol.md). Once reaped, the next pane starts on a new fork server.
        if kind == "forkserver" and not poll_until(
            lambda: not psutil.pid_exists(victim.pid), SETTLE_S, interval_s=0.05
        ):
            self.violation(f"fork server {victim.pid} not reaped {SETTLE_S} s after its kill")
        if kind in ("forkserver", "spare"):
            self.check_new_window(kind)

    def check_exited(self, where: tuple[int, int]) -> None:
        """A killed worker's or shell's pane: exited with a reason, and still readable."""
        record: dict[str, Any] = {}

        def exited() -> bool:
            found = self.pane(where)
            record.clear()
            record.update(found or {"closed": True})
            return bool(found is None or found["exited"])

        if not poll_until(exited, SETTLE_S, interval_s=0.05):
            self.violation(f"pane {where} not exited {SETTLE_S} s after its kill: {record}")
            return
        if record.get("closed"):
            return  # its client closed it meanwhile
        if not record.get("exit_reason"):
            self.violation(f"pane {where} exited without a reason: {record}")
        window_id, pane_id = where
        read = self.rt.call("pane.read", {"window_id": window_id, "pane_id": pane_id, "lines": 50})
        if not read["ok"] and read["error"]["code"] != "target_not_found":
            self.violation(f"pane.read of killed pane {where}: {read['error']}")
        elif read["ok"] and not read["result"]["exited"]:
            self.violation(f"pane.read of killed pane {where} says it runs: {read['result']}")

    def after_stop(self, kind: str, victim: psutil.Process, pane: tuple[int, int] | None) -> None:
        try:
            stopped = victim.status() == psutil.STATUS_STOPPED
        except psutil.NoSuchProcess:
            stopped = False
        if stopped:
            self.violation(f"{kind} {victim.pid} still stopped after SIGCONT")
        if pane is not None:
            window_id, pane_id = pane
            target = {"window_id": window_id, "pane_id": pane_id}
            for method, params in (
                ("pane.read", {**target, "lines": 20}),
                ("pane.exec", {**target, "argv": ["true"], "timeout_ms": 10_000}),
            ):
                answer = self.rt.call(method, params, timeout_s=SETTLE_S + 10)
                code = None if answer["ok"] else answer["error"]["code"]
                # Its client may have closed it, or it may have exited by its own work.
                if code not in (None, "target_not_found", "invalid_state"):
                    self.violation(f"{method} after SIGCONT of {kind} {victim.pid}: {answer}")
        elif kind in ("forkserver", "spare"):
            self.check_new_window(kind)
        else:
            self.snapshot()

    def check_new_window(self, kind: str) -> None:
        """A new window starts and runs a command (after a blow to the fork server or spare)."""
        created = self.rt.call("window.create", {}, timeout_s=SETTLE_S + 10)
        if not created["ok"]:
            self.violation(f"window.create after a blow to the {kind}: {created['error']}")
            return
        where = {
            "window_id": created["result"]["window_id"],
            "pane_id": created["result"]["pane_id"],
        }
        ran = self.rt.call("pane.run", {**where, "command": "echo fresh", "timeout_ms": 10_000})
        if not ran["ok"] or ran["result"]["exit_code"] != 0:
            self.violation(f"pane.run in a new window after a blow to the {kind}: {ran}")
        self.rt.call("window.close", {"window_id": where["window_id"], "confirm": True})

    def check_answers(self) -> None:
        """The runtime still answers: a snapshot within its deadline."""
        try:
            self.snapshot()
        except Exception as exc:
            self.violation(f"runtime.snapshot failed: {exc!r}")

    # -- the end -----------------------------------------------------------------------------

    def finish(self) -> None:
        self.stop.set()
        for client in self.clients:
            client.join(60)
        if self.config.end == "adapter":
            self.end_by_adapter()
            return
        result = self.rt.stop()
        if result.get("forced") or not result.get("answered"):
            self.violation(f"runtime stop had to force the runtime: {result}")

    def end_by_adapter(self) -> None:
        """SIGKILL the frontend adapter: the router stops as `runtime stop` would."""
        adapter = self.rt.router_child(entrypoints.ADAPTER)
        if adapter is None:
            self.violation("no frontend adapter to kill at the round's end")
            return
        self.rt.ending = True
        self.report.blows["kill adapter"] += 1
        self.signal(adapter, signal.SIGKILL)
        if not poll_until(
            lambda: not (self.rt.data_dir / "runtime.port").exists(), SETTLE_S, interval_s=0.05
        ):
            self.violation("runtime.port still there after the adapter's death")
        status = self.rt.cli("runtime", "status")
        if status.returncode != 3:
            self.violation(f"runtime status after the adapter's death: {status.stdout}")


def run_round(root: Path, env: dict[str, str], config: RoundConfig) -> RoundReport:
    return Chaos(root, env, config).run()


def chaos_env() -> dict[str, str]:
    """The clients' and runtime's environment: the fake AI CLIs of tests/fakes first on PATH."""
    fakes = Path(__file__).resolve().parent.parent / "fakes"
    bin_dir = Path(sys.executable).parent
    env = {
        "PATH": os.pathsep.join(
            [str(fakes), str(bin_dir), os.environ.get("PATH", "/usr/bin:/bin")]
        ),
        "SHELL": "/bin/bash",
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }
    return env
