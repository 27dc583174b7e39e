"""The collab service process: `python -P -m pebrel.collab`, started by the router (#16).

The router hands it one end of a Unix socket pair (pebrel/link.py, the collab link) and its
config as JSON on stdin (`link_fd`, `data_dir`, `log_path`, `version`, `runtime_id`), never in
argv or the environment. It opens the collab database (collab/store.py), serves the integration
socket (collab/integration_server.py, where principals speak), says `CollabStarted`,
answers each `CollabRequest` with a `CollabAnswered` (each in its own task), and reaches the
runtime as the local user through `RouterTerminal`. It exits on `StopCollab`, on SIGTERM, or
when the router's end of the link closes (the router restarts it if the runtime still runs),
closing the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pebrel
from pebrel import injection, logfile, proctree
from pebrel import messages as m
from pebrel.collab.integration_server import IntegrationServer, outcome
from pebrel.collab.service import Service
from pebrel.collab.store import Store
from pebrel.collab.terminal import TerminalUnavailable
from pebrel.errors import CollabCode, CollabError, ErrorCode, PebrelError
from pebrel.link import Link, open_link

logger = logging.getLogger(__name__)

#: How long a runtime method called by the service may take before its outcome counts as
#: unknown (`TerminalUnavailable`): pane.run and agent.prompt answer well within it.
TERMINAL_CALL_TIMEOUT_S = 60.0


def wire_error(error: dict[str, Any] | None) -> PebrelError:
    """The runtime's error answer as the exception `Terminal.call` raises."""
    error = error or {}
    code: str = str(error.get("code", ErrorCode.INTERNAL_ERROR))
    known: ErrorCode | CollabCode
    if code in ErrorCode.__members__.values():
        known = ErrorCode(code)
    elif code in CollabCode.__members__.values():
        known = CollabCode(code)
    else:
        known = ErrorCode.INTERNAL_ERROR
    details = error.get("details")
    return PebrelError(
        known, str(error.get("message", "")), details if isinstance(details, dict) else {}
    )


class RouterTerminal:
    """`collab/terminal.py`'s Terminal over the collab link: TerminalCall / TerminalAnswered."""

    def __init__(self, timeout_s: float = TERMINAL_CALL_TIMEOUT_S) -> None:
        self.link: Link | None = None
        self.timeout_s = timeout_s
        self.ids = itertools.count(1)
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.latest: dict[str, Any] | None = None

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        call_id = next(self.ids)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[call_id] = fut
        try:
            if self.link is None or not self.link.send(
                m.TerminalCall(call_id=call_id, method=method, params=params)
            ):
                raise TerminalUnavailable("the router link is closed")
            try:
                return await asyncio.wait_for(fut, self.timeout_s)
            except TimeoutError as exc:
                raise TerminalUnavailable(
                    f"the runtime did not answer {method} in {self.timeout_s:g} s"
                ) from exc
        finally:
            self.pending.pop(call_id, None)

    def snapshot(self) -> dict[str, Any] | None:
        return self.latest

    def answered(self, answer: m.TerminalAnswered) -> None:
        fut = self.pending.pop(answer.call_id, None)
        if fut is None or fut.done():
            return
        if answer.ok:
            fut.set_result(answer.result or {})
        else:
            fut.set_exception(wire_error(answer.error))

    def snapshot_changed(self, changed: m.SnapshotChanged) -> None:
        self.latest = changed.snapshot

    def lost(self) -> None:
        """The link is gone: every call in flight has an unknown outcome."""
        for fut in self.pending.values():
            if not fut.done():
                fut.set_exception(TerminalUnavailable("the router link closed"))
        self.pending.clear()


class CollabApp:
    def __init__(self, link_fd: int, data_dir: Path) -> None:
        self.link_fd = link_fd
        self.data_dir = data_dir
        self.link: Link | None = None
        self.terminal = RouterTerminal()
        self.service: Service | None = None
        self.stop = asyncio.Event()
        self.tasks: set[asyncio.Task[None]] = set()
        self.from_router: dict[type[m.Message], Callable[[Any], None]] = {
            m.CollabRequest: self.request,
            m.TerminalAnswered: self.terminal.answered,
            m.SnapshotChanged: self.snapshot_changed,
            m.StopCollab: lambda _: self.stop.set(),
        }

    def on_message(self, message: m.Message) -> None:
        handle = self.from_router.get(type(message))
        if handle is not None:
            handle(message)

    def lost(self) -> None:
        self.terminal.lost()
        self.stop.set()

    def snapshot_changed(self, changed: m.SnapshotChanged) -> None:
        self.terminal.snapshot_changed(changed)
        if self.service is not None:
            try:
                self.service.on_snapshot(changed.snapshot)
            except Exception:
                logger.exception("the collab service failed on a snapshot")

    def request(self, request: m.CollabRequest) -> None:
        task = asyncio.get_running_loop().create_task(self.serve(request))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def serve(self, request: m.CollabRequest) -> None:
        result, error = await outcome(request.method, self.handled(request))
        if self.link is not None:
            self.link.send(
                m.CollabAnswered(
                    request_id=request.request_id,
                    ok=error is None,
                    result=result,
                    error=None if error is None else error.to_wire(),
                )
            )

    async def handled(self, request: m.CollabRequest) -> dict[str, Any]:
        if self.service is None:
            raise CollabError(
                CollabCode.INTEGRATION_RUNTIME_UNAVAILABLE, "the collab service is starting"
            )
        return await self.service.handle(request.method, request.params, request.caller)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, self.stop.set)
        store = Store(self.data_dir)
        try:
            service = Service(store, self.terminal)
            # The router's end closing (it stopped or died) stops this process too.
            self.link = await open_link(
                socket.socket(fileno=self.link_fd), self.on_message, self.lost
            )
            self.terminal.link = self.link
            self.link.send(m.WatchSnapshots(on=True))
            await service.start()
            self.service = service
            integration = IntegrationServer(self.data_dir, service, pebrel.__version__)
            try:
                await integration.start()  # I1.6: before the router is told it started
                self.link.send(m.CollabStarted())
                logger.info("collab service started", extra={"db": str(store.path)})
                await self.stop.wait()
            finally:
                await integration.stop()
                for task in list(self.tasks):
                    task.cancel()
                await asyncio.gather(*self.tasks, return_exceptions=True)
                await service.close()
        finally:
            store.close()
            if self.link is not None:
                self.link.close()
            logger.info("collab service stopped")


def main() -> None:
    config = json.loads(sys.stdin.buffer.read())  # from the router
    logfile.configure(
        config["log_path"],
        f"%(asctime)s collab[{os.getpid()}] %(levelname)s %(name)s: %(message)s",
    )
    injection.install(injection.COLLAB)
    proctree.set_parent_death_signal(signal.SIGTERM)
    app = CollabApp(int(config["link_fd"]), Path(config["data_dir"]))
    try:
        asyncio.run(proctree.then_unhook_signal_wakeup(app.run()))
    except Exception:
        logger.exception("the collab service failed")
        with contextlib.suppress(Exception):
            logging.shutdown()
        sys.exit(1)


if __name__ == "__main__":
    main()
