"""`python -m bench soak [--minutes 60] [--out FILE]`: an hour of mixed load on one runtime
(issue 15 item 3). Not in CI.

One fresh runtime in a temp PEBREL_DATA_DIR; 16 long-lived panes (printers at three rates,
bursty printers, idle shells, shells that `pane.run` commands, and fake AI agents of
tests/fakes taking turns); 32 clients, each a thread on its own connection with a think time
(bench/soak_clients.py): reads, snapshots, runs with their exit codes checked, execs, waits,
two event subscribers, agent turns, and two churners that create and close tabs and panes all
the time. Every answer is checked; any error fails the soak.

Every `--sample-s` the runtime's processes are measured by kind (bench/soak_procs.py); every
minute a line goes to stderr and a JSON line to `--jsonl`. At the end: least-squares slopes of
memory and fds after the warm-up, the verdict, and a markdown summary (bench/soak_report.py)
printed and written to `--out`. Ctrl-C or SIGTERM stops early with the partial summary; the
runtime is always stopped and the process table walked for anything of its data dir left.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import psutil

from bench import soak_clients as sc
from bench import soak_procs, soak_report
from bench.pebrel_side import PebrelSide
from bench.run import log
from bench.soak_report import Series

COLS, ROWS = 80, 24
FAKES = Path(__file__).resolve().parent.parent / "tests" / "fakes"
PRINTERS = [0.05, 0.5, 2.0]  # seconds between lines
BURSTS = [(2000, 5), (500, 13)]  # lines, then seconds of quiet
IDLE = 2  # idle shells; also the base panes of the two churn windows
RUNNERS = 5
AGENTS = 4  # 3 + 2 + 2 + 5 + 4 = 16 long-lived panes
READERS, SNAPSHOTTERS, EXECUTORS, WAITERS, SUBSCRIBERS = 9, 4, 4, 2, 2  # + 5 + 4 + 2 = 32
STABLE_KINDS = ("router", "adapter", "forkserver")


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


class Soak:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.root = Path(tempfile.mkdtemp(prefix="pebrel-soak-"))
        for name in ("home", "work"):
            (self.root / name).mkdir()
        bin_dir = str(Path(sys.executable).parent)
        env = {
            "HOME": str(self.root / "home"),
            "PATH": os.pathsep.join([str(FAKES), bin_dir, os.environ.get("PATH", "/usr/bin:/bin")]),
            "SHELL": "/bin/bash",
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "TMPDIR": str(self.root / "work"),
            "FAKE_AGENT_WORK_MS": "500",
        }
        self.side = PebrelSide(self.root, env)
        self.stats = sc.Stats()
        self.stop = threading.Event()
        self.threads: list[sc.Worker | sc.Subscriber] = []
        self.samples: list[soak_procs.Sample] = []
        self.stable_workers: set[int] = set()
        self.started = 0.0
        self.notes: list[str] = []
        self.requests = 0
        self.ended = 0.0
        self.me = psutil.Process()
        self.cpu: list[tuple[float, float]] = []  # per minute: this process, the machine (%)
        self.passed = False

    # ------------------------------------------------------------------ setup

    def _window(self, command: str | None) -> sc.Target:
        pane = self.side.new_window()
        target = sc.Target(pane.window_id, pane.pane_id)
        self.side.ready(pane)
        if command is not None:
            self.side.prompt(pane, command)
        return target

    def setup(self) -> sc.Plan:
        if self.args.scrollback_lines is not None:  # settings.toml is read at start
            settings = self.side.data_dir / "settings.toml"
            settings.write_text(f"scrollback_lines = {self.args.scrollback_lines}\n")
        self.side.start()
        printers = [
            self._window(f"while :; do echo tick-{i} $RANDOM; sleep {gap}; done")
            for i, gap in enumerate(PRINTERS)
        ]
        bursty = [
            self._window(f"while :; do seq -f 'burst-{i} %g' {n}; sleep {quiet}; done")
            for i, (n, quiet) in enumerate(BURSTS)
        ]
        idle = [self._window(None) for _ in range(IDLE)]
        runners = [self._window(None) for _ in range(RUNNERS)]
        agents = [f"soak-{i}" for i in range(AGENTS)]
        for name in agents:
            self.side.ok(
                "agent.start", {"name": name, "kind": "claude", "ready_timeout_ms": 60_000}
            )
        plan = sc.Plan(printers, bursty, idle, runners, agents, ROWS)
        for record in self.side.panes():
            worker = soak_procs.worker_of(int(record["pid"]))
            if worker is not None:
                self.stable_workers.add(worker)
        return plan

    def clients(self, plan: sc.Plan) -> None:
        think = self.args.think_s
        data_dir = self.side.data_dir
        roles: list[tuple[str, Callable[[sc.Worker], None]]] = []
        roles += [(f"reader-{i}", sc.reader(plan)) for i in range(READERS)]
        roles += [(f"snapshot-{i}", sc.snapshotter(plan)) for i in range(SNAPSHOTTERS)]
        roles += [(f"runner-{i}", sc.runner(p)) for i, p in enumerate(plan.runners)]
        roles += [(f"exec-{i}", sc.executor(plan)) for i in range(EXECUTORS)]
        roles += [(f"waiter-{i}", sc.waiter(plan)) for i in range(WAITERS)]
        roles += [(f"agent-{n}", sc.agent_turns(n)) for n in plan.agents]
        roles += [
            ("churn-tab", sc.tab_churn(plan.idle[0], COLS, ROWS)),
            ("churn-pane", sc.pane_churn(plan.idle[1])),
        ]
        for name, step in roles:
            self.threads.append(sc.Worker(name, data_dir, self.stats, self.stop, think, step))
        self.threads += [
            sc.Subscriber(f"subscriber-{i}", data_dir, self.stats, self.stop)
            for i in range(SUBSCRIBERS)
        ]
        assert len(self.threads) == 32, len(self.threads)
        for thread in self.threads:
            thread.start()

    # ------------------------------------------------------------------ sampling

    def sample(self) -> soak_procs.Sample:
        shells = {int(p["pid"]) for p in self.side.panes() if p.get("pid")}
        sample = soak_procs.take(
            time.monotonic() - self.started, self.side.pid, shells, self.stable_workers
        )
        self.samples.append(sample)
        return sample

    def minute(self, index: int, sample: soak_procs.Sample, seconds: float, out: Any) -> None:
        latencies, errors = self.stats.take_minute()
        count = sum(len(v) for v in latencies.values())
        self.requests += count
        p99 = {m: soak_report.percentile(v, 99) for m, v in latencies.items()}
        brief = sample.brief()
        mine, machine = self.me.cpu_percent(), psutil.cpu_percent()
        self.cpu.append((mine, machine))
        brief["cpu"] = f"soak clients {mine:.0f}%, machine {machine:.0f}% busy"
        log(soak_report.minute_line(index, count / seconds, errors, p99, brief))
        record = {
            "minute": index,
            "t_s": round(sample.t, 1),
            "requests": count,
            "rps": round(count / seconds, 2),
            "errors": errors,
            "errors_total": self.stats.errors,
            "events_total": self.stats.events,
            "p99_ms": {m: round(v, 1) for m, v in sorted(p99.items())},
            "processes": sample.as_json(),
            "cpu_percent": {"soak_clients": mine, "machine": machine},
        }
        out.write(json.dumps(record) + "\n")
        out.flush()

    def loop(self) -> None:
        total = self.args.minutes * 60
        interval = self.args.sample_s
        with open(self.args.jsonl, "w", encoding="utf-8") as out:
            next_minute, minute_start, index = 60.0, 0.0, 1
            while True:
                elapsed = time.monotonic() - self.started
                if elapsed >= total:
                    break
                time.sleep(min(interval, total - elapsed))
                sample = self.sample()
                if sample.t >= next_minute - 0.5 or sample.t >= total - 0.5:
                    self.minute(index, sample, sample.t - minute_start, out)
                    index, minute_start, next_minute = index + 1, sample.t, next_minute + 60

    # ------------------------------------------------------------------ the end

    def series(self) -> tuple[dict[str, list[Series]], dict[str, list[Series]]]:
        """Per check: the series of each process it covers (USS and RSS; fds)."""
        memory: dict[str, list[Series]] = {}
        fds: dict[str, list[Series]] = {}

        def fill(name: str, seen: list[tuple[float, soak_procs.Usage | None]]) -> None:
            uss, rss, fd = Series(name, "MiB"), Series(name, "MiB"), Series(name, "fd")
            for t, one in seen:
                if one is not None:
                    uss.add(t, one.uss)
                    rss.add(t, one.rss)
                    fd.add(t, one.fds)
            kind = name.split()[0] if name.split()[0] in STABLE_KINDS else "pane worker"
            memory.setdefault(f"{kind} USS", []).append(uss)
            memory.setdefault(f"{kind} RSS", []).append(rss)
            fds.setdefault(f"{kind} fds", []).append(fd)

        for kind in STABLE_KINDS:
            fill(kind, [(s.t, s.one(kind)) for s in self.samples])
        for pid in sorted(self.stable_workers):
            fill(f"worker {pid}", [(s.t, s.stable.get(pid)) for s in self.samples])
        return memory, fds

    def summary(self, stopped_early: bool) -> str:
        duration = (self.ended - self.started) if self.started else 0.0
        self.requests = sum(len(v) for v in self.stats.latencies.values()) + self.stats.errors
        warm = soak_report.warmup_s(duration, self.args.warmup_minutes)
        memory, fds = self.series()
        checks = soak_report.verdict(self.stats.errors, memory, fds, warm)
        self.passed = soak_report.passed(checks) and not stopped_early
        methods = {
            m: (len(v), soak_report.percentile(v, 50), soak_report.percentile(v, 99))
            for m, v in self.stats.latencies.items()
        }
        if stopped_early:
            self.notes.insert(
                0,
                f"stopped early after {duration / 60:.1f} of "
                f"{self.args.minutes} minutes (partial summary)",
            )
        self.notes.append(f"{self.stats.events} subscription events received")
        spares = [(s.t, s.kinds["spare"][0]) for s in self.samples if s.kinds.get("spare")]
        spare = Series("spare", "MiB")
        for t, usage in spares:
            spare.add(t, usage.uss)
        rate = spare.per_hour(warm)
        self.notes.append(
            f"the spare worker (a fresh fork after every pane creation, so not checked) was seen "
            f"in {len(spares)} of {len(self.samples)} samples; its USS slope "
            + ("n/a" if rate is None else f"{rate:+.2f} MiB/h")
        )
        if self.cpu:
            mine = sum(c for c, _ in self.cpu) / len(self.cpu)
            machine = sum(c for _, c in self.cpu) / len(self.cpu)
            self.notes.append(
                f"CPU, mean of the minutes: the soak's clients {mine:.0f}% of one CPU, "
                f"the machine {machine:.0f}% busy (all {os.cpu_count()} CPUs, every process)"
            )
        from pebrel import __version__

        header = (
            f"Pebrel {__version__}, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs; "
            f"16 long-lived panes and the first window's ({len(PRINTERS)} printers, "
            f"{len(BURSTS)} bursty, {IDLE} idle, "
            f"{RUNNERS} pane.run, {AGENTS} fake agents), 32 clients (think time "
            f"{self.args.think_s:g} s), tabs and panes created and closed continuously; "
            f"`python -m bench soak --minutes {self.args.minutes:g}"
            + (
                f" --scrollback-lines {self.args.scrollback_lines}`."
                if self.args.scrollback_lines is not None
                else "`."
            )
        )
        last = self.samples[-1].brief() if self.samples else {}
        return soak_report.markdown(
            soak_report.Summary(
                header,
                duration,
                warm,
                self.requests,
                self.stats.errors,
                methods,
                checks,
                self.stats.kept[:20],
                self.notes,
                last,
            )
        )

    def close(self) -> None:
        self.ended = time.monotonic()
        self.stop.set()
        for thread in self.threads:
            thread.interrupt()
        for thread in self.threads:
            thread.join(timeout=10)
        alive = [t.name for t in self.threads if t.is_alive()]
        if alive:
            self.notes.append(f"client threads still busy at the end: {', '.join(alive)}")
        self.notes.extend(f"cleanup: {p}" for p in self.side.stop())
        left = self.side.processes()
        self.notes.append(f"leftover processes after stop: {len(left)}")
        shutil.rmtree(self.root, ignore_errors=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench soak", description="An hour of mixed load on one runtime."
    )
    parser.add_argument("--minutes", type=float, default=60.0, help="length (default 60)")
    parser.add_argument("--out", type=Path, default=None, help="write the markdown summary here")
    parser.add_argument(
        "--jsonl",
        type=Path,
        default=None,
        help="per-minute JSON lines (default: --out with .jsonl, else a temp file)",
    )
    parser.add_argument(
        "--sample-s", type=float, default=10.0, help="seconds between process samples (default 10)"
    )
    parser.add_argument(
        "--think-s",
        type=float,
        default=0.6,
        help="mean think time of a client between requests (default 0.6)",
    )
    parser.add_argument(
        "--warmup-minutes",
        type=float,
        default=None,
        help="left out of the slopes (default 5, or 20%% of a shorter run)",
    )
    parser.add_argument(
        "--scrollback-lines",
        type=int,
        default=None,
        help="the panes' scrollback cap (settings.toml; default Pebrel's 10,000): a small one "
        "fills within the run, so the workers' slopes show them with full histories",
    )
    args = parser.parse_args(argv)
    if args.scrollback_lines is not None and args.scrollback_lines < 0:
        parser.error("--scrollback-lines must not be negative")
    if args.minutes <= 0 or args.sample_s <= 0 or args.think_s < 0:
        parser.error("--minutes and --sample-s must be positive, --think-s not negative")
    if args.jsonl is None:
        args.jsonl = (
            args.out.with_suffix(".jsonl")
            if args.out
            else Path(tempfile.gettempdir()) / f"pebrel-soak-{os.getpid()}.jsonl"
        )
    signal.signal(signal.SIGTERM, _terminate)
    soak = Soak(args)
    stopped_early = False
    try:
        log(f"soak: {args.minutes:g} min, data dir {soak.side.data_dir}, minutes to {args.jsonl}")
        plan = soak.setup()
        soak.started = time.monotonic()
        soak.me.cpu_percent()
        psutil.cpu_percent()
        soak.clients(plan)
        soak.loop()
    except KeyboardInterrupt:
        stopped_early = True
        log("soak: interrupted, stopping")
    except Exception as exc:
        stopped_early = True
        soak.notes.append(f"soak aborted: {type(exc).__name__}: {exc}")
        log(f"soak aborted: {exc!r}")
    finally:
        with contextlib.suppress(KeyboardInterrupt):
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            soak.close()
    text = soak.summary(stopped_early)
    print(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
        log(f"wrote {args.out}")
    return 0 if soak.passed else 1
