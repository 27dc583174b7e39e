"""`python -m bench integration [--latency-writes N] [--events N]`: the durable event stream's
publish-to-receive latency and sustained rate, against the SQLite floor (issue #17 item 8).

- **Floor**: `bench/collab.py`'s: a task create's rows committed straight into SQLite (WAL,
  `synchronous=FULL`), one transaction each, in the same directory: commits/s.
- **Latency** with 1, 16 and 64 subscribers (each its own consumer on its own connection to
  `integration.sock`, all read by one separate process): a principal writes `task.create`
  over the integration socket one at a time (each after the previous answer, 2 ms apart); an
  event's latency runs from its write being sent to its line being read by a subscriber (so
  it includes the durable write itself: see the write's own answer time beside it). p50/p99
  over every (event, subscriber).
- **Sustained**: two integration clients (a principal's connections) pipeline task creates
  as fast as the service takes them, with 1 and 16 subscribers: events/s from the first write
  sent to the last event read by every subscriber, each write durable before its answer
  (writes that reach the service together share one fsync: its group commit); and with none
  (the writes alone: what bounds the rest).

Targets: p99 under 10 ms at 16 subscribers; sustained events/s at least half the floor's
commits/s. Prints a Markdown section for bench/RESULTS.md; nothing here is a pass/fail test.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import selectors
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.collab import floor_writes, ms, runtime
from bench.pebrel_side import pebrel_executable
from bench.stats import percentile
from pebrel import integration_client, integration_wire
from pebrel.client import Client

P99_TARGET_MS = 10.0
RATE_TARGET = 0.5
LATENCY_GAP_S = 0.002
SEQUENCE = b'"sequence":'


def create_params(group_id: str, i: int) -> dict[str, Any]:
    """bench/collab.py's task create, keyed per group (each phase has its own group)."""
    return {
        "group": group_id,
        "title": f"task {i}",
        "content": "bench " * 20,
        "idempotency_key": f"events-{group_id}-{i}",
    }


class Sub:
    """One subscriber: a raw connection with its stream; the arrival time of each sequence."""

    def __init__(self, data: str, principal: str, token: str, consumer: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(integration_wire.socket_path(data))
        self.buf = b""
        self.sock.sendall(integration_wire.encode(integration_wire.hello(principal, token)))
        hello = self.line()
        if hello.get("ok") is not True:
            raise SystemExit(f"hello refused: {hello}")
        request = integration_wire.request(1, "events.subscribe", {"consumer": consumer})
        self.sock.sendall(integration_wire.encode(request))
        answer = self.line()
        if answer.get("ok") is not True:
            raise SystemExit(f"events.subscribe refused: {answer}")
        self.sock.setblocking(False)
        self.got: dict[int, float] = {}
        self.errors: list[bytes] = []

    def line(self) -> dict[str, Any]:
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise SystemExit("the service closed a subscriber's connection")
            self.buf += chunk
        raw, self.buf = self.buf.split(b"\n", 1)
        found: dict[str, Any] = json.loads(raw)
        return found

    def readable(self) -> None:
        chunk = self.sock.recv(1 << 20)
        now = time.monotonic()
        if not chunk:
            self.errors.append(b"closed")
            return
        lines = (self.buf + chunk).split(b"\n")
        self.buf = lines.pop()
        for raw in lines:
            at = raw.find(SEQUENCE)
            if raw.startswith(b'{"type":"event"') and at > 0:
                end = raw.index(b",", at)
                self.got[int(raw[at + len(SEQUENCE) : end])] = now
            elif raw.startswith(b'{"type":"error"'):
                self.errors.append(raw)


def read_streams(
    data: str, principal: str, token: str, n: int, expected: int, ready: Any, out: Any
) -> None:
    """The subscribers' process: subscribe n consumers, say ready, read until each has seen
    sequences 1..expected, then send back the arrival times."""
    subs = [Sub(data, principal, token, f"bench-{i}") for i in range(n)]
    selector = selectors.DefaultSelector()
    for sub in subs:
        selector.register(sub.sock, selectors.EVENT_READ, sub)
    ready.put(True)
    deadline = time.monotonic() + 600
    waiting = set(subs)
    while waiting and time.monotonic() < deadline:
        for key, _ in selector.select(1.0):
            sub = key.data
            sub.readable()
            if sub.errors:
                out.put({"error": sub.errors[0].decode(errors="replace")})
                return
            if len(sub.got) >= expected:
                waiting.discard(sub)
    out.put({"times": [[sub.got.get(s) for s in range(1, expected + 1)] for sub in subs]})


def principal(data: Path, root: Path, name: str, group_id: str) -> tuple[str, str]:
    """A principal of ``group_id`` made with the admin CLI; (its id, its token)."""
    policy = root / f"{name}.policy.json"
    policy.write_text(
        json.dumps(
            {
                "id": name,
                "groupId": group_id,
                "permissions": ["task.read", "task.create", "events.read"],
                "launchProfiles": [],
            }
        )
    )
    out = root / f"{name}.credential.json"
    env = {**os.environ, "PEBREL_DATA_DIR": str(data)}
    env.pop("PEBREL_TEST_INJECT", None)
    done = subprocess.run(
        [pebrel_executable(), "integration", "create", "--file", str(policy),
         "--credential-file", str(out)],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"integration create failed: {done.stdout}{done.stderr}")
    cred = integration_client.read_credential(out)
    return cred.principal, cred.token


def new_group(data: Path, name: str) -> str:
    with Client(data) as client:
        made = client.call("collab.group.create", {"name": name})
    if not made.get("ok"):
        raise SystemExit(f"collab.group.create failed: {made}")
    return str(made["result"]["group"]["group_id"])


def start_readers(data: Path, who: tuple[str, str], n: int, expected: int) -> tuple[Any, Any]:
    ctx = multiprocessing.get_context("fork")  # started before any writer thread
    ready, out = ctx.Queue(), ctx.Queue()
    proc = ctx.Process(
        target=read_streams, args=(str(data), who[0], who[1], n, expected, ready, out)
    )
    proc.start()
    ready.get(timeout=120)
    return proc, out


def results(proc: Any, out: Any) -> list[list[float]]:
    found = out.get(timeout=900)
    proc.join(60)
    if "error" in found:
        raise SystemExit(f"a subscriber's stream ended: {found['error']}")
    times: list[list[float]] = found["times"]
    return times


def latency(data: Path, root: Path, n: int, writes: int) -> tuple[list[float], list[float]]:
    """Publish-to-receive seconds over every (event, subscriber); and each write's answer time."""
    group_id = new_group(data, f"latency-{n}")
    who = principal(data, root, f"lat-{n}", group_id)
    proc, out = start_readers(data, who, n, writes)
    sent: list[float] = []
    answered: list[float] = []
    with integration_client.connect(data, *who) as conn:
        for i in range(writes):
            sent.append(time.monotonic())
            answer = conn.call("task.create", create_params(group_id, i))
            answered.append(time.monotonic() - sent[-1])
            if not answer.get("ok"):
                raise SystemExit(f"task.create failed: {answer}")
            time.sleep(LATENCY_GAP_S)  # one event at a time: latency, not queueing
    times = results(proc, out)
    return [t - sent[k] for sub in times for k, t in enumerate(sub)], answered


def pipeline(
    data: Path, who: tuple[str, str], group_id: str, start: int, count: int, batch: int
) -> None:
    """Task creates over the integration socket as ``who``, ``batch`` in flight at a time."""
    with integration_client.connect(data, *who) as conn:
        done = 0
        while done < count:
            n = min(batch, count - done)
            ids = {conn.send("task.create", create_params(group_id, start + done + k))
                   for k in range(n)}  # fmt: skip
            while ids:
                answer = conn.read_line(120)
                ids.discard(answer.get("id"))
                if not answer.get("ok"):
                    raise SystemExit(f"task.create failed: {answer}")
            done += n


def sustained(data: Path, root: Path, n: int, events: int) -> float:
    """Events/s from the first write sent to the last event read by every subscriber."""
    group_id = new_group(data, f"rate-{n}")
    who = principal(data, root, f"rate-{n}", group_id)
    readers = None
    if n:
        readers = start_readers(data, who, n, events)
    half = events // 2
    began = time.monotonic()
    writers = [
        threading.Thread(target=pipeline, args=(data, who, group_id, 0, half, 200)),
        threading.Thread(target=pipeline, args=(data, who, group_id, half, events - half, 200)),
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    if readers is None:  # the writes alone: until the last answer
        return events / (time.monotonic() - began)
    times = results(*readers)
    last = max(t for sub in times for t in sub)
    return events / (last - began)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench integration", description=__doc__)
    parser.add_argument("--latency-writes", type=int, default=500, help="writes per phase (500)")
    parser.add_argument("--events", type=int, default=5000, help="sustained events (5000)")
    parser.add_argument("--floor-writes", type=int, default=1000, help="floor commits (1000)")
    args = parser.parse_args(argv)
    lat: dict[int, tuple[list[float], list[float]]] = {}
    rate: dict[int, float] = {}
    with tempfile.TemporaryDirectory(prefix="pebrel-bench-events-") as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        floor = floor_writes(root / "floor.db", args.floor_writes)
        floor_rate = len(floor) / (time.perf_counter() - t0)
        with runtime(root) as data:
            for n in (1, 16, 64):
                lat[n] = latency(data, root, n, args.latency_writes)
            for n in (0, 1, 16):
                rate[n] = sustained(data, root, n, args.events)
    lines = [
        f"## Event stream (`python -m bench integration --events {args.events}`, #17)",
        "",
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs; load average "
        f"{os.getloadavg()[0]:.1f} at the end. Subscribers: one consumer each, on its own "
        "connection to `integration.sock`, read by one separate process. Latency: from a "
        "`collab.task.create` being sent (one at a time) to its event line being read; it "
        "includes the durable write, whose own answer time is shown beside it.",
        "",
        "| subscribers | events x subs | p50 ms | p99 ms | write answered p50 ms |",
        "|---|---|---|---|---|",
    ]
    for n, (took, answered) in lat.items():
        lines.append(
            f"| {n} | {len(took)} | {ms(percentile(took, 50)):.2f} "
            f"| {ms(percentile(took, 99)):.2f} | {ms(percentile(answered, 50)):.2f} |"
        )
    p99_16 = ms(percentile(lat[16][0], 99))
    lines += [
        "",
        f"Target: p99 under {P99_TARGET_MS:.0f} ms at 16 subscribers: "
        f"**{'pass' if p99_16 < P99_TARGET_MS else 'FAIL'}** ({p99_16:.2f} ms).",
        "",
        "| sustained, each write durable before its answer | events/s | vs floor commits/s |",
        "|---|---|---|",
        f"| floor: raw SQLite durable commit ({len(floor)}) | {floor_rate:.0f} | 1.00x |",
    ]
    for n, per_s in rate.items():
        who = f"{n} subscriber(s)" if n else "no subscriber (the writes alone)"
        lines.append(
            f"| {args.events} task events, 2 pipelining writers, {who} "
            f"| {per_s:.0f} | {per_s / floor_rate:.2f}x |"
        )
    worst = min(per_s for n, per_s in rate.items() if n)
    lines += [
        "",
        f"Target: sustained events/s at least {RATE_TARGET:.1f}x the floor's commits/s: "
        f"**{'pass' if worst >= RATE_TARGET * floor_rate else 'FAIL'}**.",
    ]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
