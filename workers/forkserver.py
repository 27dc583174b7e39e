"""The fork server: a small process that has imported the pane worker and forks one per pane.

Starting a fresh interpreter per pane costs ~100 ms; forking this already-initialised process
costs a few milliseconds, and the children share its imported code pages (`gc.freeze()` keeps
the collector from touching them). It has no threads and no ZeroMQ context (TRAPS: never fork
with either). Protocol on its stdin/stdout, one JSON object per line:
  router -> {"id": N, "config": {...WorkerConfig...}}
  server -> {"id": N, "pid": P, "shell_pid": S, "integrated": B} or {"id": N, "error": "..."}
(``shell_pid`` and ``integrated`` are missing if the worker could not start its shell, or did
not say so within REPORT_TIMEOUT_S: the router then waits for the worker's own report.)
  server -> {"exited": P, "returncode": C}  (C < 0: killed by signal -C)
It reaps its own children (all of them are pane workers) and exits when its stdin closes; its
workers then get SIGTERM from their parent-death signal.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import selectors
import signal
import sys
import time
from typing import Any

from pebrel import proctree
from pebrel.screenrules import shipped_rules
from workers import app as worker_app
from workers import startup
from workers.shells import launch_spec

REPORT_TIMEOUT_S = 2.0
"""How long the server waits for a new worker to report its shell before replying without."""


def _child(
    config: dict[str, Any], report_fd: int, request_fd: int, wakeup_r: int, wakeup_w: int
) -> None:
    """In the forked child: become a clean pane worker process, then run it."""
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in (request_fd, wakeup_r, wakeup_w):
            os.close(fd)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.close(devnull)
        os.setsid()
        gc.unfreeze()
        startup.run_worker(worker_app.WorkerConfig(**config), report_fd)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        code = 1
    os._exit(code)


def _read_report(fd: int) -> dict[str, Any]:
    """The new worker's one-line report of its shell ({} on EOF, garbage or timeout)."""
    data = b""
    deadline = time.monotonic() + REPORT_TIMEOUT_S
    while b"\n" not in data:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            return {}
        chunk = os.read(fd, 4096)
        if not chunk:
            return {}
        data += chunk
    try:
        report = json.loads(data.split(b"\n", 1)[0])
        return {"shell_pid": int(report["shell_pid"]), "integrated": bool(report["integrated"])}
    except (ValueError, KeyError, TypeError):
        return {}


class ForkServer:
    def __init__(self) -> None:
        self.requests = sys.stdin.fileno()
        self.out = sys.stdout.buffer
        self.wakeup_r, self.wakeup_w = os.pipe()
        os.set_blocking(self.wakeup_r, False)
        os.set_blocking(self.wakeup_w, False)
        self.buffer = b""
        self.children: set[int] = set()

    def reply(self, message: dict[str, Any]) -> None:
        self.out.write(json.dumps(message).encode() + b"\n")
        self.out.flush()

    def spawn(self, request: dict[str, Any]) -> None:
        report_r, report_w = os.pipe()
        try:
            pid = os.fork()
        except OSError as exc:
            os.close(report_r)
            os.close(report_w)
            self.reply({"id": request.get("id"), "error": str(exc)})
            return
        if pid == 0:
            os.close(report_r)
            _child(request["config"], report_w, self.requests, self.wakeup_r, self.wakeup_w)
        os.close(report_w)
        self.children.add(pid)
        try:
            shell = _read_report(report_r)
        finally:
            os.close(report_r)
        self.reply({"id": request.get("id"), "pid": pid, **shell})

    def reap(self) -> None:
        for pid in list(self.children):
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done, status = pid, 0
            if done == 0:
                continue
            self.children.discard(pid)
            code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
            self.reply({"exited": pid, "returncode": code})

    def on_requests(self) -> bool:
        data = os.read(self.requests, 1 << 20)
        if not data:
            return False
        self.buffer += data
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            if line.strip():
                self.spawn(json.loads(line))
        return True

    def serve(self) -> None:
        signal.set_wakeup_fd(self.wakeup_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        selector = selectors.DefaultSelector()
        selector.register(self.requests, selectors.EVENT_READ, "requests")
        selector.register(self.wakeup_r, selectors.EVENT_READ, "sigchld")
        running = True
        while running:
            for key, _ in selector.select():
                if key.data == "sigchld":
                    while True:
                        try:
                            if not os.read(self.wakeup_r, 512):
                                break
                        except BlockingIOError:
                            break
                    self.reap()
                elif not self.on_requests():
                    running = False
        for pid in list(self.children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)


def _warm_caches() -> None:
    """Do once here what every worker would otherwise do at start (children inherit it)."""
    shipped_rules()  # ~3 ms: the shipped screen rules, parsed and compiled
    for shell in ("bash", "zsh", "fish"):
        launch_spec(shell, os.environ)  # ~1 ms for bash: reads the binary for SYS_BASHRC


def main() -> None:
    proctree.set_parent_death_signal(signal.SIGTERM)
    if len(sys.argv) > 1:  # the runtime log: workers inherit the open handler
        startup.configure_logging(sys.argv[1])
    _warm_caches()
    gc.collect()
    gc.freeze()
    ForkServer().serve()


if __name__ == "__main__":
    main()
