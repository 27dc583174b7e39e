"""`pebrel ctl ...`: the full protocol, one command per method (R8.3)."""

from __future__ import annotations

import click

from pebrel.cli.lazygroup import LazyGroup
from pebrel.cli.output import (
    CLI_WAIT_TIMEOUT_MS,
    call,
    check_submit_wait,
    pretty_option,
    prompt_then_wait,
    prune,
    size_options,
    wait_timeout_s,
    window_option,
)
from pebrel.cli.pane_cmd import (
    KEY_HELP,
    WAIT_STATES,
    key_params,
    modifier_options,
    read_paste_text,
    submission_wait_option,
)

pane_option = click.option("--pane", "pane_id", type=click.IntRange(min=1), required=True)


#: ctl commands that live in other modules ("module:attribute").
LAZY_COMMANDS = {
    "subscribe": "pebrel.cli.subscribe_cmd:subscribe",
    "agents": "pebrel.cli.ctl_agent_cmd:agents",
    "agent-get": "pebrel.cli.ctl_agent_cmd:agent_get",
    "agent-prompt": "pebrel.cli.ctl_agent_cmd:agent_prompt",
    "agent-wait": "pebrel.cli.ctl_agent_cmd:agent_wait",
    "agent-read": "pebrel.cli.ctl_agent_cmd:agent_read",
    "agent-fork": "pebrel.cli.ctl_agent_cmd:agent_fork",
    "orchestrate": "pebrel.cli.ctl_agent_cmd:orchestrate",
}


@click.group(cls=LazyGroup, lazy_commands=LAZY_COMMANDS)
def ctl() -> None:
    """Full protocol commands; each prints one response envelope."""


@ctl.command("describe")
@pretty_option
def describe(pretty: bool) -> None:
    """runtime.describe: versions, capabilities, features, env contract."""
    call("runtime.describe", {}, pretty)


@ctl.command("snapshot")
@pretty_option
def snapshot(pretty: bool) -> None:
    """runtime.snapshot: windows, tabs, panes, task states, revision."""
    call("runtime.snapshot", {}, pretty)


@ctl.command("read")
@window_option
@pane_option
@click.option("--lines", type=click.IntRange(1, 2000))
@pretty_option
def read(window_id: int | None, pane_id: int, lines: int | None, pretty: bool) -> None:
    """pane.read."""
    call("pane.read", prune(window_id=window_id, pane_id=pane_id, lines=lines), pretty)


@ctl.command("run")
@window_option
@pane_option
@click.option("--command", "command", required=True)
@click.option("--no-wait", is_flag=True)
@click.option("--timeout-ms", type=click.IntRange(min=1))
@pretty_option
def run(
    window_id: int | None,
    pane_id: int,
    command: str,
    no_wait: bool,
    timeout_ms: int | None,
    pretty: bool,
) -> None:
    """pane.run: real exit code from OSC 133."""
    params = prune(
        window_id=window_id,
        pane_id=pane_id,
        command=command,
        wait=False if no_wait else None,
        timeout_ms=timeout_ms,
    )
    call("pane.run", params, pretty, wait_timeout_s(timeout_ms, 600_000))


@ctl.command("focus")
@window_option
@click.option("--pane", "pane_id", type=click.IntRange(min=1))
@pretty_option
def focus(window_id: int | None, pane_id: int | None, pretty: bool) -> None:
    """window.focus: a window, or a pane."""
    if window_id is None and pane_id is None:
        raise click.UsageError("give --window, --pane or both")
    call("window.focus", prune(window_id=window_id, pane_id=pane_id), pretty)


@ctl.command("new-tab")
@window_option
@click.option("--cwd")
@click.option("--shell")
@size_options
@pretty_option
def new_tab(
    window_id: int | None,
    cwd: str | None,
    shell: str | None,
    cols: int | None,
    rows: int | None,
    pretty: bool,
) -> None:
    """tab.new."""
    call("tab.new", prune(window_id=window_id, cwd=cwd, shell=shell, cols=cols, rows=rows), pretty)


@ctl.command("split")
@window_option
@click.option("--pane", "pane_id", type=click.IntRange(min=1))
@click.option(
    "--direction",
    type=click.Choice(["right", "down", "left_right", "top_bottom"]),
    required=True,
)
@click.option("--cwd")
@click.option("--shell")
@pretty_option
def split(
    window_id: int | None,
    pane_id: int | None,
    direction: str,
    cwd: str | None,
    shell: str | None,
    pretty: bool,
) -> None:
    """pane.split (the focused pane unless --pane)."""
    params = prune(window_id=window_id, pane_id=pane_id, direction=direction, cwd=cwd, shell=shell)
    call("pane.split", params, pretty)


@ctl.command("prompt")
@window_option
@pane_option
@click.option("--text", required=True)
@click.option("--no-submit", is_flag=True)
@submission_wait_option()
@click.option("--timeout-ms", type=click.IntRange(min=0))
@pretty_option
def prompt(
    window_id: int | None,
    pane_id: int,
    text: str,
    no_submit: bool,
    wait_state: str | None,
    timeout_ms: int | None,
    pretty: bool,
) -> None:
    """pane.prompt (then pane.wait from the post-submit baseline with --wait)."""
    check_submit_wait(no_submit, wait_state)
    params = prune(window_id=window_id, pane_id=pane_id, text=text, submit=not no_submit)
    prompt_then_wait(params, wait_state, timeout_ms, pretty)


@ctl.command("wait")
@window_option
@pane_option
@click.option("--state", type=WAIT_STATES, default="settled", show_default=True)
@click.option("--after-seq", type=click.IntRange(min=1))
@click.option(
    "--timeout-ms", type=click.IntRange(min=0), default=CLI_WAIT_TIMEOUT_MS, show_default=True
)
@pretty_option
def wait(
    window_id: int | None,
    pane_id: int,
    state: str,
    after_seq: int | None,
    timeout_ms: int,
    pretty: bool,
) -> None:
    """pane.wait."""
    params = prune(
        window_id=window_id,
        pane_id=pane_id,
        state=state,
        after_seq=after_seq,
        timeout_ms=timeout_ms,
    )
    call("pane.wait", params, pretty, wait_timeout_s(timeout_ms, CLI_WAIT_TIMEOUT_MS))


@ctl.command("send-key", epilog=KEY_HELP)
@window_option
@pane_option
@click.option("--key", "key", required=True)
@modifier_options
@pretty_option
def send_key(
    window_id: int | None,
    pane_id: int,
    key: str,
    control: bool,
    alt: bool,
    shift: bool,
    repeat: int | None,
    pretty: bool,
) -> None:
    """pane.send_key: a named key, encoded for the terminal's current mode."""
    call("pane.send_key", key_params(window_id, pane_id, key, control, alt, shift, repeat), pretty)


@ctl.command("paste")
@window_option
@pane_option
@click.option("--text", "text")
@click.option("--stdin", "from_stdin", is_flag=True)
@click.option("--from-file", type=click.Path(dir_okay=False))
@click.option("--no-submit", is_flag=True)
@submission_wait_option()
@click.option("--timeout-ms", type=click.IntRange(min=0))
@pretty_option
def paste(
    window_id: int | None,
    pane_id: int,
    text: str | None,
    from_stdin: bool,
    from_file: str | None,
    no_submit: bool,
    wait_state: str | None,
    timeout_ms: int | None,
    pretty: bool,
) -> None:
    """pane.paste (exactly one of --text, --stdin, --from-file; --wait as for prompt)."""
    check_submit_wait(no_submit, wait_state)
    data = read_paste_text(text, from_stdin, from_file)
    params = prune(window_id=window_id, pane_id=pane_id, text=data, submit=not no_submit)
    prompt_then_wait(params, wait_state, timeout_ms, pretty, method="pane.paste")


@ctl.command("exec-pane")
@window_option
@pane_option
@click.argument("argv", nargs=-1, required=True)
@click.option("--timeout-ms", type=click.IntRange(min=1))
@click.option("--max-output-bytes", type=click.IntRange(min=1))
@click.option("--exit-code", is_flag=True, help="Exit with the child's status (124/128+N/125).")
@pretty_option
def exec_pane(
    window_id: int | None,
    pane_id: int,
    argv: tuple[str, ...],
    timeout_ms: int | None,
    max_output_bytes: int | None,
    exit_code: bool,
    pretty: bool,
) -> None:
    """pane.exec: `ctl exec-pane --window 1 --pane 2 -- ARGV...` (no shell, no TTY)."""
    from pebrel.cli.pane_cmd import run_exec

    run_exec(window_id, pane_id, argv, timeout_ms, max_output_bytes, exit_code, pretty)


@ctl.command("procs")
@window_option
@pane_option
@pretty_option
def procs(window_id: int | None, pane_id: int, pretty: bool) -> None:
    """pane.procs: the process tree under the pane's shell."""
    call("pane.procs", prune(window_id=window_id, pane_id=pane_id), pretty)
