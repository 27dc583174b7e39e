"""agent.fork: a named agent in a new branch + git worktree, in a new tab (R9.5).

The transaction, in order: resolve the source cwd (a pane's snapshot cwd, or an absolute
`source_cwd`; remote panes are refused); check the agent name and kind; then, off the loop and
serialised per repository (router.gitops), check git, the dirty state, the base, the branch
and the path and create branch + worktree; then open a tab whose cwd is the worktree, register
the agent and type its start command (agent.start's machinery), wait until it is ready, and
verify its process really runs inside the worktree. Fork never sends a task.

Failures after the checkout exists: the tab-and-agent dispatch has a deadline; when it is not
confirmed in time the result is unknown, so the answer is `runtime_timeout` with
`details.cleanup_deferred: true` and the provenance, and the checkout stays (a late tab must not
get a deleted cwd). `agent_ready_timeout` keeps it too (the agent may be running in it). Any
other failure closes the tab this fork opened and removes the worktree and branch it created.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
import time
from collections.abc import Mapping
from typing import Any

import psutil

from pebrel import proctree
from pebrel.agentkinds import classify
from pebrel.errors import ErrorCode, PebrelError
from pebrel.method_params import AgentForkParams
from pebrel.model import READY_DEFAULT_TIMEOUT_MS
from pebrel.router import gitops
from pebrel.router.agents import NamedAgent
from pebrel.router.handlers import Handler, Result
from pebrel.router.handlers.agent import record
from pebrel.router.handlers.agent_start import (
    claim_name,
    launch_agent,
    start_argv,
    wait_ready,
)
from pebrel.router.handlers.input_common import pane_ids, remote_details
from pebrel.router.handlers.tab import open_tab
from pebrel.router.runtime import Runtime
from pebrel.router.state import Pane

logger = logging.getLogger(__name__)

#: The tab-and-agent dispatch (tab open, agent registered, start command typed) must be
#: confirmed within this; ready_timeout_ms counts from the start of the dispatch.
DISPATCH_TIMEOUT_S = 30.0
#: How long to look for the agent's process and its cwd once it is ready.
VERIFY_TIMEOUT_S = 3.0
VERIFY_POLL_S = 0.05


def invalid(message: str, details: dict[str, Any]) -> PebrelError:
    return PebrelError(ErrorCode.INVALID_PARAMS, message, details)


def source_of(rt: Runtime, params: AgentForkParams) -> tuple[str, int]:
    """(source cwd, window id of the new tab), from a pane or an absolute source_cwd."""
    pane_id, cwd = params.get("source_pane_id"), params.get("source_cwd")
    if (pane_id is None) == (cwd is None):
        raise invalid("pass exactly one of source_pane_id and source_cwd", {})
    if pane_id is not None:
        pane = rt.state.pane(params.get("window_id"), pane_id)
        if pane.remote:
            raise PebrelError(
                ErrorCode.REMOTE_WORKTREE_UNSUPPORTED,
                f"pane {pane.pane_id} is an SSH pane: a worktree cannot be made on its host",
                remote_details(pane),
            )
        return pane.cwd, pane.window_id
    assert isinstance(cwd, str)
    if not os.path.isabs(cwd):
        raise invalid(f"source_cwd {cwd!r} is not absolute", {"source_cwd": cwd})
    return cwd, rt.state.window(params.get("window_id")).window_id


async def dispatch(
    rt: Runtime,
    window_id: int,
    params: AgentForkParams,
    argv: list[str],
    wt: gitops.Worktree,
    opened: list[Pane],
) -> tuple[NamedAgent, Pane]:
    """A tab with the worktree as cwd, the agent registered in it, its start command typed."""
    pane = await open_tab(rt, rt.state.window(window_id), wt.path)
    opened.append(pane)
    line = shlex.join(argv)
    agent = await launch_agent(rt, pane, params["name"], params["kind"], line, wt.provenance())
    return agent, pane


def agent_cwd(shell_pid: int, kind: str) -> str | None:
    """The cwd of the pane's process that runs the agent of `kind` (None: not found)."""
    for proc in proctree.descendants(shell_pid):
        try:
            if classify(proc.cmdline()) == kind:
                return os.path.realpath(proc.cwd())
        except psutil.Error:
            continue
    return None


async def verify_cwd(rt: Runtime, agent: NamedAgent, pane: Pane, path: str) -> None:
    """The agent's process really runs inside the worktree (read off the loop)."""
    loop = asyncio.get_running_loop()
    expected = os.path.realpath(path)
    deadline = time.monotonic() + VERIFY_TIMEOUT_S
    observed: str | None = None
    while pane.pid is not None:
        observed = await loop.run_in_executor(None, agent_cwd, pane.pid, agent.kind)
        inside = observed is not None and (
            observed == expected or observed.startswith(expected + os.sep)
        )
        if inside:
            return
        if time.monotonic() >= deadline:
            break
        await asyncio.sleep(VERIFY_POLL_S)
    raise PebrelError(
        ErrorCode.ACTION_FAILED,
        "the agent's process does not run inside its worktree",
        {**pane_ids(pane), "expected_cwd": expected, "observed_cwd": observed},
    )


async def close_opened(rt: Runtime, opened: list[Pane]) -> None:
    for pane in opened:
        if rt.state.panes.get(pane.key) is pane:
            await rt.close_panes([pane])
            if rt.state.panes.get(pane.key) is pane:
                rt.remove_pane(pane)
    rt.commit()


def kept(exc: PebrelError, wt: gitops.Worktree) -> PebrelError:
    exc.details.update(cleanup_deferred=True, worktree=wt.provenance())
    return exc


async def fork(rt: Runtime, params: AgentForkParams) -> Result:
    source_cwd, window_id = source_of(rt, params)
    path = params.get("path")
    if path is not None and not os.path.isabs(path):
        raise invalid(f"path {path!r} is not absolute", {"path": path})
    claim_name(rt, params["name"])
    argv = start_argv(params["kind"], None)
    wt = await gitops.create(
        source_cwd,
        params["name"],
        params.get("branch"),
        params.get("base"),
        path,
        params.get("allow_dirty_source", False),
    )
    budget_s = params.get("ready_timeout_ms", READY_DEFAULT_TIMEOUT_MS) / 1000
    started = time.monotonic()
    # The dispatch has its own deadline; readiness gets what is left of ready_timeout_ms. If
    # the dispatch used it all up, that is agent_ready_timeout (not a dispatch timeout), even
    # when the agent is ready by then: it was not ready within the time asked for.
    deadline_s = DISPATCH_TIMEOUT_S
    opened: list[Pane] = []
    task = asyncio.ensure_future(dispatch(rt, window_id, params, argv, wt, opened))
    try:
        done, _ = await asyncio.wait({task}, timeout=deadline_s)
        if not done:
            rt.keep(task)  # it may still land; its tab then works in the kept checkout
            task.add_done_callback(late_dispatch)
            raise kept(
                PebrelError(
                    ErrorCode.RUNTIME_TIMEOUT,
                    f"the tab and agent were not confirmed within {deadline_s:g} s",
                    {"window_id": window_id},
                ),
                wt,
            )
        agent, pane = task.result()
        await wait_ready(rt, agent, pane, budget_s - (time.monotonic() - started))
        await verify_cwd(rt, agent, pane, wt.path)
    except PebrelError as exc:
        if exc.code in (ErrorCode.RUNTIME_TIMEOUT, ErrorCode.AGENT_READY_TIMEOUT):
            raise kept(exc, wt) from None
        await undo(rt, opened, wt, exc.details)
        raise
    except Exception:
        await undo(rt, opened, wt, {})
        raise
    logger.info("agent %s forked into %s", params["name"], wt.path)
    return record(rt, agent)


async def undo(
    rt: Runtime, opened: list[Pane], wt: gitops.Worktree, details: dict[str, Any]
) -> None:
    await close_opened(rt, opened)
    details["rolled_back"] = await gitops.rollback(wt)
    details["worktree"] = wt.provenance()  # created: false now


def late_dispatch(task: asyncio.Future[tuple[NamedAgent, Pane]]) -> None:
    if task.cancelled():
        return
    exc = task.exception()
    if exc is not None:
        logger.warning("a timed-out fork dispatch failed later: %s", exc)
    else:
        logger.info("a timed-out fork dispatch completed later")


METHODS: Mapping[str, Handler] = {"agent.fork": fork}
