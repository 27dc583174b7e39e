"""The pane worker process: one PTY, its screen and scrollback, its OSC 133 / OSC 7 tracker.

It reports facts to the router (marks, cwd, title, foreground group, exit) and answers the
router's commands (write, read, resize, close). It never decides what the facts mean.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from collections.abc import Callable

import zmq

from pebrel import heaptrim, proctree
from pebrel import messages as m
from pebrel.runtimelock import shell_key_file
from pebrel.workers.commands import COMMANDS
from pebrel.workers.config import WorkerConfig, screen_rules
from pebrel.workers.exec import ExecService
from pebrel.workers.foreground import ForegroundTracker
from pebrel.workers.osc import OscEvent, OscScanner
from pebrel.workers.oscfacts import OscFacts
from pebrel.workers.promptwrites import PROMPT_MARKS, PromptWrites
from pebrel.workers.pty import PosixPty, Terminal
from pebrel.workers.publisher import ScreenPublisher, needs_screen, needs_screen_now
from pebrel.workers.screen import PaneScreen
from pebrel.workers.screenwatch import ScreenRuleWatch
from pebrel.workers.shellkey import KEY_FILE_VAR, ShellKey
from pebrel.workers.shells import launch_spec
from pebrel.workers.ssh import SshPty
from pebrel.workers.status_records import STATUS_OSC_CODES, StatusRecords
from pebrel.workers.writes import PtyWriter
from pebrel.zmqio import NOBLOCK, Inbox, incoming, worker_connection

logger = logging.getLogger(__name__)

FOREGROUND_POLL_S = 0.05
#: Bytes fed to the screen per loop turn, so requests are served during a flood.
FEED_SLICE = 16 * 1024
#: How long a starting worker keeps short scheduler slices without a first prompt.
START_SLICE_S = 2.0
#: The signals that stop a worker (it closes its pane's process tree first).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


class Worker:
    def __init__(
        self,
        config: WorkerConfig,
        on_spawned: Callable[[int, bool], None] | None = None,
        ctx: zmq.Context[zmq.SyncSocket] | None = None,
        sock: zmq.SyncSocket | None = None,
        stopped: asyncio.Event | None = None,
        short_start_slice: bool = False,
    ) -> None:
        """Start the pane's shell first (``on_spawned(shell_pid, integrated)`` runs right
        after, so the router can answer), then build everything that reads its output.
        ``ctx``, ``sock``: a ZeroMQ context and a socket connected to the router, made ahead
        of time by a spare worker (only with the posix_spawn backend). ``stopped``: an event
        the STOP_SIGNALS already set (a spare installs their handlers while it waits).
        ``short_start_slice``: the main thread has short scheduler slices (a spare asked),
        kept until the shell's first prompt (START_SLICE_S at most): a starting pane yields a
        core at once to whoever waits for its answer; a flood must not compete on equal terms."""
        self.config = config
        self.own_signals = stopped is None
        self.short_slice = short_start_slice
        self.stopped = stopped if stopped is not None else asyncio.Event()
        self.ctx = ctx
        self.sock = sock
        self.inbox: Inbox | None = None  # made with the socket's reader, in run()
        argv, env = config.argv, dict(config.env)
        integrated = ends_with_b = False
        #: The secret the shell's integration puts in its marks (None: no integration).
        self.key: ShellKey | None = None
        if config.ssh is not None:
            # An SSH pane: it connects once the worker can report its phases (run()).
            if config.integrate:
                self.key = ShellKey()  # handed to the remote bash by workers/ssh_remote.py
                integrated = ends_with_b = True
            self.integrated = integrated
            self.ends_prompts_with_b = ends_with_b
            self.pty: Terminal = SshPty(
                config.ssh, env, config.cwd, config.cols, config.rows, self.key
            )
            if on_spawned is not None:
                on_spawned(self.pty.pid, integrated)
            self._build(config)
            return
        if config.integrate:
            spec = launch_spec(argv[0], env)
            argv, integrated, ends_with_b = spec.argv, spec.integrated, spec.ends_prompts_with_b
            env.update(spec.env)
            if integrated:
                self.key = ShellKey()
                path = shell_key_file(config.endpoint, os.getpid())
                env[KEY_FILE_VAR] = self.key.hand_over(path)
        self.integrated = integrated
        self.ends_prompts_with_b = ends_with_b
        # posix_spawn does not fork, so a spare's ZeroMQ context and I/O thread may exist
        # already (TRAPS: never fork with one; the ptyprocess fallback gets no spare context).
        try:
            self.pty = PosixPty(argv, env, config.cwd, config.cols, config.rows)
        except BaseException:
            self._discard_key()
            raise
        try:
            if on_spawned is not None:
                on_spawned(self.pty.pid, integrated)
            self._build(config)
        except BaseException:
            self.pty.kill()
            self._discard_key()
            raise

    def _discard_key(self) -> None:
        if self.key is not None:
            self.key.discard()

    def _build(self, config: WorkerConfig) -> None:
        self.scanner = OscScanner()
        self.screen = PaneScreen(
            config.cols, config.rows, config.scrollback_lines, write_back=self._write_back
        )
        # Execs get the pane's launch environment, without the shell integration's additions.
        self.execs = ExecService(self.pty.pid, dict(config.env), self.send)
        self.foreground = ForegroundTracker(self.pty.pid)
        self.osc = OscFacts(
            self._ids(), self.foreground, lambda: self.screen.cursor_row_absolute, self.key
        )
        # What the foreground program reports of itself (OSC 7501, OSC 9;4).
        self.status = StatusRecords(
            self._ids(),
            self.pty.foreground_pgid,
            self._write_back,
            lambda msg: self.send(msg),
            shell_pgid=self.pty.pid,
        )
        self.screen_rules = ScreenRuleWatch(
            screen_rules(config), self.screen.visible_text, self._send_screen_match
        )
        # Looked up per call, not bound now: tests put a recorder in place of ``send``.
        self.writer = PtyWriter(self.pty, lambda message: self.send(message), lambda: self.exited)
        self.prompt_writes = PromptWrites(
            self.writer, lambda message: self.send(message), self.ends_prompts_with_b
        )
        self.title = ""
        self.shell_in_foreground = True
        self.exited = False
        self.exit_task: asyncio.Task[None] | None = None
        # The screen as the router has it, published while it changes (workers/publisher.py).
        self.publisher = ScreenPublisher(
            self._ids(), self.screen.read, self.screen.size, lambda msg: self._transmit(msg)
        )
        # Free heap pages go back to the system after busy spells (output, commands, replies).
        self.heap = heaptrim.HeapTrim(heaptrim.malloc_trim())

    # -- outbound ----------------------------------------------------------------------------
    def send(self, message: m.Message) -> None:
        """Send one message; a pending publication of the screen goes first if the message can
        end a wait or answer a read, so that nothing the router learns about the output that
        way is newer than its copy of the screen (``workers/publisher.py``)."""
        if self.publisher.dirty and needs_screen(message):
            if needs_screen_now(message):
                self.publisher.flush()
            else:
                self.publisher.announce()
        elif isinstance(message, (m.InputWritten, m.PasteWritten)) and message.written > 0:
            self.publisher.input_written()
        self._transmit(message)

    def _transmit(self, message: m.Message) -> None:
        assert self.sock is not None and self.inbox is not None
        self.heap.busy = True
        try:
            self.sock.send(m.encode(message), flags=NOBLOCK)
        except zmq.ZMQError:
            logger.warning("router unreachable, message dropped", extra={"type": message.type})
            return
        self.inbox.sent()

    def _ids(self) -> dict[str, int]:
        return {"window_id": self.config.window_id, "pane_id": self.config.pane_id}

    # -- PTY output --------------------------------------------------------------------------
    def _write_back(self, data: bytes | str) -> None:
        payload = data.encode() if isinstance(data, str) else data
        self.writer.queue(-1, payload)

    def on_readable(self) -> None:
        data = self.pty.read(65536)
        if data is None:
            return
        if data == b"":
            self._on_eof()
            return
        self._process(data)

    def _process(self, data: bytes) -> None:
        self.heap.busy = True
        for part in self.scanner.feed(data):
            if isinstance(part, OscEvent):
                if part.code in STATUS_OSC_CODES:
                    self.status.osc(part.code, part.payload)
                    continue
                fact = self.osc.message(part)
                if fact is not None:
                    if isinstance(fact, m.ShellMarked) and fact.mark in ("A", "D"):
                        self.status.command_ended()
                    self.send(fact)
                    if isinstance(fact, m.ShellMarked):
                        self.prompt_writes.marked(fact.mark)
                        if fact.mark == "C":
                            self.screen_rules.command_started()
                        if fact.mark == "A":
                            self.status.prompt()
                        if fact.mark in PROMPT_MARKS:
                            self._started()
            else:
                self.publisher.changing()
                try:
                    for start in range(0, len(part), FEED_SLICE):
                        self.screen.feed(part[start : start + FEED_SLICE])
                except Exception:
                    # A parser fault loses the rest of this chunk, never the pane.
                    logger.exception("the screen could not take a chunk of output")
                self.screen_rules.screen_changed()
        self.publisher.changed()
        title = self.screen.title
        if title != self.title:
            self.title = title
            self.send(m.TitleChanged(**self._ids(), title=title))
        self._check_foreground()
        self.prompt_writes.output_done()  # types a line armed for a prompt this drew

    def _started(self) -> None:
        """The pane has started: back to the scheduler's default slice."""
        if self.short_slice:
            self.short_slice = False
            proctree.request_default_slice()

    def _check_foreground(self) -> None:
        if self.exited:
            return
        pgid = self.pty.foreground_pgid()
        if pgid is None:
            return
        fg = self.foreground.update(pgid, time.monotonic())
        if fg is not None:
            self.shell_in_foreground = fg.shell_in_foreground
            self.send(
                m.ForegroundChanged(
                    **self._ids(),
                    shell_in_foreground=fg.shell_in_foreground,
                    foreground_pgid=fg.pgid,
                    agent_kind=fg.agent_kind,
                    program=fg.program,
                )
            )
            self.screen_rules.set_kind(fg.agent_kind)
        # After the change of foreground: the shell's own state is in place when a program
        # that left takes its status report with it.
        self.status.foreground(pgid)

    def _ssh_phase(self, phase: str, error: str | None) -> None:
        self.send(m.SshPhase(**self._ids(), phase=phase, error=error))

    def _send_screen_match(self, rule_id: str | None, state: str | None) -> None:
        self.send(m.ScreenMatched(**self._ids(), rule_id=rule_id, state=state))

    def _on_eof(self) -> None:
        loop = asyncio.get_running_loop()
        loop.remove_reader(self.pty.fd)
        if not self.exited:
            self.exit_task = loop.create_task(self._await_exit())

    async def _await_exit(self) -> None:
        status = self.pty.reap()
        deadline = time.monotonic() + 5
        while status is None and time.monotonic() < deadline:
            await asyncio.sleep(0.01)  # EIO came first; the exit status follows within ms
            status = self.pty.reap()
        self.exited = True
        code = status.exit_code if status else None
        sig = status.signal if status else None
        reason = (
            status.reason
            if status is not None and status.reason
            else f"shell exited with status {code}"
            if sig is None
            else f"shell killed by signal {sig}"
        )
        logger.info("shell exited", extra={**self._ids(), "exit_code": code})
        self.send(m.PaneExited(**self._ids(), exit_code=code, signal=sig, reason=reason))
        self.prompt_writes.pane_exited()  # after the exit: the router says why it was not typed

    # -- router commands (workers/commands.py) ---------------------------------------------
    def handle(self, message: m.Message) -> None:
        """Apply one command (ClosePane sets ``stopped``: the worker exits)."""
        self.heap.busy = True
        command = COMMANDS.get(type(message))
        if command is not None:
            command(self, message)

    def on_readable_all(self) -> None:
        """Process the output waiting when a read arrives, so it sees everything written so far.

        Only what the terminal holds at this moment: under a flood the writer refills the
        buffer as fast as it is read, and chasing it would hold the answer for as long.
        """
        budget = max(self.pty.waiting(), 1)  # at least one read: it also reports EOF
        for _ in range(64):
            data = self.pty.read(min(budget, 65536))
            if not data:
                if data == b"":
                    self._on_eof()
                return
            self._process(data)
            budget -= len(data)
            if budget <= 0:
                return

    def close_tree(self) -> None:
        self.execs.close()
        self.pty.kill()
        proctree.kill_descendants()
        self.pty.reap()
        self.pty.close_fd()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        stop = self.stopped
        # A plain socket read from the loop's selector: zmq.asyncio's futures cost ~10 us a call.
        self.ctx, sock = worker_connection(self.ctx, self.sock, self.config.endpoint)
        self.sock = sock
        self.inbox = Inbox(sock, self._receive)
        self.send(
            m.PaneStarted(
                **self._ids(),
                worker_pid=os.getpid(),
                shell_pid=self.pty.pid,
                integrated=self.integrated,
            )
        )
        loop.add_reader(self.pty.fd, self.on_readable)
        if isinstance(self.pty, SshPty):
            self.pty.start(self._ssh_phase)
        self.execs.install(loop)
        if self.own_signals:
            for sig in STOP_SIGNALS:
                loop.add_signal_handler(sig, stop.set)
        poll = loop.create_task(self._poll_foreground())
        trim = loop.create_task(self.heap.run())
        if self.short_slice:
            loop.call_later(START_SLICE_S, self._started)
        fd = sock.fileno()
        loop.add_reader(fd, self._receive)
        loop.call_soon(self._receive)
        await stop.wait()
        poll.cancel()
        trim.cancel()
        self.screen_rules.close()
        self.publisher.close()
        loop.remove_reader(fd)
        if not self.exited:
            self.close_tree()
        else:
            self.execs.close()
            proctree.kill_descendants()
        self._discard_key()
        sock.close(linger=500)
        self.ctx.term()

    def _receive(self) -> None:
        """Handle every command waiting on the socket (its FD is edge-triggered: drain it)."""
        assert self.sock is not None and self.inbox is not None
        if self.stopped.is_set():
            return
        with self.inbox.draining():  # replies sent here need not schedule another drain
            for _, message in incoming(self.sock):
                try:
                    self.handle(message)
                except Exception:
                    logger.exception(
                        "worker failed to handle a message", extra={"type": message.type}
                    )
                    continue
                if self.stopped.is_set():
                    return

    async def _poll_foreground(self) -> None:
        while True:
            await asyncio.sleep(FOREGROUND_POLL_S)
            self._check_foreground()
