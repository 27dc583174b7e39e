"""`pebrel ctl agents|agent-get|agent-prompt|agent-wait|agent-read`: agent methods (R8.3)."""

from __future__ import annotations

import click

from cli.agent_cmd import deliver_then_wait
from cli.ctl_cmd import ctl
from cli.output import call, pretty_option, prune, wait_timeout_s, window_option
from cli.pane_cmd import CLI_WAIT_TIMEOUT_MS, WAIT_STATES

agent_option = click.option("--agent", required=True, help="Agent name or agent_id.")


@ctl.command("agents")
@window_option
@pretty_option
def agents(window_id: int | None, pretty: bool) -> None:
    """agents.list: only panes where a known AI CLI runs."""
    call("agents.list", prune(window_id=window_id), pretty)


@ctl.command("agent-get")
@agent_option
@click.option("--generation", type=click.IntRange(min=1))
@pretty_option
def agent_get(agent: str, generation: int | None, pretty: bool) -> None:
    """agent.get."""
    call("agent.get", prune(agent=agent, generation=generation), pretty)


@ctl.command("agent-prompt")
@agent_option
@click.option("--generation", type=click.IntRange(min=1), required=True)
@click.option("--text", required=True)
@click.option("--no-submit", is_flag=True)
@click.option("--wait", "wait_state", type=WAIT_STATES, help="Then agent.wait for this state.")
@click.option("--timeout-ms", type=click.IntRange(min=0), help="Wait timeout (default 600000).")
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
    if no_submit and wait_state is not None:
        raise click.UsageError("--no-submit and --wait contradict each other")
    params = prune(agent=agent, generation=generation, text=text, submit=not no_submit)
    deliver_then_wait("agent.prompt", params, wait_state, timeout_ms, pretty)


@ctl.command("agent-wait")
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


@ctl.command("agent-read")
@agent_option
@click.option("--generation", type=click.IntRange(min=1), required=True)
@click.option("--lines", type=click.IntRange(1, 2000))
@pretty_option
def agent_read(agent: str, generation: int, lines: int | None, pretty: bool) -> None:
    """agent.read."""
    call("agent.read", prune(agent=agent, generation=generation, lines=lines), pretty)
