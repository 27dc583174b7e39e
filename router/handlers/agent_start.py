"""agent.start, and starting a named agent in a pane (R9.3).

agent.start, agent.fork and runtime.orchestrate's agent_launch all start an agent the same way:
the name is checked free, the agent registered and bound to the pane, and its start command
typed at the shell prompt (:func:`launch_agent`); each then waits until it is ready
(:func:`wait_ready`) when it needs to.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Mapping
from typing import Any

from pebrel.agentkinds import KINDS
from pebrel.errors import ErrorCode, PebrelError
from pebrel.method_params import AgentStartParams
from pebrel.model import READY_DEFAULT_TIMEOUT_MS
from pebrel.router.agents import NamedAgent
from pebrel.router.handlers import Handler, Result
from pebrel.router.handlers.agent import identity, record
from pebrel.router.handlers.input_common import pane_ids, require_live
from pebrel.router.handlers.keys import FIRST_PROMPT_SETTLE_S, PROMPT_SETTLE_S
from pebrel.router.handlers.pane_io import prompt_pane
from pebrel.router.handlers.tab import open_tab
from pebrel.router.runtime import Runtime
from pebrel.router.state import Pane

#: Start commands, verified against each provider's CLI documentation.
START_ARGV: dict[str, list[str]] = {
    "claude": ["claude"],
    "codex": ["codex"],
    "opencode": ["opencode"],
    "cursor": ["agent"],
    "pi": ["pi"],
    "omp": ["omp"],
    "kimi": ["kimi"],
}
#: Resume syntax only where the provider documents one.
RESUME_ARGV: dict[str, list[str]] = {
    "claude": ["claude", "--resume"],
    "codex": ["codex", "resume"],
}


def start_argv(kind: str, resume: str | None) -> list[str]:
    if kind not in KINDS:
        raise PebrelError(
            ErrorCode.INVALID_PARAMS,
            f"unknown agent kind {kind!r}",
            {"kind": kind, "known": list(KINDS)},
        )
    if resume is None:
        return list(START_ARGV[kind])
    if kind not in RESUME_ARGV:
        raise PebrelError(
            ErrorCode.INVALID_PARAMS,
            f"{kind} has no verified resume syntax; resume_session_id is refused",
            {"kind": kind, "resumable_kinds": sorted(RESUME_ARGV)},
        )
    return [*RESUME_ARGV[kind], resume]


def start_line(pane: Pane, argv: list[str], cwd: str | None) -> str:
    """The start command to type into an existing pane; it must be an idle shell at its prompt."""
    require_live(pane)
    if pane.tracker.busy or pane.agents.session is not None or not pane.tracker.at_prompt:
        raise PebrelError(
            ErrorCode.INVALID_STATE,
            f"pane {pane.pane_id} is not an idle shell at its prompt",
            {**pane_ids(pane), "task_state": pane.tracker.state},
        )
    return shlex.join(argv) if cwd is None else f"cd -- {shlex.quote(cwd)} && {shlex.join(argv)}"


async def settle_prompt(rt: Runtime, pane: Pane) -> None:
    """Let an integrated shell draw its prompt before `start_line` judges it: a pane.run
    answers on its command's done mark, a moment before the shell's next prompt, so a start
    sent right after it would otherwise find no prompt. A busy pane, an agent in it or a
    shell without OSC 133 marks is judged at once."""
    tracker = pane.tracker
    limit = time.monotonic() + (PROMPT_SETTLE_S if tracker.prompt_seen else FIRST_PROMPT_SETTLE_S)
    while (
        pane.integrated
        and not tracker.at_prompt
        and not tracker.busy
        and pane.agents.session is None
        and not pane.exited
        and time.monotonic() < limit
    ):
        await rt.next_change(pane, limit - time.monotonic())


def claim_name(rt: Runtime, name: str) -> None:
    """Refuse a name an active agent already has (`agent_name_conflict`)."""
    if rt.state.registry.active_named(name) is not None:
        raise PebrelError(
            ErrorCode.AGENT_NAME_CONFLICT,
            f"an active agent is already named {name!r}",
            {"name": name},
        )


async def launch_agent(
    rt: Runtime,
    pane: Pane,
    name: str,
    kind: str,
    line: str,
    worktree: dict[str, Any] | None = None,
) -> NamedAgent:
    """Register the named agent in ``pane``, bind it there, and type its start command
    ``line``. The agent the pane was bound to (if starting or active) is replaced."""
    claim_name(rt, name)
    agent = rt.state.registry.register(name, kind, pane.window_id, pane.pane_id, managed=True)
    agent.worktree = worktree
    bound = pane.agents.bound
    if bound is not None and bound.status in ("starting", "active"):
        bound.status = "replaced"
    pane.agents.bound = agent
    rt.commit()
    try:
        await prompt_pane(rt, pane, line)
    except BaseException:
        # The start line was not typed: nothing started, and the name is free again.
        if agent.status == "starting":
            agent.status = "exited"
        rt.commit()
        raise
    return agent


async def wait_ready(rt: Runtime, agent: NamedAgent, pane: Pane, timeout_s: float) -> None:
    """Ready: the agent is recognised in the pane and there is evidence it takes input (its
    start hook, any later word of its own, or a screen rule for its input prompt), not merely
    its process; and it is not running (DESIGN "Agents", R9.3).

    A budget already spent (``timeout_s <= 0``) is agent_ready_timeout even if the agent is
    ready by now: it was not confirmed within the time the caller gave.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        session = pane.agents.session
        if (
            timeout_s > 0
            and session is not None
            and session.ready
            and pane.agents.bound is agent
            and agent.status == "active"
            and pane.tracker.state != "running"
        ):
            return
        if pane.exited or rt.state.panes.get(pane.key) is not pane:
            raise PebrelError(
                ErrorCode.ACTION_FAILED,
                "the agent's pane exited during start",
                {**identity(agent), **pane_ids(pane)},
            )
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            if agent.status == "starting":
                # Never recognised: the start failed, and its name is free again.
                agent.status = "exited"
            raise PebrelError(
                ErrorCode.AGENT_READY_TIMEOUT,
                f"agent {agent.name} was not ready in time",
                {
                    **identity(agent),
                    **pane_ids(pane),
                    "recognised": session is not None,
                    "ready": session is not None and session.ready,
                    "task_state": pane.tracker.state,
                },
            )
        await rt.next_change(pane, remaining)


async def start(rt: Runtime, params: AgentStartParams) -> Result:
    """In the idle shell of ``pane_id``, or in a new tab; answers once the agent is ready."""
    name = params["name"]
    argv = start_argv(params["kind"], params.get("resume_session_id"))
    claim_name(rt, name)
    cwd = rt.check_cwd(params.get("cwd"))
    pane_id = params.get("pane_id")
    if pane_id is not None:
        pane = rt.state.pane(params.get("window_id"), pane_id)
        await settle_prompt(rt, pane)
        pane = rt.state.pane(params.get("window_id"), pane_id)  # closed meanwhile: not found
        line = start_line(pane, argv, cwd)
    else:
        pane = await open_tab(rt, rt.state.window(params.get("window_id")), cwd)
        line = shlex.join(argv)
    agent = await launch_agent(rt, pane, name, params["kind"], line)
    await wait_ready(
        rt, agent, pane, params.get("ready_timeout_ms", READY_DEFAULT_TIMEOUT_MS) / 1000
    )
    return record(rt, agent)


METHODS: Mapping[str, Handler] = {"agent.start": start}
