"""`python -m bench ssh [--reps N] [--runs N] [--server openssh|asyncssh]`: SSH panes (R11.1,
#22) side by side with `ssh -tt` in a tmux pane, over the same loopback SSH server.

Two measurements, each side the same way a client would:

- **pane to first prompt**: Pebrel `tab.new` with an SSH profile, then `pane.read` polled until
  the last line is a prompt; tmux `new-window 'ssh -tt ...'`, then `capture-pane` polled the
  same way (both at the same interval, on a persistent connection: Pebrel's socket, tmux's
  control-mode client).
- **`true` round trip**: Pebrel `pane.run true` (the profile has `integration = true`: a real
  exit code comes back); tmux `send-keys 'true; echo M$((n+1))' Enter`, then `capture-pane`
  polled until the marker's output line shows (a tmux pane over SSH has no exit code to give).

The server is Debian's OpenSSH sshd when it can run here (root, /usr/sbin/sshd), else
tests/sshserver.py (asyncssh); the keys, known_hosts and the server come from tests/sshhost.py.
Prints a Markdown section for bench/RESULTS.md; nothing here is a test.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from bench.common import COLS, ROWS, BenchError
from bench.pebrel_side import PebrelPane, PebrelSide
from bench.stats import percentile
from bench.tmux_side import TmuxPane, TmuxSide, quote

if TYPE_CHECKING:
    from tests.sshhost import SshHost

# tests/sshhost.py by its path: bench/ runs with the repository root off sys.path (bench/__init__).
_SPEC = importlib.util.spec_from_file_location(
    "pebrel_bench_sshhost", Path(__file__).resolve().parent.parent / "tests" / "sshhost.py"
)
assert _SPEC is not None and _SPEC.loader is not None
sshhost = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = sshhost
_SPEC.loader.exec_module(sshhost)

POLL_S = 0.002


def _prompt_last(text: str) -> bool:
    lines = text.rstrip().split("\n")
    return bool(lines) and lines[-1].rstrip().endswith(("#", "$"))


def _poll(predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
    end = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > end:
            raise BenchError(f"timed out waiting for {what}")
        time.sleep(POLL_S)


def _ssh_argv(host: SshHost) -> str:
    return shlex.join(
        [
            "ssh",
            "-tt",
            "-F",
            os.devnull,
            "-i",
            str(host.client_key),
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            f"UserKnownHostsFile={host.known_hosts}",
            "-o",
            "BatchMode=yes",
            "-p",
            str(host.port),
            "127.0.0.1",
        ]
    )


class SshSide(Protocol):
    def create(self) -> tuple[float, Any]: ...
    def round_trip(self, pane: Any, n: int) -> float: ...
    def close(self, pane: Any) -> None: ...


class PebrelSsh:
    def __init__(self, side: PebrelSide, profile: str) -> None:
        self.side = side
        self.profile = profile

    def readable_prompt(self, pane: PebrelPane) -> bool:
        envelope = self.side.call("pane.read", {**pane.target, "lines": 5})
        return bool(envelope.get("ok")) and _prompt_last(envelope["result"]["text"])

    def create(self) -> tuple[float, PebrelPane]:
        start = time.perf_counter()
        result = self.side.ok("tab.new", {"window_id": 1, "shell": self.profile})
        pane = PebrelPane(int(result["window_id"]), int(result["pane_id"]))
        _poll(lambda: self.readable_prompt(pane), 30, "the SSH pane's prompt")
        return time.perf_counter() - start, pane

    def round_trip(self, pane: PebrelPane, n: int) -> float:
        start = time.perf_counter()
        result = self.side.ok("pane.run", {**pane.target, "command": "true"})
        if result["exit_code"] != 0:
            raise BenchError(f"pane.run true: {result}")
        return time.perf_counter() - start

    def close(self, pane: PebrelPane) -> None:
        self.side.call("pane.close", {**pane.target, "confirm": True})


class TmuxSsh:
    def __init__(self, side: TmuxSide, host: SshHost) -> None:
        self.side = side
        self.command = _ssh_argv(host)

    def create(self) -> tuple[float, TmuxPane]:
        start = time.perf_counter()
        line = self.side.command(
            f"new-window -d -t bench: -P -F '#{{pane_id}} #{{pane_pid}} #{{window_id}}' "
            f"{quote(self.command)}"
        )[0]
        pane_id, pid, window_id = line.split()
        pane = TmuxPane(pane_id, int(pid), window_id)
        _poll(lambda: _prompt_last(self.side.capture(pane)), 30, "the ssh prompt in tmux")
        return time.perf_counter() - start, pane

    def round_trip(self, pane: TmuxPane, n: int) -> float:
        marker = f"M{n + 1}"
        start = time.perf_counter()
        self.side.command(f"send-keys -t {pane.pane_id} {quote(f'true; echo M$(({n}+1))')} Enter")
        _poll(
            lambda: any(line.strip() == marker for line in self.side.capture(pane).split("\n")),
            30,
            "the marker in tmux",
        )
        elapsed = time.perf_counter() - start
        self.side.command(f"send-keys -t {pane.pane_id} 'clear' Enter")
        _poll(lambda: _prompt_last(self.side.capture(pane)), 30, "tmux clear")
        return elapsed

    def close(self, pane: TmuxPane) -> None:
        self.side.kill_window(pane.window_id)


def _summary(values: list[float]) -> tuple[float, float]:
    return statistics.median(values) * 1000, percentile(values, 90) * 1000


def measure(host: SshHost, root: Path, reps: int, runs: int) -> list[str]:
    env = {
        "HOME": str(root / "home"),
        "PATH": os.environ.get("PATH", os.defpath),
        "SHELL": "/bin/bash",
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
    }
    (root / "home").mkdir()
    (root / "work").mkdir()
    pebrel = PebrelSide(root, env)
    (pebrel.data_dir / "settings.toml").write_text(
        "[profiles.bench]\n"
        f'ssh = {{ host = "127.0.0.1", port = {host.port}, identity_file = "{host.client_key}", '
        f'known_hosts = "{host.known_hosts}" }}\nintegration = true\n'
        "[profiles.plain]\n"
        f'ssh = {{ host = "127.0.0.1", port = {host.port}, identity_file = "{host.client_key}", '
        f'known_hosts = "{host.known_hosts}" }}\n'
    )
    tmux = TmuxSide(root, env)
    created: dict[str, list[float]] = {"pebrel": [], "tmux": [], "plain": []}
    trips: dict[str, list[float]] = {"pebrel": [], "tmux": []}
    try:
        pebrel.start()
        tmux.start()
        sides: list[tuple[str, SshSide]] = [
            ("pebrel", PebrelSsh(pebrel, "bench")),
            ("tmux", TmuxSsh(tmux, host)),
        ]
        plain = PebrelSsh(pebrel, "plain")
        for rep in range(reps):
            for name, side in sides if rep % 2 == 0 else reversed(sides):
                took, pane = side.create()
                created[name].append(took)
                for n in range(runs):
                    trips[name].append(side.round_trip(pane, rep * runs + n))
                side.close(pane)
            took, pane = plain.create()
            created["plain"].append(took)
            plain.close(pane)
    finally:
        problems = pebrel.stop() + tmux.stop()
    c_p, c_t = _summary(created["pebrel"]), _summary(created["tmux"])
    c_n = _summary(created["plain"])
    r_p, r_t = _summary(trips["pebrel"]), _summary(trips["tmux"])
    lines = [
        f"## SSH panes ({host.kind} server on loopback, {COLS}x{ROWS})",
        "",
        f"{reps} panes per side (turns alternate), {runs} round trips in each; polled every "
        f"{POLL_S * 1000:g} ms on a persistent connection on both sides.",
        "",
        "| measure | Pebrel median / p90 (ms) | ssh -tt in tmux median / p90 (ms) "
        "| ratio (median) |",
        "|---|---|---|---|",
        f"| pane to first prompt | {c_p[0]:.1f} / {c_p[1]:.1f} | {c_t[0]:.1f} / {c_t[1]:.1f} "
        f"| {c_p[0] / c_t[0]:.2f}x |",
        f"| pane to first prompt, no integration | {c_n[0]:.1f} / {c_n[1]:.1f} "
        f"| {c_t[0]:.1f} / {c_t[1]:.1f} | {c_n[0] / c_t[0]:.2f}x |",
        f"| `true` round trip | {r_p[0]:.1f} / {r_p[1]:.1f} | {r_t[0]:.1f} / {r_t[1]:.1f} "
        f"| {r_p[0] / r_t[0]:.2f}x |",
        "",
        "Ratios are Pebrel / tmux: below 1 is faster. The first row's Pebrel pane has "
        "`integration = true` (its bash integration is uploaded over an exec channel first); "
        "Pebrel's round trip is `pane.run true` with a real exit code, tmux's ends when the "
        "marker's output line is captured.",
    ]
    lines += [f"- problem: {problem}" for problem in problems]
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench ssh")
    parser.add_argument("--reps", type=int, default=8, help="panes created per side")
    parser.add_argument("--runs", type=int, default=20, help="round trips per pane")
    parser.add_argument(
        "--server",
        choices=["openssh", "asyncssh"],
        default="openssh" if sshhost.SSHD_USABLE else "asyncssh",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pebrel-bench-ssh-") as tmp:
        root = Path(tmp)
        with sshhost.ssh_host(root / "host", args.server) as host:
            for line in measure(host, root, args.reps, args.runs):
                print(line, flush=True)
    return 0
