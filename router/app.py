"""The router process: state owner, dispatch; a ZeroMQ ROUTER for the pane workers, the
frontend link (pebrel/link.py) for the frontend adapter."""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import zmq

from pebrel import (
    PROTOCOL,
    __version__,
    entrypoints,
    fdlimit,
    heaptrim,
    injection,
    logfile,
    proctree,
    runtimelock,
)
from pebrel import messages as m
from pebrel.datadir import (
    LOG_FILE,
    PORT_FILE,
    PortInfo,
    ensure_data_dir,
    refuse_symlink,
    remove_port_file,
    write_port_file,
)
from pebrel.envelope import EncodedResult
from pebrel.errors import ErrorCode, PebrelError, internal_error
from pebrel.integration_wire import remove_left_socket
from pebrel.link import Link, open_link, start_linked_process
from pebrel.router import collab_link, eager, facts
from pebrel.router.answer_sync import AnswerSync
from pebrel.router.client_protocol import USER_ONLY_METHODS
from pebrel.router.forkserver import ForkServer
from pebrel.router.handlers import Method, delegate, events, user_input, window
from pebrel.router.methods import LEGACY, METHODS
from pebrel.router.runtime import Runtime
from pebrel.router.screen_feed import ScreenFeed
from pebrel.schema import validate_params
from pebrel.settings import SettingsError, load_settings
from pebrel.zmqio import NOBLOCK, Inbox, incoming

logger = logging.getLogger(__name__)

#: The frontend's old ZeroMQ identity: a ZeroMQ peer that claims it is dropped (the adapter
#: speaks over the frontend link only).
FRONTEND_ID = b"frontend"
STARTUP_TIMEOUT_S = 20.0
EXIT_ALREADY_RUNNING = 3
EXIT_UNSAFE_FILE = 4


class RouterApp:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.ctx: zmq.SyncContext = zmq.Context()
        self.sock: zmq.SyncSocket = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.SNDHWM, 0)
        self.sock.setsockopt(zmq.RCVHWM, 0)
        self.ipc_dir = tempfile.mkdtemp(prefix=runtimelock.IPC_PREFIX)
        self.endpoint = f"ipc://{self.ipc_dir}/router"
        self.sock.bind(self.endpoint)
        self.token = secrets.token_hex(32)
        self.frontend: subprocess.Popen[bytes] | None = None
        #: The frontend link (pebrel/link.py): the adapter's messages do not cross ZeroMQ.
        self.link: Link | None = None
        self.frontend_port: asyncio.Future[int] | None = None
        self.stopping: asyncio.Event | None = None
        self.tasks: set[asyncio.Task[None]] = set()
        self.inbox = Inbox(self.sock, self.receive)
        self.subscribers: set[int] = set()
        self.rt: Runtime = Runtime(
            data_dir,
            load_settings(data_dir),
            self.endpoint,
            self.send,
            dict(os.environ),
            os.getcwd(),
        )
        self.rt.on_revision = self.revised
        self.answers = AnswerSync(self.rt, self.to_frontend)  # router/answer_sync.py
        self.screens = ScreenFeed(self.rt, self.to_frontend)  # router/screen_feed.py
        self.collab = collab_link.CollabLink(self.rt, data_dir, self.answer)  # #16
        delegate.deliver_answers(self.rt)  # agent.delegate: answers go back to their origin
        self.from_frontend: dict[type[m.Message], Callable[[Any], None]] = {
            m.HandleRequest: self.start_request,
            m.ConnectionClosed: self.connection_closed,
            m.AnswerUsed: lambda used: self.answers.used(used.method, used.params),
            m.FrontendStarted: self.frontend_started,
        }
        # Free heap pages go back to the system after busy spells (requests, worker facts).
        self.heap = heaptrim.HeapTrim(heaptrim.malloc_trim())

    # -- sockets ---------------------------------------------------------------------------------
    def to_frontend(self, message: m.Message) -> None:
        """Send over the frontend link (pebrel/link.py)."""
        if self.link is None or not self.link.send(message):
            logger.warning("frontend unreachable", extra={"type": message.type})

    def send(self, identity: bytes, message: m.Message) -> bool:
        """Send to the pane worker with this ZeroMQ identity."""
        try:
            self.sock.send_multipart([identity, m.encode(message)], flags=NOBLOCK)
        except zmq.ZMQError:
            logger.warning("actor unreachable", extra={"type": message.type})
            return False
        self.inbox.sent()
        return True

    def receive(self) -> None:
        """Handle every message waiting on the socket (the FD is edge-triggered: drain it).

        EVENTS is asked before each recv: it is as reliable as a recv that fails with EAGAIN,
        and much cheaper than the exception.
        """
        self.heap.busy = True
        with self.inbox.draining():  # sends from handlers need not schedule another drain
            for (identity, _), message in incoming(self.sock, frames=2):
                if identity == FRONTEND_ID:
                    # The adapter speaks over the frontend link only: a ZeroMQ peer that
                    # claims its identity is not it.
                    logger.warning("message from a ZeroMQ peer named like the frontend dropped")
                    continue
                logger.debug("worker fact %s", message)
                try:
                    facts.on_worker_message(self.rt, message, identity)
                except Exception:
                    logger.exception(
                        "router failed to handle a message", extra={"type": message.type}
                    )

    def start(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run a request's first step now (router/eager.py); keep the Task of one that waits."""
        task = eager.start(coro)
        if task is not None:
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    def start_request(self, request: m.HandleRequest) -> None:
        """Dispatch one request; if its handler cannot even be started, still answer it."""
        if request.method.startswith(collab_link.PREFIX) and request.principal != "legacy":
            coro = self.collab.handle(request)  # forwarded to the collab service (#16)
        else:
            coro = self.dispatch(request)
        try:
            self.start(coro)
        except Exception:
            if inspect.iscoroutine(coro):
                coro.close()
            failure = internal_error()
            logger.exception(
                "request could not be started", extra={**failure.details, "method": request.method}
            )
            self.answer(request, False, error=failure.to_wire())

    def on_frontend_message(self, message: m.Message) -> None:
        """A message from the frontend adapter, by its type (``self.from_frontend``)."""
        self.heap.busy = True
        handle = self.from_frontend.get(type(message))
        if handle is not None:
            handle(message)

    def connection_closed(self, closed: m.ConnectionClosed) -> None:
        self.subscribers.discard(closed.connection_id)
        self.screens.closed(closed.connection_id)
        self.collab.connection_closed(closed.connection_id)

    def frontend_started(self, message: m.FrontendStarted) -> None:
        if self.frontend_port is not None and not self.frontend_port.done():
            self.frontend_port.set_result(message.port)

    async def dispatch(self, request: m.HandleRequest) -> None:
        logger.debug("request %s %s", request.method, request.params)
        ok, error = True, None
        result: dict[str, Any] | EncodedResult | None = None
        try:
            handler: Method | None = (
                LEGACY.get(request.method) if request.principal == "legacy" else None
            )
            if handler is None:
                validate_params(request.method, request.params)
                handler = METHODS[request.method]
            if self.rt.closing:
                raise PebrelError(ErrorCode.RUNTIME_UNAVAILABLE, "the runtime is stopping")
            if request.method in USER_ONLY_METHODS:  # the local user's alone (#21)
                user_input.refuse_caller(await self.collab.placed_caller(request))
            result = await handler(self.rt, request.params)
        except PebrelError as exc:
            ok, error = False, exc.to_wire()
        except Exception:
            failure = internal_error()
            logger.exception("internal error", extra={**failure.details, "method": request.method})
            ok, error = False, failure.to_wire()
        logger.debug("answer %s ok=%s", request.method, ok)
        plain: dict[str, Any] | None = None
        encoded: bytes | None = None
        reusable = False
        if isinstance(result, EncodedResult):  # encoded once, kept by the router
            encoded = result.json
            try:
                reusable = ok and self.answers.answered(request, result)
            except Exception:  # the answer still goes out, only not to be kept
                logger.exception(
                    "could not note a reusable answer", extra={"method": request.method}
                )
        else:
            plain = result
        self.answer(request, ok, plain, error, encoded, reusable)
        if ok and request.method == "events.subscribe":
            self.subscribers.add(request.connection_id)
            if request.params.get("screens"):
                self.screens.subscribe(request.connection_id)
            if events.needs_current_snapshot(self.rt, request.params):
                self.publish(request.connection_id)

    def answer(
        self,
        request: m.HandleRequest,
        ok: bool,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        result_json: bytes | None = None,
        reusable: bool = False,
    ) -> None:
        self.to_frontend(
            m.RequestAnswered(
                connection_id=request.connection_id,
                request_id=request.request_id,
                ok=ok,
                result=result,
                error=error,
                result_json=result_json,
                cache_slot=request.cache_slot,
                reusable=reusable,
            ),
        )

    def revised(self) -> None:
        """A new revision: to the subscribers, and to the collab service if it watches."""
        self.publish()
        self.collab.revised()

    def publish(self, connection_id: int = 0) -> None:
        """Stream the current snapshot to one subscriber, or (0) to all of them."""
        if not self.subscribers:
            return
        state = self.rt.state
        self.to_frontend(
            m.SnapshotChanged(
                connection_id=connection_id,
                runtime_id=state.runtime_id,
                revision=state.revision,
                snapshot=state.snapshot(),
            ),
        )

    # -- lifecycle ---------------------------------------------------------------------------------
    async def start_frontend(self) -> subprocess.Popen[bytes]:
        """Start the adapter with its end of the frontend link (its config, the token among
        it, on its stdin: pebrel/link.py)."""
        config = {
            "token": self.token,
            "log_path": str(self.data_dir / LOG_FILE),
            "version": __version__,
        }
        proc, ours = start_linked_process(entrypoints.ADAPTER, config, self.data_dir / LOG_FILE)
        self.link = await open_link(ours, self.on_frontend_message, self.frontend_lost)
        return proc

    def frontend_lost(self) -> None:
        """The adapter's end of the link closed: no client can reach this runtime any more."""
        if self.frontend_port is not None and not self.frontend_port.done():
            self.frontend_port.set_exception(RuntimeError("the frontend adapter exited at start"))
            return
        if self.rt.closing or self.stopping is None or self.stopping.is_set():
            return
        logger.error("the frontend adapter is gone: stopping the runtime")
        self.stopping.set()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self.stopping = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, self.stopping.set)
        loop.add_reader(self.sock.fileno(), self.receive)
        loop.call_soon(self.receive)
        trim = loop.create_task(self.heap.run())
        self.frontend_port = loop.create_future()
        forkserver = ForkServer(
            str(self.data_dir / LOG_FILE),
            self.endpoint,
            self.rt.worker_exited,
            preload_ssh=any(p.ssh is not None for p in self.rt.settings.profiles.values()),
        )
        forkserver.start()
        self.rt.forkserver = forkserver
        assert forkserver.pid is not None
        self.rt.adopt(forkserver.pid)
        self.frontend = await self.start_frontend()  # registered as our own child
        try:
            port = await asyncio.wait_for(self.frontend_port, STARTUP_TIMEOUT_S)
            await window.open_window(self.rt, None, None)
            self.collab.start(port)  # the runtime runs without it, and only waits a little:
            await self.collab.wait_ready()  # answering collab.* as soon as it is announced
        except Exception:
            logger.exception("runtime failed to start")
            await self.shutdown()
            raise
        info = PortInfo(
            port=port,
            token=self.token,
            pid=os.getpid(),
            version=__version__,
            protocol=PROTOCOL,
            started_at=time.time(),
            runtime_id=self.rt.state.runtime_id,
        )
        write_port_file(self.data_dir, info)
        logger.info("runtime started", extra={"port": port, "runtime_id": info.runtime_id})
        await self.stopping.wait()
        logger.info("runtime stopping")
        trim.cancel()
        await self.shutdown()

    async def shutdown(self) -> None:
        rt = self.rt
        rt.closing = True
        self.answers.stale()  # from here on every request is refused
        remove_port_file(self.data_dir, rt.state.runtime_id)
        await asyncio.gather(rt.close_panes(list(rt.state.panes.values())), self.collab.stop())
        remove_left_socket(self.data_dir)  # a service killed meanwhile could not remove it
        for link in list(rt.links.values()):
            link.proc.kill()
        if self.frontend is not None:
            self.to_frontend(m.StopFrontend())
            try:
                await asyncio.get_running_loop().run_in_executor(None, self.frontend.wait, 3)
            except subprocess.TimeoutExpired:
                self.frontend.kill()
                self.frontend.wait()
        if self.link is not None:
            self.link.close()
        if rt.forkserver is not None:
            # Closing its stdin ends it; it waits for nothing, its workers are already gone.
            rt.forkserver.close()
            await asyncio.get_running_loop().run_in_executor(None, rt.forkserver.wait)
            if rt.forkserver.pid is not None:
                rt.disown(rt.forkserver.pid)
        rt.disown(self.frontend.pid if self.frontend else 0)
        rt.links.clear()
        await asyncio.get_running_loop().run_in_executor(None, rt.reap_orphans)
        asyncio.get_running_loop().remove_reader(self.sock.fileno())
        self.sock.close(linger=0)
        self.ctx.term()
        shutil.rmtree(self.ipc_dir, ignore_errors=True)
        logger.info("runtime stopped")


def main() -> None:
    try:
        data_dir = ensure_data_dir()
        refuse_symlink(data_dir / PORT_FILE)  # replaced at the end of the start, never followed
        logfile.configure(
            str(data_dir / LOG_FILE),
            f"%(asctime)s router[{os.getpid()}] %(levelname)s %(name)s: %(message)s",
        )
        lock = runtimelock.hold(data_dir)  # held for the process's life
    except OSError as exc:
        print(f"pebrel: {exc}", file=sys.stderr)
        sys.exit(EXIT_UNSAFE_FILE)
    if lock is None:
        print(f"pebrel: a runtime is already running for {data_dir}", file=sys.stderr)
        sys.exit(EXIT_ALREADY_RUNNING)
    if runtimelock.remove_ipc_dir(data_dir):  # left by a runtime that was killed
        logger.info("removed the ipc dir of a runtime that did not stop cleanly")
    try:
        load_settings(data_dir)
    except SettingsError as exc:
        print(f"pebrel: {exc}", file=sys.stderr)
        sys.exit(2)
    fdlimit.raise_soft_limit()  # the adapter inherits it; the fork server puts it back
    injection.install(injection.ROUTER)
    proctree.set_child_subreaper()
    proctree.request_short_slice()  # answer promptly while pane workers keep the cores busy
    app = RouterApp(data_dir)
    runtimelock.write_record(lock, os.getpid(), app.ipc_dir)
    asyncio.run(proctree.then_unhook_signal_wakeup(app.run()))
