"""The tmux side of a run: a private tmux server (`tmux -L pebrel-bench-<pid>`, generated
config) with the same geometry and environment as Pebrel (`TmuxSide`), its panes (`TmuxPane`),
and the persistent `tmux -C` control-mode client that is the comparator of a persistent
connection (`TmuxControl`)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench.common import COLS, HISTORY_LINES, ROWS, BenchError, run_command

TMUX_CONF = f"""\
set -g default-shell /bin/bash
set -g default-command "/bin/bash"
set -g history-limit {HISTORY_LINES}
set -g default-size {COLS}x{ROWS}
set -g status off
set -g escape-time 0
set -g remain-on-exit off
"""


PANE_FORMAT = "'#{pane_id} #{pane_pid} #{window_id}'"


class TmuxControl:
    """A persistent `tmux -C` control-mode client (the comparator of a persistent connection)."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin = self.proc.stdin
        self.stdout = self.proc.stdout
        self.buffer = b""
        self._block("attach-session")  # the block answering the command line's own command

    def _line(self) -> bytes:
        while b"\n" not in self.buffer:
            chunk = os.read(self.stdout.fileno(), 65536)
            if not chunk:
                raise BenchError("tmux control client closed its output")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def _block(self, command: str) -> list[str]:
        while True:
            line = self._line()
            if line.startswith(b"%begin"):
                break
        out: list[bytes] = []
        while True:
            line = self._line()
            if line.startswith((b"%end", b"%error")):
                if line.startswith(b"%error"):
                    text = b" ".join(out).decode(errors="replace")
                    raise BenchError(f"tmux {command!r}: {text}")
                return [item.decode(errors="replace") for item in out]
            out.append(line)

    def command(self, command: str) -> list[str]:
        """Run one command; return its output lines (raise on %error)."""
        self.stdin.write(command.encode() + b"\n")
        return self._block(command)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        with contextlib.suppress(OSError):
            self.stdout.close()


@dataclass
class TmuxPane:
    pane_id: str  # "%N"
    pid: int
    window_id: str  # "@N"


class TmuxSide:
    """A private tmux server (`tmux -L pebrel-bench-<pid>`) with the same geometry and env."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.socket = f"pebrel-bench-{os.getpid()}"
        self.tmpdir = root / "tmux"
        self.tmpdir.mkdir()
        self.env = {**env, "TMUX_TMPDIR": str(self.tmpdir)}
        self.env.pop("TMUX", None)
        self.conf = root / "tmux.conf"
        self.conf.write_text(TMUX_CONF)
        self.cwd = root / "work"
        self.exe = shutil.which("tmux") or "tmux"
        self.base = [self.exe, "-L", self.socket, "-f", os.devnull]
        self.ctl: TmuxControl | None = None
        self.started = False
        self.version = ""
        self._signals = 0

    def cli(self, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return run_command([*self.base, *args], self.env, self.cwd, timeout)

    def start(self) -> None:
        self.version = subprocess.run(
            [self.exe, "-V"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
        self.started = True
        # A session the control client attaches to: it never shows measured panes' output.
        proc = self.cli("new-session", "-d", "-s", "ctl", "-x", str(COLS), "-y", str(ROWS))
        if proc.returncode != 0:
            raise BenchError(f"tmux new-session failed: {proc.stderr}")
        # Options are sourced once the server runs: tmux 3.3a crashes on some of them at startup.
        proc = self.cli("source-file", str(self.conf))
        if proc.returncode != 0:
            raise BenchError(f"tmux source-file failed: {proc.stderr}")
        proc = self.cli("new-session", "-d", "-s", "bench", "-x", str(COLS), "-y", str(ROWS))
        if proc.returncode != 0:
            raise BenchError(f"tmux new-session failed: {proc.stderr}")
        self.ctl = TmuxControl([*self.base, "-C", "attach-session", "-t", "ctl"], self.env)
        self.ctl.command("refresh-client -f no-output")

    def command(self, command: str) -> list[str]:
        assert self.ctl is not None
        return self.ctl.command(command)

    def reconnect(self) -> None:
        """A fresh control client (after a timeout left one blocked or mid-answer)."""
        if self.ctl is not None:
            self.ctl.proc.kill()
            self.ctl.close()
        self.ctl = TmuxControl([*self.base, "-C", "attach-session", "-t", "ctl"], self.env)
        self.ctl.command("refresh-client -f no-output")

    def server_pid(self) -> int:
        return int(self.command("display-message -p '#{pid}'")[0])

    def new_window(self, ready: bool = True) -> TmuxPane:
        line = self.command(f"new-window -d -t bench: -c {self.cwd} -P -F {PANE_FORMAT}")[0]
        pane_id, pid, window_id = line.split()
        pane = TmuxPane(pane_id, int(pid), window_id)
        if ready:
            self.ready(pane)
        return pane

    def split(self, pane: TmuxPane, command: str | None = None) -> TmuxPane:
        tail = f" {quote(command)}" if command else ""
        line = self.command(f"split-window -d -t {pane.pane_id} -P -F {PANE_FORMAT}{tail}")[0]
        pane_id, pid, window_id = line.split()
        return TmuxPane(pane_id, int(pid), window_id)

    def wait_for(self, channel: str) -> None:
        """Block until `channel` is signalled.

        In control mode tmux answers `wait-for` at once and holds the client's *next* command
        until the signal: a no-op after it is what really waits.
        """
        self.command(f"wait-for {channel}")
        self.command("display-message -p ok")

    def channel(self) -> str:
        self._signals += 1
        return f"bench-{self._signals}"

    def send(self, pane: TmuxPane, text: str) -> None:
        self.command(f"send-keys -t {pane.pane_id} -l {quote(text)}")
        self.command(f"send-keys -t {pane.pane_id} Enter")

    def run_and_wait(self, pane: TmuxPane, command: str) -> None:
        """Type `command; tmux wait-for -S ch` and block on `wait-for ch`."""
        ch = self.channel()
        self.command(
            f"send-keys -t {pane.pane_id} {quote(f'{command}; tmux wait-for -S {ch}')} Enter"
        )
        self.wait_for(ch)

    def ready(self, pane: TmuxPane) -> None:
        self.run_and_wait(pane, "true")

    def capture(self, pane: TmuxPane) -> str:
        return "\n".join(self.command(f"capture-pane -p -t {pane.pane_id}"))

    def kill_pane(self, pane: TmuxPane) -> None:
        with contextlib.suppress(BenchError):
            self.command(f"kill-pane -t {pane.pane_id}")

    def kill_window(self, window_id: str) -> None:
        with contextlib.suppress(BenchError):
            self.command(f"kill-window -t {window_id}")

    def pane_count(self) -> int:
        return len(self.command("list-panes -a -F '#{pane_id}'"))

    def stop(self) -> list[str]:
        problems: list[str] = []
        if self.ctl is not None:
            self.ctl.close()
            self.ctl = None
        if self.started:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.cli("kill-server", timeout=10)
        return problems


def quote(text: str) -> str:
    """Quote an argument for a tmux command line (single quotes, as in sh)."""
    return "'" + text.replace("'", "'\\''") + "'"
