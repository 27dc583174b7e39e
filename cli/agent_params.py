"""One builder per agent method the CLI sends (R8.1-R8.3, R9): `pebrel agent ...` and the ctl
verbs call the same ones. An agent is named by its name or its stable `agent_id`; a generation,
when given, makes the runtime refuse an agent that was replaced or has exited.
"""

from __future__ import annotations

import os

from pebrel.cli.params import Params, Request, prune, wait_timeout_s
from pebrel.model import CLI_WAIT_TIMEOUT_MS, READY_DEFAULT_TIMEOUT_MS

#: agent.fork creates a branch and a git worktree before its ready timeout starts to count.
FORK_MARGIN_S = 60.0


def _absolute(path: str | None) -> str | None:
    """A path the user gave, made absolute here: the runtime runs in another directory."""
    return os.path.abspath(path) if path is not None else None


def agents_list(*, window_id: int | None = None) -> Request:
    return Request("agents.list", prune(window_id=window_id))


def agent_start(
    *,
    name: str,
    kind: str,
    window_id: int | None = None,
    pane_id: int | None = None,
    cwd: str | None = None,
    resume_session_id: str | None = None,
    ready_timeout_ms: int | None = None,
) -> Request:
    params = prune(
        name=name,
        kind=kind,
        window_id=window_id,
        pane_id=pane_id,
        cwd=_absolute(cwd),
        resume_session_id=resume_session_id,
        ready_timeout_ms=ready_timeout_ms,
    )
    return Request(
        "agent.start", params, wait_timeout_s(ready_timeout_ms, READY_DEFAULT_TIMEOUT_MS)
    )


def agent_launch(
    *,
    name: str,
    kind: str,
    argv: list[str],
    cwd: str,
    window_id: int | None = None,
    pane_id: int | None = None,
    shell_pid: int | None = None,
) -> Request:
    params = prune(
        name=name,
        kind=kind,
        argv=argv,
        cwd=_absolute(cwd),
        window_id=window_id,
        pane_id=pane_id,
        shell_pid=shell_pid,
    )
    return Request("agent.launch", params)


def agent_get(*, agent: str, generation: int | None = None) -> Request:
    return Request("agent.get", prune(agent=agent, generation=generation))


def agent_prompt(*, agent: str, generation: int | None, text: str, submit: bool = True) -> Request:
    params = prune(agent=agent, generation=generation, text=text, submit=submit)
    return Request("agent.prompt", params)


def agent_paste(*, agent: str, generation: int | None, text: str, submit: bool = True) -> Request:
    params = prune(agent=agent, generation=generation, text=text, submit=submit)
    return Request("agent.paste", params)


def agent_read(
    *, agent: str, generation: int | None, lines: int | None = None, screen: bool = False
) -> Request:
    params = prune(agent=agent, generation=generation, lines=lines, screen=screen or None)
    return Request("agent.read", params)


def agent_wait(
    *,
    agent: str,
    generation: int | None,
    state: str,
    after_seq: int | None = None,
    timeout_ms: int | None = None,
) -> Request:
    """agent.wait; the CLI always sends a timeout, CLI_WAIT_TIMEOUT_MS unless one is given."""
    wait_ms = CLI_WAIT_TIMEOUT_MS if timeout_ms is None else timeout_ms
    params = prune(
        agent=agent, generation=generation, state=state, after_seq=after_seq, timeout_ms=wait_ms
    )
    return Request("agent.wait", params, wait_timeout_s(wait_ms, CLI_WAIT_TIMEOUT_MS))


def agent_wait_after(
    submission: Request, result: Params, state: str, after_seq: int | None, timeout_ms: int | None
) -> Request:
    """agent.wait on the generation that an agent.prompt or agent.paste went to (a WaitAfter).

    Its result carries `last_message`, the final message a stop hook supplied.
    """
    return agent_wait(
        agent=result.get("agent_id") or submission.params["agent"],
        generation=result["generation"],
        state=state,
        after_seq=after_seq,
        timeout_ms=timeout_ms,
    )


def agent_delegate(
    *,
    agent: str,
    generation: int | None,
    text: str,
    origin_window_id: int,
    origin_pane_id: int,
) -> Request:
    params = prune(
        agent=agent,
        generation=generation,
        text=text,
        origin_window_id=origin_window_id,
        origin_pane_id=origin_pane_id,
    )
    return Request("agent.delegate", params)


def agent_fork(
    *,
    name: str,
    kind: str,
    window_id: int | None = None,
    source_pane_id: int | None = None,
    source_cwd: str | None = None,
    branch: str | None = None,
    base: str | None = None,
    path: str | None = None,
    allow_dirty_source: bool = False,
    ready_timeout_ms: int | None = None,
) -> Request:
    params = prune(
        window_id=window_id,
        source_pane_id=source_pane_id,
        source_cwd=_absolute(source_cwd),
        name=name,
        kind=kind,
        branch=branch,
        base=base,
        path=_absolute(path),
        allow_dirty_source=allow_dirty_source or None,
        ready_timeout_ms=ready_timeout_ms,
    )
    timeout_s = wait_timeout_s(ready_timeout_ms, READY_DEFAULT_TIMEOUT_MS) + FORK_MARGIN_S
    return Request("agent.fork", params, timeout_s)
