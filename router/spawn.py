"""Starting a pane: fork its worker through the fork server, and answer once its shell runs.

The new worker writes its shell's pid to the fork server's reply pipe (before it has
connected), so the pane can be answered at once; requests to a worker still connecting wait
for it (``links.request``). If the worker cannot say so, the router waits for its own
PaneStarted or PaneStartFailed.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pebrel import fdlimit, runtimelock
from pebrel import messages as m
from pebrel.envcontract import pane_env, remote_pane_env
from pebrel.errors import ErrorCode, PebrelError
from pebrel.router import links
from pebrel.router.adapter_limits import RateLimitedLog
from pebrel.router.links import WorkerLink, WorkerProcess
from pebrel.router.state import Pane, Window
from pebrel.shellids import ShellChoice, ssh_config

if TYPE_CHECKING:
    from pebrel.router.runtime import Runtime

logger = logging.getLogger(__name__)
#: Panes refused for want of descriptors: logged at most once per interval.
_refusals = RateLimitedLog(logger)

SPAWN_TIMEOUT_S = 15.0


def _retrieved(fut: asyncio.Future[Any]) -> None:
    """Mark a start that nobody awaits as seen (a worker that died before connecting)."""
    if not fut.cancelled():
        fut.exception()


async def spawn_pane(
    rt: Runtime, window: Window, shell: ShellChoice, cwd: str, cols: int, rows: int
) -> Pane:
    """Start a worker with its shell; return the pane once its shell process exists."""
    short = fdlimit.pane_headroom()
    if short is not None:  # before anything changes: the refusal leaves no trace
        count, limit = short
        _refusals.warning("pane refused", f"pane refused: {count} of {limit} file descriptors open")
        raise PebrelError(
            ErrorCode.ACTION_FAILED,
            f"too many open files: the runtime has {count} of its {limit} file descriptors "
            "open; close panes, or raise the open-file limit (ulimit -n) and restart it",
            {"reason": "open_file_limit", "open_files": count, "limit": limit},
        )
    pane_id = window.allocate_pane_id()
    pane = Pane(
        window_id=window.window_id,
        pane_id=pane_id,
        shell=shell.argv[0] if shell.ssh is None else shell.shell_id,
        shell_id=shell.shell_id,
        cwd=cwd,
        cols=cols,
        rows=rows,
    )
    ssh: dict[str, Any] | None = None
    if shell.ssh is None:
        env = pane_env(rt.base_env, window_id=window.window_id, pane_id=pane_id, explicit=shell.env)
    else:
        env = remote_pane_env(window_id=window.window_id, pane_id=pane_id, explicit=shell.env)
        # Its connection slots' lock files: in the ipc dir, gone with the runtime.
        slots = runtimelock.ipc_dir_of(rt.endpoint) or tempfile.gettempdir()
        ssh = ssh_config(shell.ssh, rt.base_env, Path(slots))
        pane.ssh = {"host": ssh["host"], "port": ssh["port"], "user": ssh["user"]}
        pane.ssh["phase"] = "resolving"
    config = {
        "endpoint": rt.endpoint,
        "window_id": window.window_id,
        "pane_id": pane_id,
        "argv": shell.argv,
        "integrate": shell.integrate,
        "env": env,
        "cwd": cwd,
        "cols": cols,
        "rows": rows,
        "scrollback_lines": rt.settings.scrollback_lines,
        "screen_rules": rt.settings.screen_rules,
        "log_path": str(rt.data_dir / "runtime.log"),
        "ssh": ssh,
    }
    loop = asyncio.get_running_loop()
    assert rt.forkserver is not None
    # Registered before the fork: the worker may connect, and report its first prompt,
    # before the fork server's reply is handled here.
    link = WorkerLink(
        window.window_id, pane_id, WorkerProcess(0), loop.create_future(), size=(cols, rows)
    )
    rt.links[pane.key] = link
    rt.starting[pane.key] = pane
    try:
        reply = await rt.forkserver.spawn(config)
    except BaseException:
        rt.links.pop(pane.key, None)
        rt.starting.pop(pane.key, None)
        raise
    link.proc.pid = reply.pid
    if reply.exited:
        link.proc.returncode = reply.returncode
        rt.link_gone(link)
    if link.dead:
        rt.starting.pop(pane.key, None)
        raise PebrelError(ErrorCode.ACTION_FAILED, "the pane's worker exited during start")
    if reply.shell_pid is not None:
        # The shell runs: answer now. The worker connects a moment later; requests to it
        # wait for that (links.request), and if it dies first the pane is marked exited.
        rt.starting.pop(pane.key, None)
        pane.pid = reply.shell_pid or None  # an SSH pane has no local shell (0)
        pane.worker_pid = reply.pid
        pane.integrated = pane.tracker.integrated = reply.integrated
        link.started.add_done_callback(_retrieved)
    else:
        await _await_started(rt, pane, link, shell)
    pane.started = True
    rt.state.panes[pane.key] = pane
    logger.info("pane started", extra={"window_id": pane.window_id, "pane_id": pane_id})
    return pane


async def _await_started(rt: Runtime, pane: Pane, link: WorkerLink, shell: ShellChoice) -> None:
    """Wait for the worker's own message over ZeroMQ (it reported no running shell)."""
    try:
        started = await asyncio.wait_for(asyncio.shield(link.started), SPAWN_TIMEOUT_S)
    except (TimeoutError, PebrelError) as exc:
        links.kill(link)
        rt.links.pop(pane.key, None)
        if isinstance(exc, PebrelError):
            raise
        raise PebrelError(ErrorCode.ACTION_FAILED, "the pane did not start in time") from exc
    finally:
        rt.starting.pop(pane.key, None)
    if isinstance(started, m.PaneStartFailed):
        rt.links.pop(pane.key, None)
        raise PebrelError(
            ErrorCode.ACTION_FAILED,
            f"could not start the shell: {started.reason}",
            {"shell": shell.shell_id},
        )
