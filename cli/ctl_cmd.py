"""`pebrel ctl ...`: the full protocol, one command per method (R8.3).

Each verb calls the same params builder (`pebrel.cli.params`) as the resource verb over its
method, with the same options; ctl verbs name every target by option (`--window`, `--pane`).
"""

from __future__ import annotations

import click

from pebrel.cli import params
from pebrel.cli.lazygroup import LazyGroup
from pebrel.cli.options import (
    KEY_HELP,
    after_seq_option,
    check_submit_wait,
    cwd_option,
    direction_option,
    exec_argv,
    exit_code_option,
    lines_option,
    max_output_option,
    modifier_options,
    no_submit_option,
    no_wait_option,
    pane_option,
    paste_source_options,
    pretty_option,
    read_paste_text,
    screen_option,
    shell_option,
    size_options,
    submission_timeout_option,
    submission_wait_option,
    timeout_option,
    wait_state_option,
    wait_timeout_option,
    window_option,
)
from pebrel.cli.output import call, exec_call, refuse_remote_paste, submit_then_wait

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
    call(params.runtime_describe(), pretty)


@ctl.command("snapshot")
@pretty_option
def snapshot(pretty: bool) -> None:
    """runtime.snapshot: windows, tabs, panes, task states, revision."""
    call(params.runtime_snapshot(), pretty)


@ctl.command("read")
@window_option
@pane_option(required=True)
@lines_option()
@screen_option
@pretty_option
def read(
    window_id: int | None, pane_id: int, lines: int | None, screen: bool, pretty: bool
) -> None:
    """pane.read."""
    req = params.pane_read(window_id=window_id, pane_id=pane_id, lines=lines, screen=screen)
    call(req, pretty)


@ctl.command("run")
@window_option
@pane_option(required=True)
@click.option("--command", "command", required=True)
@no_wait_option()
@timeout_option()
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
    req = params.pane_run(
        window_id=window_id,
        pane_id=pane_id,
        command=command,
        wait=not no_wait,
        timeout_ms=timeout_ms,
    )
    call(req, pretty)


@ctl.command("focus")
@window_option
@pane_option()
@pretty_option
def focus(window_id: int | None, pane_id: int | None, pretty: bool) -> None:
    """window.focus: a window, or a pane."""
    if window_id is None and pane_id is None:
        raise click.UsageError("give --window, --pane or both")
    call(params.window_focus(window_id=window_id, pane_id=pane_id), pretty)


@ctl.command("new-tab")
@window_option
@cwd_option()
@shell_option()
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
    req = params.tab_new(window_id=window_id, cwd=cwd, shell=shell, cols=cols, rows=rows)
    call(req, pretty)


@ctl.command("split")
@window_option
@pane_option()
@direction_option(required=True)
@cwd_option()
@shell_option()
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
    req = params.pane_split(
        window_id=window_id, pane_id=pane_id, direction=direction, cwd=cwd, shell=shell
    )
    call(req, pretty)


@ctl.command("prompt")
@window_option
@pane_option(required=True)
@click.option("--text", required=True)
@no_submit_option()
@submission_wait_option()
@submission_timeout_option()
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
    req = params.pane_prompt(window_id=window_id, pane_id=pane_id, text=text, submit=not no_submit)
    submit_then_wait(req, wait_state, timeout_ms, pretty, params.pane_wait_after)


@ctl.command("wait")
@window_option
@pane_option(required=True)
@wait_state_option
@after_seq_option()
@wait_timeout_option
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
    req = params.pane_wait(
        window_id=window_id,
        pane_id=pane_id,
        state=state,
        after_seq=after_seq,
        timeout_ms=timeout_ms,
    )
    call(req, pretty)


@ctl.command("send-key", epilog=KEY_HELP)
@window_option
@pane_option(required=True)
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
    req = params.pane_send_key(
        window_id=window_id,
        pane_id=pane_id,
        key=key,
        control=control,
        alt=alt,
        shift=shift,
        repeat=repeat,
    )
    call(req, pretty)


@ctl.command("paste")
@window_option
@pane_option(required=True)
@click.option("--text", "text")
@paste_source_options()
@no_submit_option()
@submission_wait_option()
@submission_timeout_option()
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
    if from_stdin or from_file is not None:
        refuse_remote_paste(window_id, pane_id, "--stdin" if from_stdin else "--from-file", pretty)
    req = params.pane_paste(window_id=window_id, pane_id=pane_id, text=data, submit=not no_submit)
    submit_then_wait(req, wait_state, timeout_ms, pretty, params.pane_wait_after)


@ctl.command("exec-pane")
@window_option
@pane_option(required=True)
@exec_argv
@timeout_option()
@max_output_option()
@exit_code_option("Exit with the child's status (124/128+N/125).")
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
    req = params.pane_exec(
        window_id=window_id,
        pane_id=pane_id,
        argv=argv,
        timeout_ms=timeout_ms,
        max_output_bytes=max_output_bytes,
    )
    exec_call(req, exit_code, pretty)


@ctl.command("procs")
@window_option
@pane_option(required=True)
@pretty_option
def procs(window_id: int | None, pane_id: int, pretty: bool) -> None:
    """pane.procs: the process tree under the pane's shell."""
    call(params.pane_procs(window_id=window_id, pane_id=pane_id), pretty)
