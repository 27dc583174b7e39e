"""`pebrel runtime start|stop|status` (R1.5)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import click

from pebrel import entrypoints, runtimelock
from pebrel.cli import runtime_stop
from pebrel.cli.options import pretty_option
from pebrel.cli.output import EXIT_UNAVAILABLE, emit
from pebrel.client import Client, RuntimeUnavailable, locate, unavailable_envelope
from pebrel.datadir import (
    LOG_FILE,
    PORT_FILE,
    RUNTIME_LOCK,
    START_LOCK,
    PortFileError,
    PortInfo,
    check_owner,
    data_dir,
    ensure_data_dir,
    open_log,
    open_private,
    read_port_file,
    refuse_symlink,
    remove_port_file,
)
from pebrel.entrypoints import module_argv
from pebrel.envelope import ok_response
from pebrel.integration_wire import remove_left_socket

START_TIMEOUT_S = 30.0
#: `status` values: a runtime answers, runs but does not answer, or none runs (a stale
#: runtime.port names a runtime that is gone).
RUNNING, NOT_ANSWERING, STOPPED, STALE = "running", "not_answering", "stopped", "stale"


def _info(info: PortInfo, status: str, **extra: Any) -> dict[str, Any]:
    return ok_response(
        None,
        {
            "status": status,
            "pid": info.pid,
            "port": info.port,
            "runtime_id": info.runtime_id,
            "version": info.version,
            "protocol": info.protocol,
            "started_at": info.started_at,
            "data_dir": str(data_dir()),
            **extra,
        },
    )


def _answering() -> PortInfo | None:
    try:
        with Client(timeout_s=5) as client:
            if client.ping().startswith("PONG"):
                return client.info
    except (RuntimeUnavailable, OSError):
        return None
    return None


@click.group()
def runtime() -> None:
    """Start, stop and inspect the runtime of this data dir."""


@runtime.command("start")
@click.option("--foreground", is_flag=True, help="Run attached to this terminal.")
@pretty_option
def start(foreground: bool, pretty: bool) -> None:
    """Start the runtime in the background (idempotent) and return once it answers."""
    if foreground:
        from pebrel.router.app import main as router_main

        router_main()
        return
    try:
        directory = ensure_data_dir()
        refuse_symlink(directory / PORT_FILE)
        lock = open_private(directory / START_LOCK, os.O_RDWR | os.O_CREAT)
        log = open_log(directory / LOG_FILE)
    except OSError as exc:
        emit(unavailable_envelope(f"cannot start the runtime: {exc}"), pretty)
        sys.exit(EXIT_UNAVAILABLE)
    with os.fdopen(lock, "r+b"), log:
        fcntl.flock(lock, fcntl.LOCK_EX)
        running = _answering()
        if running is not None:
            emit(_info(running, "running", already_running=True), pretty)
            return
        pid = runtimelock.holder(directory, *_port_pid(directory))
        if pid is not None:
            emit(_not_answering(directory, pid), pretty)
            sys.exit(EXIT_UNAVAILABLE)
        proc = subprocess.Popen(
            module_argv(entrypoints.ROUTER),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            close_fds=True,
            start_new_session=True,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                emit(
                    unavailable_envelope(
                        f"the runtime exited during start (status {proc.returncode}); "
                        f"see {directory / LOG_FILE}"
                    ),
                    pretty,
                )
                sys.exit(EXIT_UNAVAILABLE)
            try:
                info = read_port_file(directory)
            except PortFileError:
                info = None
            if info is not None and info.pid == proc.pid and _answering() is not None:
                emit(_info(info, "running", already_running=False), pretty)
                return
            time.sleep(0.02)
        proc.kill()
        emit(unavailable_envelope("the runtime did not answer in time"), pretty)
        sys.exit(EXIT_UNAVAILABLE)


def _port_pid(directory: Path) -> list[int]:
    try:
        return [read_port_file(directory).pid]
    except PortFileError:
        return []


def _not_answering(directory: Path, pid: int, why: str = "") -> dict[str, Any]:
    """The envelope for a runtime that holds its lock but does not answer (`why`: what kept
    this client from it, when known)."""
    who = f"the runtime (pid {pid})" if pid else "a runtime"
    because = f" ({why})" if why else ""
    return unavailable_envelope(
        f"{who} of {directory} is running but not answering{because}; "
        "`pebrel runtime stop` ends it and every process it started",
        {"status": NOT_ANSWERING, "pid": pid or None},
    )


@runtime.command("status")
@pretty_option
def status(pretty: bool) -> None:
    """Report whether a runtime answers for this data dir (exit 3 if not)."""
    directory = data_dir()
    try:
        info = locate()
    except RuntimeUnavailable as exc:
        pid = runtimelock.holder(directory, *_port_pid(directory))
        if pid is not None:
            emit(_not_answering(directory, pid, str(exc) if exc.unsafe else ""), pretty)
        else:
            emit(unavailable_envelope(str(exc), {"status": STOPPED}), pretty)
        sys.exit(EXIT_UNAVAILABLE)
    if _answering() is None:
        pid = runtimelock.holder(directory, info.pid)
        if pid is not None:
            emit(_not_answering(directory, pid), pretty)
        else:
            message = f"stale runtime.port: process {info.pid} does not answer on port {info.port}"
            emit(unavailable_envelope(message, {"status": STALE}), pretty)
        sys.exit(EXIT_UNAVAILABLE)
    emit(_info(info, "running"), pretty)


@runtime.command("stop")
@pretty_option
def stop(pretty: bool) -> None:
    """Stop the runtime and every process it started; succeed if none is running."""
    directory = data_dir()
    if not directory.is_dir():
        emit(ok_response(None, {"status": STOPPED, "was_running": False}), pretty)
        return
    try:
        check_owner(os.stat(directory), str(directory))
        lock = open_private(directory / START_LOCK, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        emit(unavailable_envelope(f"cannot stop the runtime: {exc}"), pretty)
        sys.exit(EXIT_UNAVAILABLE)
    with os.fdopen(lock, "r+b"):
        fcntl.flock(lock, fcntl.LOCK_EX)  # not while a `runtime start` is under way
        emit(_stop(directory), pretty)


def _stop(directory: Path) -> dict[str, Any]:
    try:
        info: PortInfo | None = read_port_file(directory)
    except PortFileError:
        info = None
    pid = runtimelock.holder(directory, *([info.pid] if info else []))
    if pid is None:  # no runtime runs: whatever a killed one left is removed
        (directory / PORT_FILE).unlink(missing_ok=True)
        runtimelock.remove_ipc_dir(directory)
        remove_left_socket(directory)
        stale = {"stale": True} if info is not None else {}
        return ok_response(None, {"status": STOPPED, "was_running": False, **stale})
    if pid == 0:
        return unavailable_envelope(
            f"a runtime holds {directory / RUNTIME_LOCK} but could not be identified",
            {"status": NOT_ANSWERING, "pid": None},
        )
    answering = info is not None and info.pid == pid and _answering() is not None
    grace = runtime_stop.ANSWERING_GRACE_S if answering else runtime_stop.NOT_ANSWERING_GRACE_S
    forced = runtime_stop.stop_tree(pid, grace)
    if info is not None:
        remove_port_file(directory, info.runtime_id)
    runtimelock.remove_ipc_dir(directory)
    remove_left_socket(directory)  # the tree is gone: a socket there is a dead service's
    result = {"status": STOPPED, "was_running": True, "pid": pid, "forced": forced}
    return ok_response(None, {**result, "answered": answering})
