"""The router's side of the collab service: start, supervise, route, serve its calls (#16).

The collab service (`python -P -m pebrel.collab`, collab/app.py) is started after the frontend
adapter, over its own link (pebrel/link.py) with its config on stdin. The runtime never waits
for it and never stops for it:

- `collab.*` requests are validated against the schema here, stamped with their caller
  (router/collab_caller.py, cached per connection) and forwarded; its `CollabAnswered` goes
  back as the request's answer. While the service is not running they are answered
  INTEGRATION_RUNTIME_UNAVAILABLE (retryable), and so is every request in flight when it
  exits or its link is lost.
- It is restarted after a backoff of 0.2 s, doubled each time up to 10 s, back to 0.2 s once
  a run lasted 60 s; a run that does not say `CollabStarted` in time is killed.
- Its `TerminalCall`s run through the router's method table as a user's request would
  (`call_method`); while it watches, each new revision is sent to it as `SnapshotChanged`, at
  most one per 100 ms with the last one always sent (`Coalescer`).
- At runtime shutdown it is told `StopCollab`, given 3 s, then killed.
- It is not started at all when `<data_dir>/integration.sock` would be longer than a Unix
  socket path may be (the service serves that socket): runtime.log says so, and every
  `collab.*` request is answered INTEGRATION_RUNTIME_UNAVAILABLE with the reason.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pebrel import __version__, entrypoints, integration_wire
from pebrel import messages as m
from pebrel.datadir import LOG_FILE
from pebrel.envelope import EncodedResult
from pebrel.errors import CollabCode, CollabError, ErrorCode, PebrelError, internal_error
from pebrel.link import Link, open_link, start_linked_process
from pebrel.router import collab_caller
from pebrel.router.methods import METHODS
from pebrel.router.runtime import Runtime
from pebrel.schema import validate_params

logger = logging.getLogger(__name__)

PREFIX = "collab."
BACKOFF_MIN_S = 0.2
BACKOFF_MAX_S = 10.0
#: A run this long resets the backoff.
BACKOFF_RESET_S = 60.0
#: A service that has not said CollabStarted by then is killed (and restarted).
STARTUP_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 3.0
SNAPSHOT_INTERVAL_S = 0.1
#: How long `runtime start` waits for the service's first start before it announces the
#: runtime anyway (the runtime never depends on the service; see `wait_ready`).
READY_WAIT_S = 5.0

#: answer(request, ok, result, error): send a request's answer to its client.
Answer = Callable[[m.HandleRequest, bool, dict[str, Any] | None, dict[str, Any] | None], None]


def unavailable(message: str) -> dict[str, Any]:
    return CollabError(CollabCode.INTEGRATION_RUNTIME_UNAVAILABLE, message).to_wire()


async def call_method(
    rt: Runtime, method: str, params: dict[str, Any]
) -> tuple[bool, dict[str, Any] | None, dict[str, Any] | None]:
    """Run one runtime method for the collab service, as a user's request is run."""
    try:
        validate_params(method, params)
        handler = METHODS.get(method)
        if handler is None:  # a collab.* method: the service does not call itself
            raise PebrelError(
                ErrorCode.METHOD_NOT_FOUND, f"unknown method {method!r}", {"method": method}
            )
        if rt.closing:
            raise PebrelError(ErrorCode.RUNTIME_UNAVAILABLE, "the runtime is stopping")
        result = await handler(rt, params)
    except PebrelError as exc:
        return False, None, exc.to_wire()
    except Exception:
        failure = internal_error()
        logger.exception(
            "internal error in a collab service call (incident %s)",
            failure.details["incident"],
            extra={**failure.details, "method": method},
        )
        return False, None, failure.to_wire()
    if isinstance(result, EncodedResult):
        decoded: dict[str, Any] = json.loads(result.json)
        return True, decoded, None
    return True, result, None


class Coalescer:
    """Calls `send` at most once per `interval_s`; a poke inside the interval is sent at its end
    (so the last change is always sent, and `send` reads the state as it is then)."""

    def __init__(self, interval_s: float, send: Callable[[], None]) -> None:
        self.interval_s = interval_s
        self.send = send
        self.last = float("-inf")
        self.timer: asyncio.TimerHandle | None = None

    def poke(self) -> None:
        if self.timer is not None:
            return
        loop = asyncio.get_running_loop()
        wait = self.last + self.interval_s - loop.time()
        if wait <= 0:
            self.fire()
        else:
            self.timer = loop.call_later(wait, self.fire)

    def fire(self) -> None:
        self.timer = None
        self.last = asyncio.get_running_loop().time()
        self.send()

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


@dataclass(eq=False)
class Run:
    """One life of the collab service process."""

    proc: subprocess.Popen[bytes]
    started: asyncio.Future[None]
    lost: asyncio.Event = field(default_factory=asyncio.Event)
    link: Link | None = None
    watching: bool = False


class CollabLink:
    def __init__(self, rt: Runtime, data_dir: Path, answer: Answer) -> None:
        self.rt = rt
        self.data_dir = data_dir
        self.answer = answer
        #: The frontend adapter's listening port (client connections go to it).
        self.server_port = 0
        self.run: Run | None = None
        self.task: asyncio.Task[None] | None = None
        self.closing = False
        self.ids = itertools.count(1)
        self.pending: dict[int, tuple[Run, m.HandleRequest]] = {}
        self.callers: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.background: set[asyncio.Task[None]] = set()
        self.snapshots = Coalescer(SNAPSHOT_INTERVAL_S, self.send_snapshot)
        #: Why the service is not started at all (its socket path is too long), if it is not.
        self.refused: str | None = None
        #: Set once a run of the service said CollabStarted (its socket listens).
        self.ready = asyncio.Event()

    # -- requests --------------------------------------------------------------------------------
    async def handle(self, request: m.HandleRequest) -> None:
        """A client's `collab.*` request: validate, place its caller, forward it."""
        try:
            validate_params(request.method, request.params)
            if self.rt.closing:
                raise PebrelError(ErrorCode.RUNTIME_UNAVAILABLE, "the runtime is stopping")
            # Each request waits on its own outer future: on 3.11 a request's first step runs
            # outside a Task (router/eager.py), and two first steps awaiting one shared future
            # break asyncio's handshake ("await wasn't used with future"); the shield also
            # keeps one waiter's cancellation from cancelling the connection's kept caller.
            caller = await asyncio.shield(self.caller_of(request))
        except PebrelError as exc:
            self.answer(request, False, None, exc.to_wire())
            return
        except Exception:
            self.callers.pop(request.connection_id, None)  # not kept: the next one tries again
            failure = internal_error()
            logger.exception(
                "internal error (incident %s)",
                failure.details["incident"],
                extra={**failure.details, "method": request.method},
            )
            self.answer(request, False, None, failure.to_wire())
            return
        run = self.run
        if run is None or run.link is None or not run.link.open or self.closing:
            why = self.refused or "the collab service is not running"
            self.answer(request, False, None, unavailable(why))
            return
        request_id = next(self.ids)
        self.pending[request_id] = (run, request)
        run.link.send(
            m.CollabRequest(
                request_id=request_id,
                method=request.method,
                params=request.params,
                caller=caller,
            )
        )

    def caller_of(self, request: m.HandleRequest) -> asyncio.Future[dict[str, Any]]:
        """The request's caller, resolved once per connection (off the loop: /proc)."""
        known = self.callers.get(request.connection_id)
        if known is None:
            panes = {
                pid: (pane.window_id, pane.pane_id)
                for pane in [*self.rt.state.panes.values(), *self.rt.starting.values()]
                for pid in (pane.pid, pane.worker_pid)
                if pid
            }
            known = asyncio.get_running_loop().run_in_executor(
                None,
                collab_caller.resolve,
                request.peer_port,
                self.server_port,
                panes,
                os.getpid(),
            )
            self.callers[request.connection_id] = known
        return known

    async def placed_caller(self, request: m.HandleRequest) -> dict[str, Any]:
        """The request's caller, for a method only the user may call. Only the user is kept
        for the connection: a failure, or a caller not placed as the user (a lookup can miss a
        connection while /proc/net/tcp changes under it), is looked up again next time."""
        try:
            caller = await asyncio.shield(self.caller_of(request))
        except Exception:
            self.callers.pop(request.connection_id, None)
            raise
        if caller.get("kind") != "user":
            self.callers.pop(request.connection_id, None)
        return caller

    def connection_closed(self, connection_id: int) -> None:
        self.callers.pop(connection_id, None)

    # -- messages of the service -----------------------------------------------------------------
    def on_message(self, run: Run, message: m.Message) -> None:
        if isinstance(message, m.CollabAnswered):
            waiting = self.pending.pop(message.request_id, None)
            if waiting is not None and waiting[0] is run:
                self.answer(waiting[1], message.ok, message.result, message.error)
        elif isinstance(message, m.TerminalCall):
            task = asyncio.get_running_loop().create_task(self.terminal_call(run, message))
            self.background.add(task)
            task.add_done_callback(self.background.discard)
        elif isinstance(message, m.WatchSnapshots):
            run.watching = message.on
            if message.on:
                self.snapshots.fire()  # a new watcher gets the current snapshot at once
        elif isinstance(message, m.CollabStarted) and not run.started.done():
            run.started.set_result(None)
            self.ready.set()

    async def terminal_call(self, run: Run, call: m.TerminalCall) -> None:
        ok, result, error = await call_method(self.rt, call.method, call.params)
        if run.link is not None:  # dropped if that run's link is gone
            run.link.send(
                m.TerminalAnswered(call_id=call.call_id, ok=ok, result=result, error=error)
            )

    def revised(self) -> None:
        """The runtime's state has a new revision."""
        run = self.run
        if run is not None and run.watching and run.link is not None and run.link.open:
            self.snapshots.poke()

    def send_snapshot(self) -> None:
        run = self.run
        if run is None or not run.watching or run.link is None:
            return
        state = self.rt.state
        run.link.send(
            m.SnapshotChanged(
                connection_id=0,
                runtime_id=state.runtime_id,
                revision=state.revision,
                snapshot=state.snapshot(),
            )
        )

    # -- the process ---------------------------------------------------------------------------
    def start(self, server_port: int) -> None:
        """Start supervising the service (returns at once; the runtime does not wait). A data
        dir whose integration socket path is too long for a Unix socket (I1.6): the service
        is not started, the log says why, and so does every `collab.*` answer."""
        self.server_port = server_port
        self.refused = integration_wire.path_problem(self.data_dir)
        if self.refused:
            logger.error("the collab service is not started: %s", self.refused)
            return
        self.task = asyncio.get_running_loop().create_task(self.supervise())

    async def wait_ready(self, timeout_s: float = READY_WAIT_S) -> bool:
        """Wait for the service's first start (at most ``timeout_s``), so that a client that
        runs `pebrel collab --principal ...` right after `pebrel runtime start` finds the
        integration socket listening. False (logged) when it did not start in time or is not
        started at all: the runtime is announced anyway and the supervisor keeps trying."""
        if self.refused or self.task is None:
            return False
        try:
            await asyncio.wait_for(self.ready.wait(), timeout_s)
        except TimeoutError:
            logger.warning("the collab service did not start within %.0f s", timeout_s)
            return False
        return True

    async def supervise(self) -> None:
        loop = asyncio.get_running_loop()
        delay = BACKOFF_MIN_S
        while not self.closing:
            began = loop.time()
            status: int | None = None
            try:
                status = await self.run_once()
            except Exception:
                logger.exception("the collab service could not be run")
            if self.closing:
                return
            if loop.time() - began >= BACKOFF_RESET_S:
                delay = BACKOFF_MIN_S
            logger.warning(
                "collab service exited (status %s): restarting it in %.1f s", status, delay
            )
            await asyncio.sleep(delay)
            delay = min(delay * 2, BACKOFF_MAX_S)

    async def run_once(self) -> int | None:
        """One life of the service; its exit status."""
        run = await self.spawn()
        try:
            await asyncio.wait_for(asyncio.shield(run.started), STARTUP_TIMEOUT_S)
            logger.info("collab service running (pid %d)", run.proc.pid)
            await run.lost.wait()
        except TimeoutError:
            run.started.cancel()
            logger.error("the collab service did not start in time: killing it")
        except ConnectionError:
            pass  # it exited during its start
        finally:
            self.gone(run)
            await self.reap(run.proc)
        return run.proc.returncode

    async def spawn(self) -> Run:
        config = {
            "data_dir": str(self.data_dir),
            "log_path": str(self.data_dir / LOG_FILE),
            "version": __version__,
            "runtime_id": self.rt.state.runtime_id,
        }
        # From this (the loop's) thread, so its parent-death signal is tied to the router's
        # life, not an executor thread's.
        proc, ours = start_linked_process(entrypoints.COLLAB, config, self.data_dir / LOG_FILE)
        run = Run(proc, asyncio.get_running_loop().create_future())
        self.run = run
        try:
            run.link = await open_link(
                ours, lambda message: self.on_message(run, message), lambda: self.link_lost(run)
            )
        except BaseException:
            ours.close()
            proc.kill()
            self.gone(run)
            await self.reap(proc)
            raise
        return run

    def link_lost(self, run: Run) -> None:
        run.lost.set()
        if not run.started.done():
            run.started.set_exception(ConnectionResetError("the collab link closed"))

    def gone(self, run: Run) -> None:
        """The run ended: its link closes, every request in flight on it is answered."""
        run.watching = False
        if run.link is not None:
            run.link.close()
        if self.run is run:
            self.run = None
            self.snapshots.cancel()
        for request_id, (owner, request) in list(self.pending.items()):
            if owner is run:
                del self.pending[request_id]
                error = unavailable("the collab service exited before it answered")
                self.answer(request, False, None, error)

    async def reap(self, proc: subprocess.Popen[bytes]) -> None:
        """Wait for the process to exit (it is told, or its link is gone), else kill it."""
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(None, proc.wait, STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            await loop.run_in_executor(None, proc.wait)
        self.rt.disown(proc.pid)

    async def stop(self) -> None:
        """At runtime shutdown: StopCollab, STOP_TIMEOUT_S to exit, then kill."""
        self.closing = True
        task, run = self.task, self.run
        if task is None:
            return
        if run is None:  # waiting out a backoff
            task.cancel()
        elif run.link is not None:
            run.link.send(m.StopCollab())
        done, _ = await asyncio.wait({task}, timeout=STOP_TIMEOUT_S)
        if not done and run is not None:
            run.proc.kill()
            self.link_lost(run)
            await asyncio.wait({task})
