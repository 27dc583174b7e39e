"""agents.list, agent.start|get|prompt|paste|read|wait and agent.hook (R9.1-R9.4, R9.7).

Every call that names an agent is bound to one generation: a call for a generation that exited
or was replaced fails (`agent_exited`, `agent_replaced`, `agent_identity_mismatch`) and is
never delivered to the session that took its place.
"""

from __future__ import annotations

import asyncio
import shlex
import time
from collections.abc import Mapping
from typing import Any

from pebrel import messages as m
from pebrel.agentkinds import DISPLAY_NAMES, KINDS
from pebrel.errors import ErrorCode, PebrelError
from pebrel.inputs import check_prompt_text
from pebrel.model import READY_DEFAULT_TIMEOUT_MS, WAIT_DEFAULT_TIMEOUT_MS
from pebrel.router import agents, links
from pebrel.router.agents import HOOK_STATES, NamedAgent
from pebrel.router.handlers import Handler, Params, Result, pane_io
from pebrel.router.handlers import keys as key_handlers
from pebrel.router.handlers.input_common import (
    mark_submitted,
    pane_ids,
    require_live,
    require_unlocked,
    worker_link,
    write_input,
)
from pebrel.router.handlers.tab import new as new_tab
from pebrel.router.runtime import Runtime
from pebrel.router.state import Pane

#: How long agent.prompt waits for its text to be echoed before pressing Enter: Ink-based TUIs
#: treat text and Enter in one read as a paste (TRAPS "Shells").
ECHO_TIMEOUT_S = 1.0
ECHO_POLL_S = 0.02
#: How long agent.paste waits for the agent's input to turn bracketed paste back on.
PASTE_MODE_GRACE_S = 1.0
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


def record(rt: Runtime, agent: NamedAgent) -> Result:
    """The wire shape of an agent (agents.list, agent.get, agent.start)."""
    pane = rt.state.panes.get((agent.window_id, agent.pane_id))
    session = pane.agents.session if pane is not None and pane.agents.bound is agent else None
    live = session is not None and agent.status == "active"
    return {
        "agent_id": agent.agent_id,
        "name": agent.name,
        "kind": agent.kind,
        "display_name": DISPLAY_NAMES.get(agent.kind, agent.kind),
        "window_id": agent.window_id,
        "pane_id": agent.pane_id,
        "generation": max(agent.generation, 1),
        "status": "exited" if agent.status == "active" and not live else agent.status,
        "state": pane.tracker.state if live and pane is not None else agent.last_state,
        "state_change_seq": pane.tracker.seq if pane is not None else 1,
        "state_source": session.source if session is not None else "process",
        "state_rule": session.rule if session is not None else None,
        "session_id": agent.session_id,
        "last_message": agent.last_message,
        "managed": agent.managed,
        "delegations": list(agent.delegations),
        **({"worktree": agent.worktree} if agent.worktree is not None else {}),
    }


def bound(rt: Runtime, params: Params) -> tuple[NamedAgent, Pane]:
    """Resolve `agent` and check the requested `generation` is the live session."""
    agent = rt.state.registry.resolve(params["agent"])
    pane = rt.state.panes.get((agent.window_id, agent.pane_id))
    agents.check_generation(
        agent, pane.agents if pane is not None else None, params.get("generation")
    )
    assert pane is not None
    return agent, pane


def identity(agent: NamedAgent) -> dict[str, Any]:
    return {"agent_id": agent.agent_id, "generation": agent.generation}


async def list_agents(rt: Runtime, params: Params) -> Result:
    window_id = params.get("window_id")
    if window_id is not None:
        rt.state.window(window_id)
    found = []
    for pane in rt.state.panes.values():
        if pane.agents.session is None or pane.agents.bound is None:
            continue
        if window_id is not None and pane.window_id != window_id:
            continue
        found.append(record(rt, pane.agents.bound))
    found.sort(key=lambda a: (a["window_id"], a["pane_id"]))
    return {"agents": found}


async def get(rt: Runtime, params: Params) -> Result:
    agent = rt.state.registry.resolve(params["agent"])
    if params.get("generation") is not None:
        pane = rt.state.panes.get((agent.window_id, agent.pane_id))
        agents.check_generation(agent, pane.agents if pane else None, params["generation"])
    return record(rt, agent)


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


async def start(rt: Runtime, params: Params) -> Result:
    name: str = params["name"]
    argv = start_argv(params["kind"], params.get("resume_session_id"))
    registry = rt.state.registry
    if registry.active_named(name) is not None:
        raise PebrelError(
            ErrorCode.AGENT_NAME_CONFLICT,
            f"an active agent is already named {name!r}",
            {"name": name},
        )
    cwd = rt.check_cwd(params.get("cwd"))
    if params.get("pane_id") is not None:
        pane = rt.state.pane(params.get("window_id"), params["pane_id"])
        line = start_line(pane, argv, cwd)
    else:
        opened = await new_tab(
            rt,
            {
                k: v
                for k, v in {"window_id": params.get("window_id"), "cwd": cwd}.items()
                if v is not None
            },
        )
        pane = rt.state.panes[(opened["window_id"], opened["pane_id"])]
        line = shlex.join(argv)
    if registry.active_named(name) is not None:
        raise PebrelError(
            ErrorCode.AGENT_NAME_CONFLICT,
            f"an active agent is already named {name!r}",
            {"name": name},
        )
    agent = registry.register(name, params["kind"], pane.window_id, pane.pane_id, managed=True)
    if pane.agents.bound is not None and pane.agents.bound.status in ("starting", "active"):
        pane.agents.bound.status = "replaced"
    pane.agents.bound = agent
    rt.commit()
    await pane_io.prompt(rt, {**pane_ids(pane), "text": line})
    await wait_ready(
        rt, agent, pane, params.get("ready_timeout_ms", READY_DEFAULT_TIMEOUT_MS) / 1000
    )
    return record(rt, agent)


async def wait_ready(rt: Runtime, agent: NamedAgent, pane: Pane, timeout_s: float) -> None:
    """Ready: the process is recognised in the pane and it is not running (DESIGN "Agents").

    A budget already spent (``timeout_s <= 0``) is agent_ready_timeout even if the agent is
    ready by now: it was not confirmed within the time the caller gave.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        session = pane.agents.session
        if (
            timeout_s > 0
            and session is not None
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
                    "task_state": pane.tracker.state,
                },
            )
        await rt.next_change(pane, remaining)


async def wait_for_echo(rt: Runtime, pane: Pane, text: str) -> None:
    """Give an Ink TUI the chance to draw the typed text before Enter arrives."""
    tail = text.strip()[-24:]
    if not tail:
        return
    link = worker_link(rt, pane)
    deadline = time.monotonic() + ECHO_TIMEOUT_S
    while time.monotonic() < deadline:
        reply = await links.request(
            link,
            rt.send,
            lambda rid: m.ReadScreen(request_id=rid, lines=8, max_bytes=65536, keep=False),
        )
        assert isinstance(reply, m.ScreenRead)
        if any(tail in line for line in reply.lines):
            return
        await rt.next_change(pane, ECHO_POLL_S)


async def prompt(rt: Runtime, params: Params) -> Result:
    agent, pane = bound(rt, params)
    text: str = params["text"]
    data = check_prompt_text(text)
    submit = params.get("submit", True)
    not_sent = {"submitted": False, **identity(agent)}
    require_live(pane, not_sent)
    require_unlocked(pane, not_sent)
    pane.writing = True
    try:
        if data:
            await write_input(rt, pane, data)
        baseline = pane.tracker.seq
        if submit:
            await wait_for_echo(rt, pane, text)
            agents.check_generation(agent, pane.agents, agent.generation)
            baseline = mark_submitted(rt, pane)
            await write_input(rt, pane, b"\r")
    except PebrelError as exc:
        exc.details.setdefault("submitted", False)
        exc.details.update(identity(agent))
        raise
    finally:
        pane.writing = False
    rt.commit()
    return {**identity(agent), "submitted": True, "state_change_seq": baseline, **pane_ids(pane)}


async def paste(rt: Runtime, params: Params) -> Result:
    agent, pane = bound(rt, params)
    request = {**pane_ids(pane), "text": params["text"], "submit": params.get("submit", True)}
    deadline = time.monotonic() + PASTE_MODE_GRACE_S
    while True:
        try:
            sent = await key_handlers.paste(rt, request)
            break
        except PebrelError as exc:
            # A TUI re-enables bracketed paste when it redraws its input after a turn; that
            # can come a moment after the stop hook that ended the wait.
            refused = (
                exc.code == ErrorCode.INVALID_STATE and exc.details.get("bracketed_paste") is False
            )
            if not refused or time.monotonic() >= deadline:
                exc.details.update(identity(agent))
                raise
        await asyncio.sleep(ECHO_POLL_S)
        agents.check_generation(agent, pane.agents, agent.generation)
    return {
        **identity(agent),
        "submitted": sent["submitted"],
        "state_change_seq": sent["state_change_seq"],
        **pane_ids(pane),
    }


async def read(rt: Runtime, params: Params) -> Result:
    agent, pane = bound(rt, params)
    result = await pane_io.read_result(
        rt, {**pane_ids(pane), **({"lines": params["lines"]} if "lines" in params else {})}
    )
    return {**identity(agent), **result}


async def wait(rt: Runtime, params: Params) -> Result:
    agent, pane = bound(rt, params)
    target: str = params["state"]
    after_seq: int | None = params.get("after_seq")
    deadline = time.monotonic() + params.get("timeout_ms", WAIT_DEFAULT_TIMEOUT_MS) / 1000
    generation = params["generation"]
    while True:
        found = pane.tracker.observation(target, after_seq)
        ended = agent.ended_seq
        if (
            found is not None
            and (ended is None or found[0] <= ended)
            and agent.generation == generation
        ):
            seq, state = found
            return {
                **identity(agent),
                "state": state,
                "state_change_seq": seq,
                **pane_ids(pane),
                "last_message": agent.last_message,
            }
        agents.check_generation(
            agent, pane.agents if rt.state.panes.get(pane.key) is pane else None, generation
        )
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise PebrelError(
                ErrorCode.TIMEOUT,
                f"agent {agent.name or agent.agent_id} did not reach {target} in time",
                {
                    **identity(agent),
                    **pane_ids(pane),
                    "state": target,
                    "after_seq": after_seq,
                    "observed_state": pane.tracker.state,
                    "observed_state_change_seq": pane.tracker.seq,
                },
            )
        await rt.next_change(pane, remaining)


async def hook(rt: Runtime, params: Params) -> Result:
    """A lifecycle edge from the AI CLI's hook in this pane (`pebrel hook`)."""
    pane = rt.state.pane(params["window_id"], params["pane_id"])
    state = HOOK_STATES[params["event"]]
    applied = rt.agent_evidence(
        pane, state, "hook", params["kind"], params.get("session_id") or None, params.get("message")
    )
    rt.touched(pane)
    reason = None if applied else "no recognised agent of this kind in the pane (yet)"
    return {"accepted": applied, **pane_ids(pane), "reason": reason}


METHODS: Mapping[str, Handler] = {
    "agents.list": list_agents,
    "agent.start": start,
    "agent.get": get,
    "agent.prompt": prompt,
    "agent.paste": paste,
    "agent.read": read,
    "agent.wait": wait,
    "agent.hook": hook,
}
