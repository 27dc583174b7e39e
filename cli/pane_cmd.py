"""`pebrel pane ...`: resource verbs over pane methods (R8.1, R8.2). Numeric pane ids."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from pebrel.cli.lazygroup import LazyGroup
from pebrel.cli.output import (
    CLI_WAIT_TIMEOUT_MS,
    EXIT_UNAVAILABLE,
    Unreachable,
    call,
    check_submit_wait,
    emit,
    finish,
    pretty_option,
    prompt_then_wait,
    prune,
    request,
    wait_timeout_option,
    wait_timeout_s,
    window_option,
)

CommandFunc = TypeVar("CommandFunc", bound=Callable[..., Any])
WAIT_STATES = click.Choice(
    ["settled", "idle", "running", "completed", "failed", "attention", "waiting_input"]
)
pane_arg = click.argument("pane_id", type=click.IntRange(min=1))


def submission_wait_option(help: str | None = None) -> Callable[[CommandFunc], CommandFunc]:
    """``--wait [STATE]``: after a submission, wait for STATE (settled when given bare)."""
    return click.option(
        "--wait",
        "wait_state",
        is_flag=False,
        flag_value="settled",
        default=None,
        type=WAIT_STATES,
        help=help,
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
@wait_option
@wait_timeout_option
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
    params = prune(window_id=window_id, pane_id=pane_id, text=text, submit=not no_submit)
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


KEY_HELP = (
    "KEY: enter, tab, escape, backspace, up, down, left, right, home, end, page_up, page_down, "
    "delete, insert, space, f1-f12, or a letter a-z (letters need --control)."
)


def modifier_options(func: CommandFunc) -> CommandFunc:
    """--control, --alt, --shift and --repeat, shared by `pane key` and `ctl send-key`."""
    func = click.option("--repeat", type=click.IntRange(1, 64), help="Presses (1-64).")(func)
    func = click.option("--shift", is_flag=True, help="Hold shift.")(func)
    func = click.option("--alt", is_flag=True, help="Hold alt (meta).")(func)
    func = click.option("--control", is_flag=True, help="Hold control (ctrl-c: c --control).")(func)
    return func


def key_params(
    window_id: int | None,
    pane_id: int,
    key: str,
    control: bool,
    alt: bool,
    shift: bool,
    repeat: int | None,
) -> dict[str, Any]:
    """pane.send_key params; only the modifiers that were given."""
    held = {"control": control, "alt": alt, "shift": shift}
    modifiers = {name: True for name, on in held.items() if on}
    return prune(
        window_id=window_id, pane_id=pane_id, key=key, modifiers=modifiers or None, repeat=repeat
    )


def read_paste_text(text: str | None, stdin: bool, from_file: str | None) -> str:
    """The paste text from exactly one source; the CLI reads files, never the runtime."""
    import sys

    given = [text is not None, stdin, from_file is not None]
    if sum(given) != 1:
        raise click.UsageError("give exactly one of TEXT, --stdin or --from-file")
    if text is not None:
        return text
    try:
        if stdin:
            raw = sys.stdin.buffer.read()
        else:
            assert from_file is not None
            with open(from_file, "rb") as handle:
                raw = handle.read()
    except OSError as exc:
        raise click.UsageError(f"cannot read {from_file or 'stdin'}: {exc.strerror}") from exc
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise click.UsageError(f"{from_file or 'stdin'} is not valid UTF-8") from exc


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
    call("pane.send_key", key_params(window_id, pane_id, key, control, alt, shift, repeat), pretty)


@pane.command("paste")
@pane_arg
@click.argument("text", required=False)
@window_option
@click.option("--stdin", "from_stdin", is_flag=True, help="Paste what stdin holds.")
@click.option(
    "--from-file",
    type=click.Path(dir_okay=False),
    help="Paste this file's text (read by the CLI).",
)
@click.option("--no-submit", is_flag=True, help="Paste without pressing Enter afterwards.")
@wait_option
@wait_timeout_option
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
    params = prune(window_id=window_id, pane_id=pane_id, text=data, submit=not no_submit)
    prompt_then_wait(params, wait_state, timeout_ms, pretty, method="pane.paste")


# ---- pane exec / pane procs (R6.3, R6.4) -----------------------------------------------------

#: pane.exec's default `timeout_ms` (the runtime applies the same); the socket waits 10 s more.
EXEC_DEFAULT_TIMEOUT_MS = 600_000
#: `--exit-code` statuses of our own (DESIGN "Result shapes"): like timeout(1) and env(1).
EXIT_EXEC_TIMED_OUT = 124
EXIT_EXEC_FAILED = 125

exec_argv = click.argument("argv", nargs=-1, required=True)
exec_timeout_option = click.option(
    "--timeout-ms", type=click.IntRange(min=1), help="Kill the child after this (default 600000)."
)
exec_max_output_option = click.option(
    "--max-output-bytes",
    type=click.IntRange(min=1),
    help="Keep the last N bytes of each stream (default 1 MiB, at most 16 MiB).",
)
exec_exit_code_option = click.option(
    "--exit-code",
    is_flag=True,
    help="Exit with the child's status (124 timed out, 128+N signal N, 125 Pebrel failed).",
)


def exec_exit_status(envelope: dict[str, Any]) -> int:
    """The CLI status for `--exit-code`: the child's own, or 124/128+N/125."""
    if not envelope.get("ok"):
        return EXIT_EXEC_FAILED
    result = envelope["result"]
    if result.get("timed_out"):
        return EXIT_EXEC_TIMED_OUT
    if result.get("signal") is not None:
        return 128 + int(result["signal"])
    code = result.get("exit_code")
    return int(code) if code is not None else EXIT_EXEC_FAILED


def run_exec(
    window_id: int | None,
    pane_id: int,
    argv: tuple[str, ...],
    timeout_ms: int | None,
    max_output_bytes: int | None,
    exit_code: bool,
    pretty: bool,
) -> None:
    """pane.exec: print the envelope; exit 0/1/3, or with the child's status (--exit-code)."""
    import sys

    params = prune(
        window_id=window_id,
        pane_id=pane_id,
        argv=list(argv),
        timeout_ms=timeout_ms,
        max_output_bytes=max_output_bytes,
    )
    timeout_s = wait_timeout_s(timeout_ms, EXEC_DEFAULT_TIMEOUT_MS)
    try:
        envelope = request("pane.exec", params, timeout_s)
    except Unreachable as exc:
        emit(exc.envelope, pretty)
        sys.exit(EXIT_EXEC_FAILED if exit_code else EXIT_UNAVAILABLE)
    if not exit_code:
        finish(envelope, pretty)
    emit(envelope, pretty)
    sys.exit(exec_exit_status(envelope))


@pane.command("exec")
@pane_arg
@exec_argv
@window_option
@exec_timeout_option
@exec_max_output_option
@exec_exit_code_option
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
    run_exec(window_id, pane_id, argv, timeout_ms, max_output_bytes, exit_code, pretty)


@pane.command("procs")
@pane_arg
@window_option
@pretty_option
def procs(pane_id: int, window_id: int | None, pretty: bool) -> None:
    """The process tree under the pane's shell (shell first)."""
    call("pane.procs", prune(window_id=window_id, pane_id=pane_id), pretty)
