"""Helpers for end-to-end tests of the collab service (#16): find it, kill it, wait for it,
call the `pebrel collab` CLI and read what the fake AI CLIs received."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import psutil

from pebrel import entrypoints
from tests.conftest import Runtime, wait_for


def collab_pids(rt: Runtime) -> list[int]:
    """The router's children started as `python -P -m pebrel.collab`."""
    wanted = entrypoints.module_argv(entrypoints.COLLAB)[1:]
    found = []
    for child in psutil.Process(rt.pid).children():
        try:
            if child.cmdline()[1:] == wanted and child.status() != psutil.STATUS_ZOMBIE:
                found.append(child.pid)
        except psutil.Error:
            continue
    return found


def serving(rt: Runtime) -> dict[str, Any] | None:
    """collab.capabilities' result once the service answers it (None while it does not)."""
    envelope = rt.call("collab.capabilities", timeout_s=20)
    return envelope["result"] if envelope["ok"] else None


def kill_collab(rt: Runtime) -> int:
    (pid,) = wait_for(lambda: collab_pids(rt) or None, 15, "a collab service process")
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: pid not in collab_pids(rt), 10, "the killed collab service to be reaped")
    return int(pid)


def collab(rt: Runtime, *args: str) -> dict[str, Any]:
    """`pebrel collab ARGS`, which must succeed; its result."""
    done = rt.cli("collab", *args, check=True)
    envelope = done.json
    assert envelope["ok"], envelope
    result: dict[str, Any] = envelope["result"]
    return result


def collab_error(rt: Runtime, *args: str) -> dict[str, Any]:
    """`pebrel collab ARGS`, which must answer an error envelope (exit 1); its error."""
    done = rt.cli("collab", *args)
    assert done.code == 1, done
    error: dict[str, Any] = done.json["error"]
    return error


def received(log: Path) -> list[dict[str, Any]]:
    """What a fake AI CLI logged as submitted prompts (FAKE_AGENT_RECEIVED_LOG)."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def stage(rt: Runtime, message_id: str) -> str:
    return str(collab(rt, "message", "get", message_id)["message"]["receipt"]["stage"])


def delivered(rt: Runtime, message_id: str, timeout_s: float = 30) -> None:
    wait_for(lambda: stage(rt, message_id) == "delivered", timeout_s, f"{message_id} delivered")
