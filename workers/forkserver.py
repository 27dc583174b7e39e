"""The fork server: a small process that has imported the pane worker and forks one per pane.

Starting a fresh interpreter per pane costs ~100 ms; forking this already-initialised process
costs a few milliseconds, and the children share its imported code pages (`gc.freeze()` keeps
the collector from touching them). It has no threads and no ZeroMQ context (TRAPS: never fork
with either).

It keeps one *spare* child forked ahead of time, already set up as a worker process and blocked
on reading its config, so a new pane does not wait for a fork: the request's config goes down
the spare's pipe and a new spare is forked afterwards. Protocol, one JSON object per line:
  router -> server (stdin):   {"id": N, "config": {...WorkerConfig...}}
  server -> router (stdout):  {"id": N, "pid": P} or {"id": N, "error": "..."}
  worker -> router (the same stdout pipe, written by the new worker itself once its shell runs,
  so the answer does not wait for this process to be scheduled):
                              {"id": N, "shell_pid": S, "integrated": B}
                              {"id": N, "shell_pid": null, "integrated": false}  (it could not
                              start the shell; its PaneStartFailed follows over ZeroMQ)
  server -> router:           {"exited": P, "returncode": C}  (C < 0: killed by signal -C)
Every line is one write() of less than PIPE_BUF bytes, so lines from different processes never
interleave. It reaps its own children (pane workers and the spare) and exits when its stdin
closes; its children then get SIGTERM from their parent-death signal.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import selectors
import signal
import sys
import time
from typing import Any

from pebrel import proctree
from pebrel.screenrules import shipped_rules
from workers import startup
from workers.shells import launch_spec

SPARE_DELAY_S = 0.01
"""How long after handing out the spare the next one is forked: not while the new pane's
worker and shell are starting on the same cores."""
SPARE_RETRY_S = 1.0
"""How long after a failed fork, or a spare that died unused, the next one is tried (a spare
that cannot start, say a vanished endpoint, must not become a fork loop)."""


def _write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to a blocking pipe (a config larger than the pipe's 64 KiB is
    written as the child reads it; a signal can cut a write short)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _child(
    parent: int, config_r: int, out_fd: int, private: list[int], endpoint: str | None
) -> None:
    """In the forked child: become a clean pane worker process, wait for its config, run it."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        proctree.set_parent_death_signal(signal.SIGTERM)
        if os.getppid() != parent:  # the fork server died before the line above
            os._exit(0)
        report_fd = os.dup(out_fd)  # the router's end of stdout, for this worker's report
        for fd in private:
            os.close(fd)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)  # stdin was the fork server's requests
        os.dup2(devnull, 1)
        os.close(devnull)
        os.setsid()
        startup.serve(startup.prepare(endpoint), config_r, report_fd)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        code = 1
    os._exit(code)


class ForkServer:
    def __init__(self, endpoint: str | None) -> None:
        self.endpoint = endpoint  # the router's: a spare connects before it has a pane
        self.requests = sys.stdin.fileno()
        self.out = sys.stdout.buffer
        self.wakeup_r, self.wakeup_w = os.pipe()
        os.set_blocking(self.wakeup_r, False)
        os.set_blocking(self.wakeup_w, False)
        self.buffer = b""
        self.children: set[int] = set()
        #: Children that never got a pane (a spare that died first): their exit is not news.
        self.unreported: set[int] = set()
        #: The child forked ahead of time: (pid, write end of its config pipe).
        self.spare: tuple[int, int] | None = None
        self.refill_at = 0.0  # time.monotonic() when the next spare is forked

    def reply(self, message: dict[str, Any]) -> None:
        self.out.write(json.dumps(message).encode() + b"\n")
        self.out.flush()

    def fork_child(self) -> tuple[int, int]:
        """A child set up as a worker process, waiting for its config on the returned fd."""
        config_r, config_w = os.pipe()
        parent = os.getpid()
        private = [self.wakeup_r, self.wakeup_w, config_w]
        if self.spare is not None:
            private.append(self.spare[1])
        try:
            pid = os.fork()
        except OSError:
            os.close(config_r)
            os.close(config_w)
            raise
        if pid == 0:
            _child(parent, config_r, self.out.fileno(), private, self.endpoint)
        os.close(config_r)
        self.children.add(pid)
        return pid, config_w

    def refill(self) -> None:
        """Fork the next spare when it is due (a failed fork only means the next pane forks
        on request)."""
        if self.spare is None and time.monotonic() >= self.refill_at:
            try:
                self.spare = self.fork_child()
            except OSError:
                self.refill_at = time.monotonic() + SPARE_RETRY_S

    def spawn(self, request: dict[str, Any]) -> None:
        line = json.dumps(request).encode() + b"\n"
        while True:
            try:
                if self.spare is not None:
                    (pid, config_w), self.spare = self.spare, None
                else:
                    pid, config_w = self.fork_child()
            except OSError as exc:
                self.reply({"id": request.get("id"), "error": str(exc)})
                return
            try:
                _write_all(config_w, line)
            except OSError:
                self.unreported.add(pid)  # that spare died unused: take a new child
                continue
            finally:
                os.close(config_w)
            self.reply({"id": request.get("id"), "pid": pid})
            self.refill_at = time.monotonic() + SPARE_DELAY_S
            return

    def reap(self) -> None:
        for pid in list(self.children):
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done, status = pid, 0
            if done == 0:
                continue
            self.children.discard(pid)
            if self.spare is not None and self.spare[0] == pid:
                os.close(self.spare[1])  # died unused: nobody needs to hear of it
                self.spare = None
                self.refill_at = time.monotonic() + SPARE_RETRY_S
                continue
            if pid in self.unreported:
                self.unreported.discard(pid)
                continue
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
        self.refill()
        running = True
        while running:
            timeout = None if self.spare else max(0.0, self.refill_at - time.monotonic())
            for key, _ in selector.select(timeout):
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
            if running:
                self.refill()
        if self.spare is not None:
            os.close(self.spare[1])  # the spare reads EOF and exits
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
    # argv: [the runtime log (workers inherit the open handler), the router's endpoint]
    if len(sys.argv) > 1:
        startup.configure_logging(sys.argv[1])
    _warm_caches()
    gc.collect()
    gc.freeze()
    ForkServer(sys.argv[2] if len(sys.argv) > 2 else None).serve()


if __name__ == "__main__":
    main()
