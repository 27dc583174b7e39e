"""`pebrel pane ...`: resource verbs over pane methods (R8.1, R8.2). Numeric pane ids."""

from __future__ import annotations

from typing import Any

import click

from cli.output import (
    EXIT_UNAVAILABLE,
    Unreachable,
    call,
    emit,
    finish,
    pretty_option,
    prompt_then_wait,
    prune,
    request,
    wait_timeout_s,
    window_option,
)

#: Default timeout of `pane wait` and `pane send --wait` in the CLI: 10 minutes.
CLI_WAIT_TIMEOUT_MS = 600_000
WAIT_STATES = click.Choice(
    ["settled", "idle", "running", "completed", "failed", "attention", "waiting_input"]
)
pane_arg = click.argument("pane_id", type=click.IntRange(min=1))


@click.group()
def pane() -> None:
    """List, read, type into, wait on and run commands in panes."""


@pane.command("list")
@window_option
@pretty_option
def list_panes(window_id: int | None, pretty: bool) -> None:
    """All panes as flat rows (from runtime.snapshot)."""
    import sys

    try:
        envelope = request("runtime.snapshot", {})
    except Unreachable as exc:
        emit(exc.envelope, pretty)
        sys.exit(EXIT_UNAVAILABLE)
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
@click.option("--lines", type=click.IntRange(1, 2000), help="Logical lines (default 120).")
@pretty_option
def read(pane_id: int, window_id: int | None, lines: int | None, pretty: bool) -> None:
    """The last logical lines of a pane."""
    call("pane.read", prune(window_id=window_id, pane_id=pane_id, lines=lines), pretty)


@pane.command("send")
@pane_arg
@click.argument("text")
@window_option
@click.option("--no-submit", is_flag=True, help="Type the text without pressing Enter.")
@click.option(
    "--wait",
    "wait_state",
    is_flag=False,
    flag_value="settled",
    default=None,
    type=WAIT_STATES,
    help="Then wait for STATE (default settled) after this submission.",
)
@click.option("--timeout-ms", type=click.IntRange(min=0), help="Wait timeout (default 600000).")
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
    if no_submit and wait_state is not None:
        raise click.UsageError("--no-submit and --wait contradict each other")
    params = prune(window_id=window_id, pane_id=pane_id, text=text, submit=not no_submit)
    if wait_state is not None and timeout_ms is None:
        timeout_ms = CLI_WAIT_TIMEOUT_MS
    prompt_then_wait(params, wait_state, timeout_ms, pretty)


@pane.command("wait")
@pane_arg
@window_option
@click.option("--state", type=WAIT_STATES, default="settled", show_default=True)
@click.option("--after-seq", type=click.IntRange(min=1), help="Count only later transitions.")
@click.option(
    "--timeout-ms", type=click.IntRange(min=0), default=CLI_WAIT_TIMEOUT_MS, show_default=True
)
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
    params = prune(
        window_id=window_id,
        pane_id=pane_id,
        state=state,
        after_seq=after_seq,
        timeout_ms=timeout_ms,
    )
    call("pane.wait", params, pretty, wait_timeout_s(timeout_ms, CLI_WAIT_TIMEOUT_MS))


@pane.command("run")
@pane_arg
@click.argument("command")
@window_option
@click.option("--no-wait", is_flag=True, help="Return once the command is submitted.")
@click.option("--timeout-ms", type=click.IntRange(min=1), help="Default 600000.")
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
    params = prune(
        window_id=window_id,
        pane_id=pane_id,
        command=command,
        wait=False if no_wait else None,
        timeout_ms=timeout_ms,
    )
    call("pane.run", params, pretty, wait_timeout_s(timeout_ms, 600_000))


@pane.command("split")
@pane_arg
@window_option
@click.option(
    "--direction",
    type=click.Choice(["right", "down", "left_right", "top_bottom"]),
    default="right",
    show_default=True,
)
@click.option("--cwd", help="Working directory of the new pane.")
@click.option("--shell", help="Shell id: bash, zsh, fish, sh or a settings.toml profile.")
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
    params = prune(window_id=window_id, pane_id=pane_id, direction=direction, cwd=cwd, shell=shell)
    call("pane.split", params, pretty)


@pane.command("close")
@pane_arg
@window_option
@click.option("--confirm", is_flag=True, help="Close even if something runs in it.")
@pretty_option
def close(pane_id: int, window_id: int | None, confirm: bool, pretty: bool) -> None:
    """Close a pane (a busy one needs --confirm)."""
    params = prune(window_id=window_id, pane_id=pane_id, confirm=confirm or None)
    call("pane.close", params, pretty)


@pane.command("focus")
@pane_arg
@window_option
@pretty_option
def focus(pane_id: int, window_id: int | None, pretty: bool) -> None:
    """Focus a pane (and its tab and window)."""
    call("window.focus", prune(window_id=window_id, pane_id=pane_id), pretty)
