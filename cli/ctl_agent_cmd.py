"""`pebrel ctl agents|agent-get|agent-prompt|agent-wait|agent-read`: agent methods (R8.3).

Each verb calls the same builder (`pebrel.cli.agent_params`) as its `pebrel agent` verb.
"""

from __future__ import annotations

import click

from pebrel.cli import agent_params, params
from pebrel.cli.options import (
    SUBMISSION_TIMEOUT_HELP,
    WAIT_STATES,
    after_seq_option,
    check_submit_wait,
    generation_option,
    lines_option,
    list_window_option,
    no_submit_option,
    pretty_option,
    ready_timeout_option,
    screen_option,
    submission_timeout_option,
    wait_timeout_option,
    window_option,
)
from pebrel.cli.output import call, submit_then_wait
from pebrel.model import ORCHESTRATE_DEFAULT_TIMEOUT_MS, ORCHESTRATE_MAX_TIMEOUT_MS

agent_option = click.option("--agent", required=True, help="Agent name or agent_id.")


@click.command("agents")
@list_window_option
@pretty_option
def agents(window_id: int | None, pretty: bool) -> None:
    """agents.list: only panes where a known AI CLI runs."""
    call(agent_params.agents_list(window_id=window_id), pretty)


@click.command("agent-get")
@agent_option
@generation_option()
@pretty_option
def agent_get(agent: str, generation: int | None, pretty: bool) -> None:
    """agent.get."""
    call(agent_params.agent_get(agent=agent, generation=generation), pretty)


@click.command("agent-prompt")
@agent_option
@generation_option(required=True)
@click.option("--text", required=True)
@no_submit_option()
@click.option("--wait", "wait_state", type=WAIT_STATES, help="Then agent.wait for this state.")
@submission_timeout_option(SUBMISSION_TIMEOUT_HELP)
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
    req = agent_params.agent_prompt(
        agent=agent, generation=generation, text=text, submit=not no_submit
    )
    submit_then_wait(req, wait_state, timeout_ms, pretty, agent_params.agent_wait_after)


@click.command("agent-wait")
@agent_option
@generation_option(required=True)
@click.option("--state", type=WAIT_STATES, required=True)
@wait_timeout_option
@after_seq_option()
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
    req = agent_params.agent_wait(
        agent=agent, generation=generation, state=state, after_seq=after_seq, timeout_ms=timeout_ms
    )
    call(req, pretty)


@click.command("agent-read")
@agent_option
@generation_option(required=True)
@lines_option()
@screen_option
@pretty_option
def agent_read(agent: str, generation: int, lines: int | None, screen: bool, pretty: bool) -> None:
    """agent.read."""
    req = agent_params.agent_read(agent=agent, generation=generation, lines=lines, screen=screen)
    call(req, pretty)


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
@ready_timeout_option()
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
    if (source_pane_id is None) == (source_cwd is None):
        raise click.UsageError("pass exactly one of --source-pane and --source-cwd")
    req = agent_params.agent_fork(
        name=name,
        kind=kind,
        window_id=window_id,
        source_pane_id=source_pane_id,
        source_cwd=source_cwd,
        branch=branch,
        base=base,
        path=path,
        allow_dirty_source=allow_dirty_source,
        ready_timeout_ms=ready_timeout_ms,
    )
    call(req, pretty)


# ---- runtime.orchestrate (R10) ---------------------------------------------------------------


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
    type=click.IntRange(1, ORCHESTRATE_MAX_TIMEOUT_MS),
    help=(
        "Deadline of the whole workflow "
        f"(default: the file's, else {ORCHESTRATE_DEFAULT_TIMEOUT_MS})."
    ),
)
@pretty_option
def orchestrate(path: str, timeout_ms: int | None, pretty: bool) -> None:
    """runtime.orchestrate: run a workflow of typed steps; prints the receipt."""
    call(params.runtime_orchestrate(read_workflow(path), timeout_ms), pretty)
