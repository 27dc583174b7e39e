"""`pebrel ctl agents|agent-get|agent-prompt|agent-wait|agent-read`: agent methods (R8.3)."""

from __future__ import annotations

import click

from pebrel.cli.agent_cmd import deliver_then_wait
from pebrel.cli.output import (
    CLI_WAIT_TIMEOUT_MS,
    call,
    check_submit_wait,
    pretty_option,
    prune,
    wait_timeout_option,
    wait_timeout_s,
    window_option,
)
from pebrel.cli.pane_cmd import WAIT_STATES

agent_option = click.option("--agent", required=True, help="Agent name or agent_id.")


@click.command("agents")
@window_option
@pretty_option
def agents(window_id: int | None, pretty: bool) -> None:
    """agents.list: only panes where a known AI CLI runs."""
    call("agents.list", prune(window_id=window_id), pretty)


@click.command("agent-get")
@agent_option
@click.option("--generation", type=click.IntRange(min=1))
@pretty_option
def agent_get(agent: str, generation: int | None, pretty: bool) -> None:
    """agent.get."""
    call("agent.get", prune(agent=agent, generation=generation), pretty)


@click.command("agent-prompt")
@agent_option
@click.option("--generation", type=click.IntRange(min=1), required=True)
@click.option("--text", required=True)
@click.option("--no-submit", is_flag=True)
@click.option("--wait", "wait_state", type=WAIT_STATES, help="Then agent.wait for this state.")
@wait_timeout_option
@pretty_option
def agent_prompt(
    agent: str,
    generation: int,
    text: str,
    no_submit: bool,
    wait_state: str | None,
    timeout_ms: int | None,
    pretty: bool,
) -> None:
    """agent.prompt (then agent.wait from its state_change_seq with --wait)."""
    check_submit_wait(no_submit, wait_state)
    params = prune(agent=agent, generation=generation, text=text, submit=not no_submit)
    deliver_then_wait("agent.prompt", params, wait_state, timeout_ms, pretty)


@click.command("agent-wait")
@agent_option
@click.option("--generation", type=click.IntRange(min=1), required=True)
@click.option("--state", type=WAIT_STATES, required=True)
@click.option(
    "--timeout-ms", type=click.IntRange(min=0), default=CLI_WAIT_TIMEOUT_MS, show_default=True
)
@click.option("--after-seq", type=click.IntRange(min=1))
@pretty_option
def agent_wait(
    agent: str,
    generation: int,
    state: str,
    timeout_ms: int,
    after_seq: int | None,
    pretty: bool,
) -> None:
    """agent.wait."""
    params = prune(
        agent=agent, generation=generation, state=state, timeout_ms=timeout_ms, after_seq=after_seq
    )
    call("agent.wait", params, pretty, wait_timeout_s(timeout_ms, CLI_WAIT_TIMEOUT_MS))


@click.command("agent-read")
@agent_option
@click.option("--generation", type=click.IntRange(min=1), required=True)
@click.option("--lines", type=click.IntRange(1, 2000))
@pretty_option
def agent_read(agent: str, generation: int, lines: int | None, pretty: bool) -> None:
    """agent.read."""
    call("agent.read", prune(agent=agent, generation=generation, lines=lines), pretty)


@click.command("agent-fork")
@window_option
@click.option("--source-pane", "source_pane_id", type=click.IntRange(min=1))
@click.option("--source-cwd", type=click.Path(file_okay=False), help="Made absolute here.")
@click.option("--name", required=True)
@click.option("--kind", required=True)
@click.option("--branch", help="Default: pebrel/<agent-slug>.")
@click.option("--base", help="Commit-ish to branch from (default: HEAD of the source).")
@click.option("--path", type=click.Path(), help="Default: <repo>-worktrees/<agent-slug>.")
@click.option("--allow-dirty-source", is_flag=True)
@click.option("--ready-timeout-ms", type=click.IntRange(1, 3_600_000))
@pretty_option
def agent_fork(
    window_id: int | None,
    source_pane_id: int | None,
    source_cwd: str | None,
    name: str,
    kind: str,
    branch: str | None,
    base: str | None,
    path: str | None,
    allow_dirty_source: bool,
    ready_timeout_ms: int | None,
    pretty: bool,
) -> None:
    """agent.fork (R9.5): a named agent in a new branch + git worktree, in a new tab."""
    import os

    if (source_pane_id is None) == (source_cwd is None):
        raise click.UsageError("pass exactly one of --source-pane and --source-cwd")
    params = prune(
        window_id=window_id,
        source_pane_id=source_pane_id,
        source_cwd=os.path.abspath(source_cwd) if source_cwd is not None else None,
        name=name,
        kind=kind,
        branch=branch,
        base=base,
        path=os.path.abspath(path) if path is not None else None,
        allow_dirty_source=allow_dirty_source or None,
        ready_timeout_ms=ready_timeout_ms,
    )
    call("agent.fork", params, pretty, wait_timeout_s(ready_timeout_ms, 60_000) + 60)


# ---- runtime.orchestrate (R10) ---------------------------------------------------------------

ORCHESTRATE_TIMEOUT_MS = 300_000


def read_workflow(path: str) -> dict[str, object]:
    """The workflow JSON object from a file, or stdin for `-`; the CLI reads it, not the runtime."""
    import json
    import sys

    try:
        if path == "-":
            raw = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as handle:
                raw = handle.read()
        loaded = json.loads(raw)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise click.UsageError(f"cannot read the workflow {path}: {exc}") from exc
    if not isinstance(loaded, dict):
        raise click.UsageError("the workflow must be a JSON object with a `steps` array")
    return loaded


@click.command("orchestrate")
@click.option(
    "--file",
    "path",
    required=True,
    help="Workflow JSON ({steps, on_error?, timeout_ms?}); - reads stdin.",
)
@click.option(
    "--timeout-ms",
    type=click.IntRange(1, 3_600_000),
    help=f"Deadline of the whole workflow (default: the file's, else {ORCHESTRATE_TIMEOUT_MS}).",
)
@pretty_option
def orchestrate(path: str, timeout_ms: int | None, pretty: bool) -> None:
    """runtime.orchestrate: run a workflow of typed steps; prints the receipt."""
    params = read_workflow(path)
    if timeout_ms is not None:
        params["timeout_ms"] = timeout_ms
    given = params.get("timeout_ms")
    effective = given if isinstance(given, int) else ORCHESTRATE_TIMEOUT_MS
    call("runtime.orchestrate", params, pretty, wait_timeout_s(effective, ORCHESTRATE_TIMEOUT_MS))
