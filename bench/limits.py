"""`python -m bench limits [--panes N] [--connections N] [--subscribers N] [--burst N]`:
what one runtime takes on this machine (docs/protocol.md "Limits", #15).

Starts a runtime under a 1024 soft open-file limit (the common default, which the runtime
raises for itself), then measures: creating `--panes` panes (time per pane, memory of each
process kind), holding `--connections` idle authenticated connections and `--subscribers`
subscribers while a normal client's requests are timed, a burst of `--burst` wrong-token
connections (each must be closed without a byte) while the client's requests are timed, and
what happens past the connection cap. Prints a Markdown section for bench/RESULTS.md.
Nothing here is a pass/fail test; tests/e2e/test_limits.py and test_security.py are.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from bench.pebrel_side import pebrel_executable
from bench.stats import percentile
from pebrel import PROTOCOL
from pebrel.client import Client

USER_SOFT = 1024
#: The adapter's connection cap (router/adapter_limits.py, which bench/ cannot import from the
#: clone root); the adapter logs the cap it applies.
MAX_CONNECTIONS = 4096
MIB = 1024 * 1024


@dataclass
class Report:
    lines: list[str] = field(default_factory=list)

    def add(self, text: str) -> None:
        self.lines.append(text)
        print(text, flush=True)


def request_line(
    token: str, method: str, params: dict[str, Any] | None = None, rid: Any = 1
) -> bytes:
    body = {
        "protocol": PROTOCOL,
        "version": 1,
        "id": rid,
        "token": token,
        "method": method,
        "params": params or {},
    }
    return json.dumps(body).encode() + b"\n"


def processes(data_dir: Path) -> list[psutil.Process]:
    marker = f"PEBREL_DATA_DIR={data_dir}".encode()
    found = []
    for proc in psutil.process_iter(["pid"]):
        with (
            contextlib.suppress(OSError, psutil.Error),
            open(f"/proc/{proc.pid}/environ", "rb") as handle,
        ):
            if marker in handle.read().split(b"\0") and proc.status() != "zombie":
                found.append(proc)
    return found


def kind(proc: psutil.Process, forkserver: int | None) -> str:
    cmd = proc.cmdline()
    if cmd[1:4] == ["-P", "-m", "pebrel.router"]:
        return "router"
    if cmd[1:4] == ["-P", "-m", "pebrel.router.adapter"]:
        return "adapter"
    if cmd[1:4] == ["-P", "-m", "pebrel.workers.forkserver"]:
        return "fork server" if proc.ppid() != forkserver else "pane worker"
    return "shell"


def memory(data_dir: Path) -> dict[str, tuple[int, float, float, int]]:
    """Per process kind: (count, RSS MiB summed, USS MiB summed, open fds summed)."""
    procs = processes(data_dir)
    forkserver = None
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            cmd = proc.cmdline()
            if cmd[1:4] == [
                "-P",
                "-m",
                "pebrel.workers.forkserver",
            ] and "pebrel.router" in " ".join(psutil.Process(proc.ppid()).cmdline()):
                forkserver = proc.pid
    out: dict[str, list[float]] = {}
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            info = proc.memory_full_info()
            row = out.setdefault(kind(proc, forkserver), [0, 0.0, 0.0, 0])
            row[0] += 1
            row[1] += info.rss / MIB
            row[2] += info.uss / MIB
            row[3] += proc.num_fds()
    return {k: (int(v[0]), v[1], v[2], int(v[3])) for k, v in out.items()}


def memory_table(mem: dict[str, tuple[int, float, float, int]]) -> list[str]:
    rows = ["| process | count | RSS MiB | USS MiB | open fds |", "|---|---|---|---|---|"]
    for name in ("router", "adapter", "fork server", "pane worker", "shell"):
        if name in mem:
            count, rss, uss, fds = mem[name]
            rows.append(f"| {name} | {count} | {rss:.0f} | {uss:.0f} | {fds} |")
    return rows


def timed(call: Callable[[], Any], samples: list[float]) -> Any:
    started = time.perf_counter()
    result = call()
    samples.append((time.perf_counter() - started) * 1000)
    return result


def ms(samples: list[float]) -> str:
    if not samples:
        return "n/a"
    return (
        f"p50 {statistics.median(samples):.1f} ms, p99 {percentile(samples, 99):.1f} ms, "
        f"max {max(samples):.1f} ms ({len(samples)} requests)"
    )


def nofile(pid: int) -> int:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    return -1


class Probe:
    """A normal client timing `runtime.describe` and `pane.read` in a loop until stopped."""

    def __init__(self, data_dir: Path) -> None:
        self.client = Client(data_dir, timeout_s=30)
        self.samples: list[float] = []
        self.failures: list[str] = []

    def round(self, count: int) -> None:
        for index in range(count):
            self.one(index)

    def one(self, index: int) -> None:
        method, params = (
            ("pane.read", {"window_id": 1, "pane_id": 1, "lines": 5})
            if index % 2
            else ("runtime.describe", {})
        )
        answer = timed(lambda: self.client.call(method, params), self.samples)
        if not answer.get("ok"):
            self.failures.append(json.dumps(answer)[:200])

    def until(self, done: threading.Event) -> None:
        index = 0
        while not done.is_set():
            self.one(index)
            index += 1


@contextlib.contextmanager
def runtime(root: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    data = root / "data"
    env = {**os.environ, "PEBREL_DATA_DIR": str(data)}
    env.pop("PEBREL_TEST_INJECT", None)
    exe = pebrel_executable()
    started = subprocess.run(
        ["sh", "-c", f'ulimit -Sn {USER_SOFT}; exec "$0" runtime start', exe],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if started.returncode != 0:
        raise SystemExit(f"runtime start failed: {started.stdout}{started.stderr}")
    try:
        yield data, env
    finally:
        subprocess.run([exe, "runtime", "stop"], env=env, capture_output=True, timeout=120)


def connect(port: int, line: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(line)
    return sock


def read_line(sock: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    return data


def measure_panes(data: Path, count: int, report: Report) -> None:
    report.add(f"### {count} panes\n")
    before = memory(data)
    creating: list[float] = []
    with Client(data, timeout_s=60) as client:
        started = time.monotonic()
        for _ in range(count - 1):
            answer = timed(lambda: client.call("window.create", {}), creating)
            if not answer["ok"]:
                report.add(f"- window.create failed: {json.dumps(answer)[:300]}")
                break
        total = time.monotonic() - started
        windows = [w["window_id"] for w in client.call("runtime.snapshot")["result"]["windows"]]
        running: list[float] = []
        bad = 0
        for window_id in windows:
            params = {"window_id": window_id, "pane_id": 1, "command": "true"}
            answer = timed(functools.partial(client.call, "pane.run", params), running)
            bad += not (answer["ok"] and answer["result"]["exit_code"] == 0)
        snap: list[float] = []
        for _ in range(20):
            timed(lambda: client.call("runtime.snapshot"), snap)
    after = memory(data)
    report.add(
        f"- {len(windows)} panes (one per window); creating {len(creating)} took {total:.1f} s: "
        f"{ms(creating)}"
    )
    report.add(
        f"- first `pane.run true` in each (it waits for the new shell's first prompt): "
        f"{ms(running)}; failed: {bad}"
    )
    report.add(f"- `runtime.snapshot` with {len(windows)} panes: {ms(snap)}")
    report.add("\nWith 1 pane:\n")
    for row in memory_table(before):
        report.add(row)
    report.add(f"\nWith {len(windows)} panes:\n")
    for row in memory_table(after):
        report.add(row)
    per_pane = sum(v[2] for k, v in after.items() if k in ("pane worker", "shell")) / len(windows)
    report.add(f"\nPer pane (worker + shell USS): {per_pane:.1f} MiB\n")


def measure_connections(data: Path, count: int, subscribers: int, report: Report) -> None:
    report.add(f"### {count} idle authenticated connections, {subscribers} subscribers\n")
    info = json.loads((data / "runtime.port").read_text())
    adapter = next(p for p in processes(data) if kind(p, None) == "adapter")
    baseline = Probe(data)
    baseline.round(400)
    held: list[tuple[socket.socket, Any]] = []
    opening: list[float] = []
    unanswered = 0
    try:
        for index in range(count):
            method = "events.subscribe" if index < subscribers else "runtime.describe"
            line = request_line(info["token"], method)
            sock = timed(functools.partial(connect, info["port"], line), opening)
            reader = sock.makefile("rb")
            held.append((sock, reader))
            line = reader.readline()
            unanswered += not (line and json.loads(line).get("ok"))
        rss = adapter.memory_info().rss / MIB
        fds = adapter.num_fds()
        probe = Probe(data)
        probe.round(400)
        with Client(data) as client:  # every subscriber hears of a change
            revision = client.call("runtime.snapshot")["result"]["revision"]
            client.call("window.create", {})
        heard = sum(heard_after(reader, revision) for _, reader in held[:subscribers])
        report.add(
            f"- baseline (no other connection): {ms(baseline.samples)}\n"
            f"- opening them: {ms(opening)}; not answered: {unanswered}\n"
            f"- a normal client with {len(held)} held: {ms(probe.samples)}; "
            f"failures {len(probe.failures)}\n"
            f"- adapter with them: RSS {rss:.0f} MiB, {fds} open fds "
            f"(limit {nofile(adapter.pid)}, cap {logged_cap(data)})\n"
            f"- subscribers that got the next revision's event: {heard} of {subscribers}\n"
        )
    finally:
        for sock, reader in held:
            reader.close()
            sock.close()


def heard_after(reader: Any, revision: int) -> bool:
    """Whether a subscriber receives an event of a revision past `revision` (30 s at most)."""
    while True:
        line = reader.readline()
        if not line:
            return False
        event = json.loads(line)
        if event.get("type") == "event" and int(event.get("revision", 0)) > revision:
            return True


#: The burst runs in its own process, so it does not share this one's GIL with the probe.
FLOOD = """
import socket, sys
port, count = int(sys.argv[1]), int(sys.argv[2])
wrongs = [line.encode() + b"\\n" for line in sys.stdin.read().splitlines()]
socks = []
for index in range(count):
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(wrongs[index % len(wrongs)])
    socks.append(sock)
closed = 0
for sock in socks:
    try:
        closed += sock.recv(1) == b""
    except ConnectionResetError:
        closed += 1
print(closed)
"""


def near_miss(token: str) -> str:
    """The token with its last character changed."""
    return token[:-1] + ("1" if token.endswith("0") else "0")


def measure_burst(data: Path, count: int, report: Report) -> None:
    report.add(f"### a burst of {count} wrong-token connections\n")
    info = json.loads((data / "runtime.port").read_text())
    token = info["token"]
    wrongs = [
        request_line(near_miss(token), "runtime.describe"),
        request_line("", "runtime.describe"),
        f"PING {token[:-1]}".encode(),
        b"garbage",
    ]
    adapter = next(p for p in processes(data) if kind(p, None) == "adapter")
    probe = Probe(data)
    probe.round(50)
    probe.samples.clear()
    cpu_before = sum(adapter.cpu_times()[:2])
    started = time.monotonic()
    flood = subprocess.Popen(
        [sys.executable, "-c", FLOOD, str(info["port"]), str(count)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert flood.stdin is not None and flood.stdout is not None
    flood.stdin.write(b"\n".join(w.strip() for w in wrongs).decode())
    flood.stdin.close()
    index = 0
    while flood.poll() is None:
        probe.one(index)
        index += 1
    elapsed = time.monotonic() - started
    cpu = (sum(adapter.cpu_times()[:2]) - cpu_before) * 1000
    closed = int(flood.stdout.read().strip() or 0)
    report.add(
        f"- {count} connections, each with a wrong first line, opened and seen closed in "
        f"{elapsed:.2f} s; closed without a byte: {closed} of {count}\n"
        f"- an authenticated client meanwhile (`runtime.describe` / `pane.read`): "
        f"{ms(probe.samples)}; failures {len(probe.failures)}\n"
        f"- the adapter's CPU time for the burst and those requests: {cpu:.0f} ms; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n"
    )


def measure_cap(data: Path, report: Report) -> None:
    cap = logged_cap(data)
    report.add(f"### past the connection cap ({cap})\n")
    info = json.loads((data / "runtime.port").read_text())
    held: list[socket.socket] = []
    answered = refused = 0
    try:
        for _ in range(cap + 50):
            try:
                sock = connect(info["port"], request_line(info["token"], "runtime.describe"))
                held.append(sock)
                if read_line(sock):
                    answered += 1
                    continue
            except OSError:
                pass  # closed at once (a reset: its request was never read)
            refused += 1
        try:
            with Client(data) as client:
                meanwhile = "answered" if client.call("runtime.describe")["ok"] else "error"
        except Exception as exc:
            meanwhile = f"refused ({type(exc).__name__})"
    finally:
        for sock in held:
            sock.close()
    with Client(data) as client:
        after = client.call("runtime.describe")["ok"]
    report.add(
        f"- {cap + 50} authenticated connections tried one after the other: {answered} "
        f"answered, {refused} closed without a byte; one more client while they are held: "
        f"{meanwhile}; once they are closed a new client is answered: {after}\n"
    )


def logged_cap(data: Path) -> int:
    """The connection cap the adapter logged at its start."""
    log = (data / "runtime.log").read_text(errors="replace")
    found = re.findall(r"taking up to (\d+) client connections", log)
    return int(found[-1]) if found else MAX_CONNECTIONS


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench limits", description=__doc__)
    parser.add_argument("--panes", type=int, default=256)
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--subscribers", type=int, default=64)
    parser.add_argument("--burst", type=int, default=1000)
    parser.add_argument("--no-cap", action="store_true", help="skip the past-the-cap step")
    args = parser.parse_args(argv)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = MAX_CONNECTIONS + 500
    if soft != resource.RLIM_INFINITY and soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(needed, hard), hard))
    report = Report()
    with (
        tempfile.TemporaryDirectory(prefix="pebrel-limits-") as tmp,
        runtime(Path(tmp)) as (data, _),
    ):
        router = json.loads((data / "runtime.port").read_text())["pid"]
        report.add("## Limits (`python -m bench limits`)\n")
        report.add(
            f"Runtime started under a soft open-file limit of {USER_SOFT} (hard {hard}); "
            f"the router runs with {nofile(router)}; {os.cpu_count()} cores, "
            f"{psutil.virtual_memory().total / 2**30:.0f} GiB, load average "
            f"{os.getloadavg()[0]:.1f} at the start (the machine may be shared).\n"
        )
        measure_panes(data, args.panes, report)
        measure_connections(data, args.connections, args.subscribers, report)
        measure_burst(data, args.burst, report)
        if not args.no_cap:
            measure_cap(data, report)
    return 0
