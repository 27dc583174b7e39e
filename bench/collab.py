"""`python -m bench collab [--writes N] [--batch N]`: the collab service's durable writes
against the floor of raw SQLite durable commits, and terminal reads during a write burst
(issue #16 item 7).

- **Floor**: the rows a task create commits (the group's sequence, the task, its
  `task.created` fact, the journal row, the remembered idempotent answer) written straight into
  a SQLite file with the service's own tables (`pebrel.collab.ddl`) beside the runtime's, WAL
  and `synchronous=FULL`, one transaction per write, as the service does: the least a durable,
  acknowledged write can cost on this disk.
- **Pebrel, one by one**: a task create over one persistent connection, each sent after the
  previous answer: latency per acknowledged write (p50/p99) and writes/s. Twice: as a
  principal on the integration socket (`task.create`; one hop, client -> collab service) and
  as the user on the runtime API (`collab.task.create`; client -> adapter -> router -> collab
  service). Each beside its round trip without a write (`capabilities`).
- **Pebrel, pipelined**: the same requests written `--batch` at a time before their answers are
  read: writes/s, and each write's time from its batch being sent to its answer.
- **Reads during a burst**: one client reads a pane (`pane.read lines=24`, persistent
  connection) in a loop, first alone, then while another client pipelines `--writes` task
  creates: p50/p99 of both.

Prints a Markdown section for bench/RESULTS.md. Nothing here is a pass/fail test.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.pebrel_side import pebrel_executable
from bench.stats import percentile
from pebrel import integration_client
from pebrel.client import Client
from pebrel.collab.ddl import JOURNAL_DDL, SCHEMA
from pebrel.integration_wire import token_hash

TARGET_RATIO = 3.0  # p50 of a write at most 3x the floor's p50 (#16 item 7)
READ_P99_TARGET_MS = 20.0


@contextlib.contextmanager
def runtime(root: Path) -> Iterator[Path]:
    data = root / "data"
    env = {**os.environ, "PEBREL_DATA_DIR": str(data)}
    env.pop("PEBREL_TEST_INJECT", None)
    exe = pebrel_executable()
    started = subprocess.run(
        [exe, "runtime", "start"], env=env, capture_output=True, text=True, timeout=60
    )
    if started.returncode != 0:
        raise SystemExit(f"runtime start failed: {started.stdout}{started.stderr}")
    try:
        yield data
    finally:
        subprocess.run([exe, "runtime", "stop"], env=env, capture_output=True, timeout=120)


def ms(seconds: float) -> float:
    return seconds * 1000.0


def floor_writes(path: Path, writes: int) -> list[float]:
    """Durable commits of a task create's rows, one transaction each; seconds per commit.

    The same tables as the service (`pebrel.collab.ddl`, with their keys and indexes) and the
    same rows a `collab.task.create` commits: the group's next sequence, the task, its
    `task.created` fact, the journal row and the remembered idempotent answer.
    """
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.executescript(SCHEMA + JOURNAL_DDL)
    conn.execute("INSERT INTO groups VALUES ('grp_floor', 'floor', 0, 0)")
    took: list[float] = []
    for i in range(writes):
        task_id, event_id = f"tsk_{secrets.token_hex(10)}", f"evt_{secrets.token_hex(10)}"
        content = "bench " * 20
        payload = json.dumps({"event": {"title": f"task {i}", "content": content}})
        started = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        seq = conn.execute(
            "UPDATE groups SET last_sequence = last_sequence + 1 WHERE id = 'grp_floor'"
            " RETURNING last_sequence"
        ).fetchone()[0]
        now = time.time_ns() // 1_000_000
        conn.execute(
            "INSERT INTO tasks (id, group_id, title, content, status, revision, source,"
            " created_at, updated_at) VALUES (?, 'grp_floor', ?, ?, 'open', 1, 'user', ?, ?)",
            (task_id, f"task {i}", content, now, now),
        )
        conn.execute(
            "INSERT INTO journal VALUES ('grp_floor', ?, ?, 'task.created', ?, '{}', ?)",
            (seq, event_id, now, payload),
        )
        conn.execute(
            "INSERT INTO task_events (event_id, group_id, sequence, kind, created_at, refs,"
            " payload, task_id, actor, body) VALUES (?, 'grp_floor', ?, 'task.created', ?,"
            " '{}', ?, ?, '{}', ?)",
            (event_id, seq, now, payload, task_id, payload),
        )
        conn.execute(
            "INSERT INTO idempotency VALUES ('user', ?, ?, ?, ?)",
            (f"key-{i}", "0" * 64, payload, now),
        )
        conn.execute("COMMIT")
        took.append(time.perf_counter() - started)
    conn.close()
    return took


def create_params(group: str, i: int) -> dict[str, Any]:
    return {
        "group": group,
        "title": f"task {i}",
        "content": "bench " * 20,
        "idempotency_key": f"bench-{i}-{os.getpid()}",
    }


def one_by_one(data: Path, group: str, writes: int, start: int) -> list[float]:
    took: list[float] = []
    with Client(data, timeout_s=60) as client:
        for i in range(start, start + writes):
            started = time.perf_counter()
            answer = client.call("collab.task.create", create_params(group, i))
            took.append(time.perf_counter() - started)
            if not answer.get("ok"):
                raise SystemExit(f"collab.task.create failed: {answer}")
    return took


def make_principal(data: Path, group: str) -> tuple[str, str]:
    """A principal of ``group`` that may create and read tasks: its id and token."""
    token = secrets.token_urlsafe(32)
    policy = {
        "id": "bench",
        "groupId": group,
        "permissions": ["task.create", "task.read"],
        "launchProfiles": [],
    }
    with Client(data) as client:
        made = client.call(
            "collab.integration.create", {"policy": policy, "token_sha256": token_hash(token)}
        )
    if not made.get("ok"):
        raise SystemExit(f"collab.integration.create failed: {made}")
    return "bench", token


def socket_calls(
    data: Path, principal: tuple[str, str], method: str, params: Any, calls: int
) -> list[float]:
    """``method`` one by one over the integration socket as ``principal`` (one hop: client ->
    collab service); ``params(i)`` gives each call's params."""
    took: list[float] = []
    with integration_client.connect(data, *principal) as conn:
        for i in range(calls):
            started = time.perf_counter()
            answer = conn.call(method, params(i))
            took.append(time.perf_counter() - started)
            if not answer.get("ok"):
                raise SystemExit(f"{method} over the integration socket failed: {answer}")
    return took


def transport(data: Path, calls: int) -> list[float]:
    """`collab.capabilities` one by one: the client -> adapter -> router -> collab round trip
    with no write, to read the write rows against."""
    took: list[float] = []
    with Client(data, timeout_s=60) as client:
        for _ in range(calls):
            started = time.perf_counter()
            client.call("collab.capabilities", {})
            took.append(time.perf_counter() - started)
    return took


def pipelined(data: Path, group: str, writes: int, batch: int, start: int) -> list[float]:
    """Each write's time from its batch being sent to its answer."""
    took: list[float] = []
    with Client(data, timeout_s=120) as client:
        done = 0
        while done < writes:
            n = min(batch, writes - done)
            sent_at = time.perf_counter()
            ids = [
                client.send("collab.task.create", create_params(group, start + done + k))
                for k in range(n)
            ]
            pending = set(ids)
            while pending:
                answer = client.read_line()
                if answer.get("id") in pending:
                    pending.discard(answer["id"])
                    took.append(time.perf_counter() - sent_at)
                    if not answer.get("ok"):
                        raise SystemExit(f"collab.task.create failed: {answer}")
            done += n
    return took


def reads_for(data: Path, stop: threading.Event, out: list[float]) -> None:
    with Client(data, timeout_s=60) as client:
        while not stop.is_set():
            started = time.perf_counter()
            answer = client.call("pane.read", {"window_id": 1, "pane_id": 1, "lines": 24})
            out.append(time.perf_counter() - started)
            if not answer.get("ok"):
                raise SystemExit(f"pane.read failed: {answer}")


def read_phase(data: Path, seconds: float) -> list[float]:
    stop = threading.Event()
    out: list[float] = []
    reader = threading.Thread(target=reads_for, args=(data, stop, out))
    reader.start()
    time.sleep(seconds)
    stop.set()
    reader.join()
    return out


def verdict(took: list[float], floor_p50: float) -> str:
    p50 = ms(percentile(took, 50))
    return f"{'pass' if p50 <= TARGET_RATIO * floor_p50 else 'FAIL'} ({p50 / floor_p50:.2f}x)"


def row(name: str, took: list[float], wall: float, floor_p50: float | None = None) -> str:
    p50 = ms(percentile(took, 50))
    p99 = ms(percentile(took, 99))
    per_s = len(took) / wall if wall else 0.0
    ratio = f"{p50 / floor_p50:.2f}x" if floor_p50 else "1.00x (floor)"
    return f"| {name} | {len(took)} | {p50:.2f} | {p99:.2f} | {per_s:.0f} | {ratio} |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench collab", description=__doc__)
    parser.add_argument("--writes", type=int, default=1000, help="writes per phase (1000)")
    parser.add_argument("--batch", type=int, default=100, help="pipelined batch size (100)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pebrel-bench-collab-") as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        floor = floor_writes(root / "floor.db", args.writes)
        floor_wall = time.perf_counter() - t0
        floor_p50 = ms(percentile(floor, 50))
        with runtime(root) as data:
            with Client(data) as client:
                made = client.call("collab.group.create", {"name": "bench"})
                if not made.get("ok"):
                    raise SystemExit(f"collab.group.create failed: {made}")
                group = made["result"]["group"]["group_id"]
            t0 = time.perf_counter()
            hop = transport(data, args.writes)
            hop_wall = time.perf_counter() - t0
            t0 = time.perf_counter()
            single = one_by_one(data, group, args.writes, 0)
            single_wall = time.perf_counter() - t0
            principal = make_principal(data, group)
            t0 = time.perf_counter()
            sock_hop = socket_calls(data, principal, "capabilities", lambda i: {}, args.writes)
            sock_hop_wall = time.perf_counter() - t0
            t0 = time.perf_counter()
            sock_single = socket_calls(
                data,
                principal,
                "task.create",
                lambda i: create_params(group, 10 * args.writes + i),
                args.writes,
            )
            sock_single_wall = time.perf_counter() - t0
            t0 = time.perf_counter()
            batch = pipelined(data, group, args.writes, args.batch, args.writes)
            batch_wall = time.perf_counter() - t0
            quiet = read_phase(data, 3.0)
            stop = threading.Event()
            during: list[float] = []
            reader = threading.Thread(target=reads_for, args=(data, stop, during))
            reader.start()
            try:
                burst = pipelined(data, group, args.writes, args.writes, 2 * args.writes)
            finally:
                stop.set()
                reader.join()
    # Pipelined latencies include the wait behind the batch; writes/s is the figure to read.
    lines = [
        f"## Collab writes (`python -m bench collab --writes {args.writes}`, #16)",
        "",
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs; load average "
        f"{os.getloadavg()[0]:.1f} at the end. Floor: the same rows committed straight into "
        "SQLite (WAL, synchronous=FULL), one transaction per write, in the same directory.",
        "",
        "| writes | n | p50 ms | p99 ms | writes/s | p50 vs floor |",
        "|---|---|---|---|---|---|",
        row("floor: raw SQLite durable commit", floor, floor_wall),
        row(
            "integration socket: capabilities (the round trip, no write)",
            sock_hop,
            sock_hop_wall,
            floor_p50,
        ),
        row(
            "integration socket: task.create, one by one", sock_single, sock_single_wall, floor_p50
        ),
        row(
            "runtime API: collab.capabilities (the round trip, no write)", hop, hop_wall, floor_p50
        ),
        row("runtime API: collab.task.create, one by one", single, single_wall, floor_p50),
        row(
            f"runtime API: collab.task.create, pipelined by {args.batch}",
            batch,
            batch_wall,
            floor_p50,
        ),
        "",
        f"Target: one-by-one p50 at most {TARGET_RATIO:.0f}x the floor's p50. "
        f"Integration socket (one hop: client -> collab service): "
        f"**{verdict(sock_single, floor_p50)}**; runtime API (three hops: client -> adapter -> "
        f"router -> collab service): **{verdict(single, floor_p50)}**.",
        "",
        "| pane.read lines=24 | n | p50 ms | p99 ms |",
        "|---|---|---|---|",
        f"| alone | {len(quiet)} | {ms(percentile(quiet, 50)):.2f} "
        f"| {ms(percentile(quiet, 99)):.2f} |",
        f"| during a burst of {args.writes} pipelined task creates ({len(burst)} acknowledged) "
        f"| {len(during)} | {ms(percentile(during, 50)):.2f} | {ms(percentile(during, 99)):.2f} |",
        "",
        f"Target: p99 of reads during the burst under {READ_P99_TARGET_MS:.0f} ms: "
        f"**{'pass' if ms(percentile(during, 99)) < READ_P99_TARGET_MS else 'FAIL'}**.",
    ]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
