"""`pebrel runtime start|stop|status` (R1.5)."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from typing import Any

import click

from pebrel import entrypoints
from pebrel.cli.options import pretty_option
from pebrel.cli.output import EXIT_UNAVAILABLE, emit
from pebrel.client import Client, RuntimeUnavailable, locate, unavailable_envelope
from pebrel.datadir import (
    LOG_FILE,
    PORT_FILE,
    START_LOCK,
    PortFileError,
    PortInfo,
    data_dir,
    ensure_data_dir,
    pid_alive,
    read_port_file,
)
from pebrel.entrypoints import module_argv
from pebrel.envelope import ok_response

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0


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
    directory = ensure_data_dir()
    if foreground:
        from pebrel.router.app import main as router_main

        router_main()
        return
    with open(directory / START_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        running = _answering()
        if running is not None:
            emit(_info(running, "running", already_running=True), pretty)
            return
        with open(directory / LOG_FILE, "ab") as log:
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


@runtime.command("status")
@pretty_option
def status(pretty: bool) -> None:
    """Report whether a runtime answers for this data dir (exit 3 if not)."""
    try:
        info = locate()
    except RuntimeUnavailable as exc:
        emit(unavailable_envelope(str(exc)), pretty)
        sys.exit(EXIT_UNAVAILABLE)
    if _answering() is None:
        emit(
            unavailable_envelope(f"process {info.pid} does not answer on port {info.port}"), pretty
        )
        sys.exit(EXIT_UNAVAILABLE)
    emit(_info(info, "running"), pretty)


@runtime.command("stop")
@pretty_option
def stop(pretty: bool) -> None:
    """Stop the runtime and every process it started; succeed if none is running."""
    directory = data_dir()
    try:
        info = read_port_file(directory)
    except PortFileError:
        emit(ok_response(None, {"status": "stopped", "was_running": False}), pretty)
        return
    if _answering() is None:
        # Not ours to signal: the pid may belong to another process by now.
        (directory / PORT_FILE).unlink(missing_ok=True)
        emit(ok_response(None, {"status": "stopped", "was_running": False, "stale": True}), pretty)
        return
    os.kill(info.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while pid_alive(info.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    forced = False
    if pid_alive(info.pid):
        forced = True
        os.kill(info.pid, signal.SIGKILL)
    emit(
        ok_response(
            None, {"status": "stopped", "was_running": True, "pid": info.pid, "forced": forced}
        ),
        pretty,
    )
