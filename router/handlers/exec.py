"""pane.exec and pane.procs (R6.3, R6.4).

pane.exec runs argv without a shell as an independent non-TTY child of the pane's worker (see
workers/exec.py), in the pane's current cwd and with its launch environment. The router only
validates, parks the request until the worker's ExecFinished arrives, and shapes the result.

pane.procs reads the process tree under the pane's shell with psutil in an executor thread:
the router's loop never walks /proc itself.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import time
from collections.abc import Mapping
from typing import Any

import psutil

from pebrel import messages as m
from pebrel.errors import ErrorCode, PebrelError
from pebrel.method_params import PaneExecParams, PaneProcsParams
from pebrel.model import (
    EXEC_DEFAULT_MAX_OUTPUT_BYTES,
    EXEC_DEFAULT_TIMEOUT_MS,
    EXEC_MAX_OUTPUT_BYTES,
)
from pebrel.router import links
from pebrel.router.handlers import Handler, Result
from pebrel.router.handlers.input_common import remote_details
from pebrel.router.runtime import Runtime
from pebrel.router.state import Pane

#: The worker answers within a second of the exec's deadline; this is the margin beyond it.
EXEC_REPLY_MARGIN_S = 5.0
#: Captures larger than this are shaped (UTF-8 check, base64) in a thread.
OFFLOAD_BYTES = 256 * 1024
#: pane.procs measures cpu_percent over this window (in its thread, not on the loop).
CPU_SAMPLE_S = 0.1


def _ids(pane: Pane) -> dict[str, int]:
    return {"window_id": pane.window_id, "pane_id": pane.pane_id}


# ---- pane.exec ---------------------------------------------------------------------------------


def utf8_tail(data: bytes, truncated: bool) -> bytes:
    """Cut a kept tail on a UTF-8 boundary: drop at most 3 leading continuation bytes.

    Only a truncated tail can start inside a character; a whole stream is kept as it is.
    """
    if not truncated:
        return data
    start = 0
    while start < min(3, len(data)) and 0x80 <= data[start] <= 0xBF:
        start += 1
    return data[start:]


def capture(data: bytes, total: int) -> tuple[str, dict[str, Any]]:
    """The text of one stream and its `capture` record (utf-8, or base64 when not UTF-8)."""
    truncated = total > len(data)
    kept = utf8_tail(data, truncated)
    try:
        text, encoding = kept.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        text, encoding = base64.b64encode(kept).decode("ascii"), "base64"
    return text, {
        "encoding": encoding,
        "total_bytes": total,
        "retained_bytes": len(kept),
        "truncated": truncated,
    }


def _spawn_failure(pane: Pane, argv: list[str], reply: m.ExecFinished) -> PebrelError:
    """The program could not be started: the worker says why, and the errno by name."""
    return PebrelError(
        ErrorCode.ACTION_FAILED,
        f"could not start {argv[0]!r}: {reply.error}",
        {**_ids(pane), "argv0": argv[0], "errno": reply.errno_name, "cwd": reply.cwd},
    )


def _check_exec_params(params: PaneExecParams) -> tuple[list[str], int, int]:
    argv = params["argv"]
    if not argv or not argv[0]:
        raise PebrelError(ErrorCode.INVALID_PARAMS, "argv must name a program", {"field": "argv"})
    if any("\0" in arg for arg in argv):
        raise PebrelError(
            ErrorCode.INVALID_PARAMS, "argv must not contain NUL characters", {"field": "argv"}
        )
    limit = params.get("max_output_bytes", EXEC_DEFAULT_MAX_OUTPUT_BYTES)
    if not 1 <= limit <= EXEC_MAX_OUTPUT_BYTES:
        raise PebrelError(
            ErrorCode.INVALID_PARAMS,
            f"max_output_bytes must be between 1 and {EXEC_MAX_OUTPUT_BYTES} (16 MiB)",
            {"field": "max_output_bytes", "maximum": EXEC_MAX_OUTPUT_BYTES},
        )
    timeout_ms = params.get("timeout_ms", EXEC_DEFAULT_TIMEOUT_MS)
    return argv, limit, timeout_ms


async def exec_(rt: Runtime, params: PaneExecParams) -> Result:
    """Run argv in the pane's cwd, capture the tail of both streams, return when it exits.

    A bad argv or max_output_bytes is invalid_params, an exited pane (or a gone worker)
    invalid_state, a program that could not be started action_failed (details carry errno
    and argv0). The method's codes are the schema's list.
    """
    argv, limit, timeout_ms = _check_exec_params(params)
    pane = rt.state.pane(params.get("window_id"), params["pane_id"])
    if pane.remote:
        raise PebrelError(
            ErrorCode.REMOTE_EXEC_UNSUPPORTED,
            f"pane {pane.pane_id} is an SSH pane: pane.exec runs programs on this machine only",
            remote_details(pane),
        )
    link = rt.links.get(pane.key)
    if pane.exited or link is None:
        raise PebrelError(
            ErrorCode.INVALID_STATE,
            f"pane {pane.pane_id} has exited: {pane.exit_reason}",
            {**_ids(pane), "exited": True, "exit_reason": pane.exit_reason},
        )
    reply = await links.request(
        link,
        rt.send,
        lambda rid: m.RunExec(
            request_id=rid, argv=argv, cwd=None, timeout_ms=timeout_ms, max_output_bytes=limit
        ),
        timeout_ms / 1000 + EXEC_REPLY_MARGIN_S,
    )
    assert isinstance(reply, m.ExecFinished)
    if reply.error is not None:
        raise _spawn_failure(pane, argv, reply)
    if len(reply.stdout) + len(reply.stderr) > OFFLOAD_BYTES:
        # Decoding and base64 of up to 2 x 16 MiB: not on the router's loop.
        loop = asyncio.get_running_loop()
        (stdout, out_capture), (stderr, err_capture) = await asyncio.gather(
            loop.run_in_executor(None, capture, reply.stdout, reply.stdout_total),
            loop.run_in_executor(None, capture, reply.stderr, reply.stderr_total),
        )
    else:
        stdout, out_capture = capture(reply.stdout, reply.stdout_total)
        stderr, err_capture = capture(reply.stderr, reply.stderr_total)
    return {
        **_ids(pane),
        "exit_code": reply.exit_code,
        "signal": reply.signal,
        "stdout": stdout,
        "stderr": stderr,
        "timed_out": reply.timed_out,
        "duration_ms": reply.duration_ms,
        "cwd": reply.cwd,
        "capture": {"stdout": out_capture, "stderr": err_capture},
    }


# ---- pane.procs --------------------------------------------------------------------------------


def terminal_foreground_group(shell_pid: int) -> int:
    """`tpgid` of the shell's terminal (field 8 of /proc/PID/stat); -1 when unknown."""
    try:
        with open(f"/proc/{shell_pid}/stat", "rb") as handle:
            raw = handle.read()
        return int(raw[raw.rfind(b")") + 2 :].split()[5])
    except (OSError, IndexError, ValueError):
        return -1


def _describe(proc: psutil.Process, tpgid: int) -> dict[str, Any] | None:
    try:
        with proc.oneshot():
            info: dict[str, Any] = {
                "pid": proc.pid,
                "ppid": proc.ppid(),
                "name": proc.name(),
                "argv": proc.cmdline(),
                "cwd": None,
                "status": proc.status(),
                "cpu_percent": proc.cpu_percent(None),
                "memory_rss": proc.memory_info().rss,
                "create_time": proc.create_time(),
                "foreground": tpgid > 0 and _pgid(proc.pid) == tpgid,
            }
    except psutil.Error:
        return None
    with contextlib.suppress(psutil.Error):
        info["cwd"] = proc.cwd()
    return info


def _pgid(pid: int) -> int:
    try:
        return os.getpgid(pid)
    except OSError:
        return -1


def process_tree(shell_pid: int, worker_pid: int | None) -> list[dict[str, Any]]:
    """The shell, then its descendants depth-first (children by start time); blocking."""
    try:
        root = psutil.Process(shell_pid)
        if worker_pid is not None and root.ppid() != worker_pid:
            return []  # the pid was reused by an unrelated process
        below = root.children(recursive=True)
    except psutil.Error:
        return []
    procs = [root, *below]
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.cpu_percent(None)  # the first call only starts the sample window
    time.sleep(CPU_SAMPLE_S)
    tpgid = terminal_foreground_group(shell_pid)
    described = {p.pid: d for p in procs if (d := _describe(p, tpgid)) is not None}
    children: dict[int, list[dict[str, Any]]] = {}
    for info in described.values():
        children.setdefault(info["ppid"], []).append(info)
    ordered: list[dict[str, Any]] = []
    stack = [described[shell_pid]] if shell_pid in described else []
    while stack:
        info = stack.pop()
        ordered.append(info)
        kids = sorted(children.get(info["pid"], []), key=lambda d: (d["create_time"], d["pid"]))
        stack.extend(reversed(kids))
    return ordered


async def procs(rt: Runtime, params: PaneProcsParams) -> Result:
    """The real process tree under the pane's shell (R6.4): shell first, then descendants.

    An exited pane has `root_pid` null and no processes.
    """
    pane = rt.state.pane(params.get("window_id"), params["pane_id"])
    if pane.remote:
        raise PebrelError(
            ErrorCode.REMOTE_PROCESS_UNAVAILABLE,
            f"pane {pane.pane_id} is an SSH pane: its remote process tree is not visible here",
            remote_details(pane),
        )
    if pane.exited or pane.pid is None:
        return {**_ids(pane), "root_pid": None, "processes": []}
    loop = asyncio.get_running_loop()
    tree = await loop.run_in_executor(None, process_tree, pane.pid, pane.worker_pid)
    return {**_ids(pane), "root_pid": pane.pid if tree else None, "processes": tree}


METHODS: Mapping[str, Handler] = {"pane.exec": exec_, "pane.procs": procs}
