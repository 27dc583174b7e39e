"""`pebrel pane ...`: resource verbs over pane methods (R8.1, R8.2). Numeric pane ids."""

from __future__ import annotations

from typing import Any

import click

from pebrel.cli import params
from pebrel.cli.lazygroup import LazyGroup
from pebrel.cli.options import (
    AFTER_SEQ_HELP,
    EXEC_MAX_OUTPUT_HELP,
    EXEC_TIMEOUT_HELP,
    FROM_FILE_HELP,
    KEY_HELP,
    LINES_HELP,
    RUN_TIMEOUT_HELP,
    SHELL_HELP,
    STDIN_HELP,
    SUBMISSION_TIMEOUT_HELP,
    after_seq_option,
    check_submit_wait,
    confirm_option,
    cwd_option,
    direction_option,
    exec_argv,
    exit_code_option,
    lines_option,
    list_window_option,
    max_output_option,
    modifier_options,
    no_submit_option,
    no_wait_option,
    pane_arg,
    paste_source_options,
    pretty_option,
    read_paste_text,
    screen_option,
    shell_option,
    submission_timeout_option,
    submission_wait_option,
    timeout_option,
    wait_state_option,
    wait_timeout_option,
    window_option,
)
from pebrel.cli.output import (
    Unreachable,
    call,
    emit,
    exec_call,
    finish,
    refuse_remote_paste,
    request,
    submit_then_wait,
)

wait_option = submission_wait_option("Then wait for STATE (default settled) after this submission.")


@click.group(
    cls=LazyGroup,
    lazy_commands={
        "zoom": "pebrel.cli.layout_ops_cmd:zoom",
        "resize": "pebrel.cli.layout_ops_cmd:resize",
    },
)
def pane() -> None:
    """List, read, type into, wait on and run commands in panes."""


@pane.command("list")
@list_window_option
@pretty_option
def list_panes(window_id: int | None, pretty: bool) -> None:
    """Every window's panes as flat rows (from runtime.snapshot), even inside a pane."""
    import sys

    try:
        envelope = request(params.runtime_snapshot())
    except Unreachable as exc:
        emit(exc.envelope, pretty)
        sys.exit(exc.status)
    if envelope.get("ok"):
        snap: dict[str, Any] = envelope["result"]
        panes = [
            p
            for w in snap["windows"]
            for t in w["tabs"]
            for p in t["panes"]
            if window_id is None or p["window_id"] == window_id
        ]
        envelope["result"] = {
            "runtime_id": snap["runtime_id"],
            "revision": snap["revision"],
            "panes": panes,
        }
    finish(envelope, pretty)


@pane.command("read")
@pane_arg
@window_option
@lines_option(LINES_HELP)
@screen_option
@pretty_option
def read(
    pane_id: int, window_id: int | None, lines: int | None, screen: bool, pretty: bool
) -> None:
    """The last logical lines of a pane, or (--screen) its visible screen."""
    req = params.pane_read(window_id=window_id, pane_id=pane_id, lines=lines, screen=screen)
    call(req, pretty)


@pane.command("send")
@pane_arg
@click.argument("text")
@window_option
@no_submit_option("Type the text without pressing Enter.")
@wait_option
@submission_timeout_option(SUBMISSION_TIMEOUT_HELP)
@pretty_option
def send(
    pane_id: int,
    text: str,
    window_id: int | None,
    no_submit: bool,
    wait_state: str | None,
    timeout_ms: int | None,
    pretty: bool,
) -> None:
    """Type one line (and Enter); with --wait, wait until it settles."""
    check_submit_wait(no_submit, wait_state)
    req = params.pane_prompt(window_id=window_id, pane_id=pane_id, text=text, submit=not no_submit)
    submit_then_wait(req, wait_state, timeout_ms, pretty, params.pane_wait_after)


@pane.command("wait")
@pane_arg
@window_option
@wait_state_option
@after_seq_option(AFTER_SEQ_HELP)
@wait_timeout_option
@pretty_option
def wait(
    pane_id: int,
    window_id: int | None,
    state: str,
    after_seq: int | None,
    timeout_ms: int,
    pretty: bool,
) -> None:
    """Wait until a pane reaches a task state."""
    req = params.pane_wait(
        window_id=window_id,
        pane_id=pane_id,
        state=state,
        after_seq=after_seq,
        timeout_ms=timeout_ms,
    )
    call(req, pretty)


def pane_ref(value: str) -> tuple[int | None, int]:
    """`P` or `W:P` as (window_id, pane_id)."""
    window, _, pane = value.rpartition(":")
    try:
        window_id = int(window) if window else None
        pane_id = int(pane)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not P or W:P", param_hint="PANES") from None
    if pane_id < 1 or (window_id is not None and window_id < 1):
        raise click.BadParameter(f"{value!r}: ids start at 1", param_hint="PANES")
    return window_id, pane_id


@pane.command("wait-any")
@click.argument("panes", nargs=-1, required=True)
@wait_state_option
@wait_timeout_option
@pretty_option
def wait_any(panes: tuple[str, ...], state: str, timeout_ms: int, pretty: bool) -> None:
    """Wait until the first of PANES (each P or W:P) reaches a task state.

    Each pane counts from its state now: one already in the state answers at once (the first
    listed wins). The answer names the pane and its index in PANES."""
    req = params.pane_wait_any(
        targets=[pane_ref(p) for p in panes], state=state, timeout_ms=timeout_ms
    )
    call(req, pretty)


@pane.command("run")
@pane_arg
@click.argument("command")
@window_option
@no_wait_option("Return once the command is submitted.")
@timeout_option(RUN_TIMEOUT_HELP)
@pretty_option
def run(
    pane_id: int,
    command: str,
    window_id: int | None,
    no_wait: bool,
    timeout_ms: int | None,
    pretty: bool,
) -> None:
    """Run a command line at the shell prompt and report its real exit code."""
    req = params.pane_run(
        window_id=window_id,
        pane_id=pane_id,
        command=command,
        wait=not no_wait,
        timeout_ms=timeout_ms,
    )
    call(req, pretty)


@pane.command("split")
@pane_arg
@window_option
@direction_option(required=False)
@cwd_option("Working directory of the new pane.")
@shell_option(SHELL_HELP)
@pretty_option
def split(
    pane_id: int,
    window_id: int | None,
    direction: str,
    cwd: str | None,
    shell: str | None,
    pretty: bool,
) -> None:
    """Split a pane."""
    req = params.pane_split(
        window_id=window_id, pane_id=pane_id, direction=direction, cwd=cwd, shell=shell
    )
    call(req, pretty)


@pane.command("close")
@pane_arg
@window_option
@confirm_option
@pretty_option
def close(pane_id: int, window_id: int | None, confirm: bool, pretty: bool) -> None:
    """Close a pane (a busy one needs --confirm)."""
    call(params.pane_close(window_id=window_id, pane_id=pane_id, confirm=confirm), pretty)


@pane.command("focus")
@pane_arg
@window_option
@pretty_option
def focus(pane_id: int, window_id: int | None, pretty: bool) -> None:
    """Focus a pane (and its tab and window)."""
    call(params.window_focus(window_id=window_id, pane_id=pane_id), pretty)


@pane.command("key", epilog=KEY_HELP)
@pane_arg
@click.argument("key")
@window_option
@modifier_options
@pretty_option
def key(
    pane_id: int,
    key: str,
    window_id: int | None,
    control: bool,
    alt: bool,
    shift: bool,
    repeat: int | None,
    pretty: bool,
) -> None:
    """Press a named key (encoded for the terminal's mode); enter submits like `pane send`."""
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


@pane.command("paste")
@pane_arg
@click.argument("text", required=False)
@window_option
@paste_source_options(STDIN_HELP, FROM_FILE_HELP)
@no_submit_option("Paste without pressing Enter afterwards.")
@wait_option
@submission_timeout_option(SUBMISSION_TIMEOUT_HELP)
@pretty_option
def paste(
    pane_id: int,
    text: str | None,
    window_id: int | None,
    from_stdin: bool,
    from_file: str | None,
    no_submit: bool,
    wait_state: str | None,
    timeout_ms: int | None,
    pretty: bool,
) -> None:
    """Bracketed paste of multi-line text (and Enter); with --wait, wait until it settles."""
    check_submit_wait(no_submit, wait_state)
    data = read_paste_text(text, from_stdin, from_file)
    if from_stdin or from_file is not None:
        refuse_remote_paste(window_id, pane_id, "--stdin" if from_stdin else "--from-file", pretty)
    req = params.pane_paste(window_id=window_id, pane_id=pane_id, text=data, submit=not no_submit)
    submit_then_wait(req, wait_state, timeout_ms, pretty, params.pane_wait_after)


@pane.command("exec")
@pane_arg
@exec_argv
@window_option
@timeout_option(EXEC_TIMEOUT_HELP)
@max_output_option(EXEC_MAX_OUTPUT_HELP)
@exit_code_option(
    "Exit with the child's status (124 timed out, 128+N signal N, 125 Pebrel failed)."
)
@pretty_option
def exec_(
    pane_id: int,
    argv: tuple[str, ...],
    window_id: int | None,
    timeout_ms: int | None,
    max_output_bytes: int | None,
    exit_code: bool,
    pretty: bool,
) -> None:
    """Run ARGV (no shell) in the pane's cwd, apart from its terminal: `pane exec 3 -- pytest`.

    The child gets the pane's launch environment (a virtualenv activated inside the pane's
    shell is not seen), stdin from /dev/null, and the last 1 MiB of each stream is kept.
    """
    req = params.pane_exec(
        window_id=window_id,
        pane_id=pane_id,
        argv=argv,
        timeout_ms=timeout_ms,
        max_output_bytes=max_output_bytes,
    )
    exec_call(req, exit_code, pretty)


@pane.command("procs")
@pane_arg
@window_option
@pretty_option
def procs(pane_id: int, window_id: int | None, pretty: bool) -> None:
    """The process tree under the pane's shell (shell first)."""
    call(params.pane_procs(window_id=window_id, pane_id=pane_id), pretty)


@pane.command("screen")
@pane_arg
@window_option
@pretty_option
def screen(pane_id: int, window_id: int | None, pretty: bool) -> None:
    """The visible screen with each cell's colours and attributes, and the cursor."""
    call(params.pane_screen(window_id=window_id, pane_id=pane_id), pretty)
