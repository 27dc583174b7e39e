"""The click options and arguments that more than one command takes, each declared once.

A `pebrel ctl` verb and the resource verb over the same method share each option's name, type,
range and default. The resource verbs document their options; most ctl verbs print the bare
option list, so an option that both take gets its help text from the caller (`help=None` for
ctl). Limits and defaults come from `pebrel.model`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from pebrel.model import (
    CLI_WAIT_TIMEOUT_MS,
    EXEC_DEFAULT_MAX_OUTPUT_BYTES,
    EXEC_DEFAULT_TIMEOUT_MS,
    EXEC_MAX_OUTPUT_BYTES,
    MAX_KEY_REPEAT,
    MAX_READY_TIMEOUT_MS,
    MAX_TAB_COLS,
    MAX_TAB_ROWS,
    MIN_TAB_COLS,
    READ_DEFAULT_LINES,
    READ_MAX_LINES,
    RUN_DEFAULT_TIMEOUT_MS,
)

CommandFunc = TypeVar("CommandFunc", bound=Callable[..., Any])

#: Ids (window, pane, generation, seq) count from 1; tab indexes from 0.
ID = click.IntRange(min=1)
INDEX = click.IntRange(min=0)
#: `pane.wait` targets (pebrel.model.WAIT_TARGETS) in the order the help lists them.
WAIT_STATES = click.Choice(
    ["settled", "idle", "running", "completed", "failed", "attention", "waiting_input"]
)
#: Split directions (pebrel.model.DIRECTIONS) in the order the help lists them.
DIRECTION_WORDS = click.Choice(["right", "down", "left_right", "top_bottom"])
WINDOW_ENV = ["PEBREL_WINDOW_ID", "NEBULA_WINDOW_ID"]

LINES_HELP = f"Logical lines (default {READ_DEFAULT_LINES})."
SHELL_HELP = "Shell id: bash, zsh, fish, sh or a settings.toml profile."
SUBMISSION_TIMEOUT_HELP = f"Wait timeout (default {CLI_WAIT_TIMEOUT_MS})."
AFTER_SEQ_HELP = "Count only later transitions."
STDIN_HELP = "Paste what stdin holds."
FROM_FILE_HELP = "Paste this file's text (read by the CLI)."
KEY_HELP = (
    "KEY: enter, tab, escape, backspace, up, down, left, right, home, end, page_up, page_down, "
    "delete, insert, space, f1-f12, or a letter a-z (letters need --control)."
)

# ---- targets -----------------------------------------------------------------------------------

pretty_option = click.option("--pretty", is_flag=True, help="Indent the JSON output.")
window_option = click.option(
    "--window",
    "window_id",
    type=ID,
    envvar=WINDOW_ENV,
    show_envvar=True,
    help="Window of the pane (default: the calling pane's window, PEBREL_WINDOW_ID).",
)
#: `--window` of the listing verbs (`pane list`, `agent list`, `ctl agents`): they show every
#: window's panes, inside a pane too; only an explicit --window narrows them (R8.1).
list_window_option = click.option(
    "--window",
    "window_id",
    type=ID,
    help="Only this window's panes (default: every window's, even inside a pane).",
)
pane_arg = click.argument("pane_id", type=ID)
tab_index_arg = click.argument("tab_index", type=INDEX)
window_arg = click.argument("window_id", type=ID)


def pane_option(
    required: bool = False, help: str | None = None
) -> Callable[[CommandFunc], CommandFunc]:
    """``--pane ID``: the ctl verbs' pane (and `window focus`'s)."""
    return click.option("--pane", "pane_id", type=ID, required=required, help=help)


# ---- layout ------------------------------------------------------------------------------------

confirm_option = click.option("--confirm", is_flag=True, help="Close even if something runs in it.")


def absolute_cwd(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A `--cwd` made absolute against the CLI's own directory: the runtime runs elsewhere, so
    a relative path would name another directory there (or be refused). An empty value is
    passed on as given, for the runtime to refuse. For an SSH shell (`--shell`, processed
    first) the directory is on the remote host: passed on as given (R11.1)."""
    if value and remote_shell(ctx.params.get("shell")):
        return value
    return os.path.abspath(value) if value else value


def remote_shell(shell: str | None) -> bool:
    """Whether a shell id names an SSH pane: ``ssh:...``, or an ssh profile of settings.toml."""
    from pebrel.datadir import data_dir
    from pebrel.settings import SettingsError, load_settings
    from pebrel.shellids import SSH_PREFIX

    if not shell:
        return False
    if shell.startswith(SSH_PREFIX):
        return True
    try:
        profile = load_settings(data_dir()).profiles.get(shell)
    except (SettingsError, OSError):
        return False  # the runtime says what is wrong with its settings
    return profile is not None and profile.ssh is not None


def cwd_option(help: str | None = None) -> Callable[[CommandFunc], CommandFunc]:
    """``--cwd DIR`` of a new window, tab, pane or agent, made absolute by the CLI."""
    return click.option("--cwd", callback=absolute_cwd, help=help)


def shell_option(help: str | None = None) -> Callable[[CommandFunc], CommandFunc]:
    # Eager: --cwd's callback needs it (an SSH shell's --cwd is a remote directory).
    return click.option("--shell", is_eager=True, help=help)


def direction_option(required: bool) -> Callable[[CommandFunc], CommandFunc]:
    """``--direction``: required by `ctl split`, `right` by default for `pane split`."""
    if required:
        return click.option("--direction", type=DIRECTION_WORDS, required=True)
    return click.option("--direction", type=DIRECTION_WORDS, default="right", show_default=True)


def size_options(command: CommandFunc) -> CommandFunc:
    """--cols/--rows of a new tab or window (headless default 200x50)."""
    command = click.option(
        "--rows", type=click.IntRange(1, MAX_TAB_ROWS), help="Tab height in cells."
    )(command)
    return click.option(
        "--cols", type=click.IntRange(MIN_TAB_COLS, MAX_TAB_COLS), help="Tab width in cells."
    )(command)


# ---- reading and waiting -----------------------------------------------------------------------


def lines_option(help: str | None = None) -> Callable[[CommandFunc], CommandFunc]:
    return click.option("--lines", type=click.IntRange(1, READ_MAX_LINES), help=help)


screen_option = click.option(
    "--screen",
    is_flag=True,
    help="Read the visible screen row by row (one `lines` entry per row, `screen` cell by "
    "cell, `cursor`) instead of logical lines; not with --lines.",
)


wait_state_option = click.option("--state", type=WAIT_STATES, default="settled", show_default=True)
wait_timeout_option = click.option(
    "--timeout-ms", type=INDEX, default=CLI_WAIT_TIMEOUT_MS, show_default=True
)


def after_seq_option(help: str | None = None) -> Callable[[CommandFunc], CommandFunc]:
    return click.option("--after-seq", type=ID, help=help)


def generation_option(
    required: bool = False, help: str | None = None
) -> Callable[[CommandFunc], CommandFunc]:
    return click.option("--generation", type=ID, required=required, help=help)


def ready_timeout_option(help: str | None = None) -> Callable[[CommandFunc], CommandFunc]:
    return click.option(
        "--ready-timeout-ms", type=click.IntRange(1, MAX_READY_TIMEOUT_MS), help=help
    )


# ---- submissions (prompt, paste, key) -----------------------------------------------------------


def no_submit_option(help: str | None = None) -> Callable[[CommandFunc], CommandFunc]:
    return click.option("--no-submit", is_flag=True, help=help)


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


def submission_timeout_option(help: str | None = None) -> Callable[[CommandFunc], CommandFunc]:
    """``--timeout-ms`` of a submission's ``--wait`` (default CLI_WAIT_TIMEOUT_MS)."""
    return click.option("--timeout-ms", type=INDEX, help=help)


def check_submit_wait(no_submit: bool, wait_state: str | None) -> None:
    """Refuse --no-submit with --wait: without a submission there is no turn to wait for."""
    if no_submit and wait_state is not None:
        raise click.UsageError("--no-submit and --wait contradict each other")


def paste_source_options(
    stdin_help: str | None = None, from_file_help: str | None = None
) -> Callable[[CommandFunc], CommandFunc]:
    """``--stdin`` and ``--from-file``: where a paste's text comes from besides TEXT."""

    def add(command: CommandFunc) -> CommandFunc:
        command = click.option("--from-file", type=click.Path(dir_okay=False), help=from_file_help)(
            command
        )
        return click.option("--stdin", "from_stdin", is_flag=True, help=stdin_help)(command)

    return add


def read_text_source(source: str, *, dash_is_stdin: bool = True) -> str:
    """UTF-8 text from a file, or from stdin when ``source`` is "-" and ``dash_is_stdin``
    (the CLI reads files, never the runtime); a usage error naming the source when it cannot.
    """
    import sys

    from_stdin = source == "-" and dash_is_stdin
    name = "stdin" if from_stdin else source
    try:
        if from_stdin:
            raw = sys.stdin.buffer.read()
        else:
            with open(source, "rb") as handle:
                raw = handle.read()
    except OSError as exc:
        raise click.UsageError(f"cannot read {name}: {exc.strerror}") from exc
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise click.UsageError(f"{name} is not valid UTF-8") from exc


def read_paste_text(text: str | None, stdin: bool, from_file: str | None) -> str:
    """The paste text from exactly one source; the CLI reads files, never the runtime."""
    given = [text is not None, stdin, from_file is not None]
    if sum(given) != 1:
        raise click.UsageError("give exactly one of TEXT, --stdin or --from-file")
    if text is not None:
        return text
    if stdin or from_file is None:
        return read_text_source("-")
    return read_text_source(from_file, dash_is_stdin=False)  # --from-file - is a file "-"


def modifier_options(func: CommandFunc) -> CommandFunc:
    """--control, --alt, --shift and --repeat, shared by `pane key` and `ctl send-key`."""
    func = click.option(
        "--repeat", type=click.IntRange(1, MAX_KEY_REPEAT), help=f"Presses (1-{MAX_KEY_REPEAT})."
    )(func)
    func = click.option("--shift", is_flag=True, help="Hold shift.")(func)
    func = click.option("--alt", is_flag=True, help="Hold alt (meta).")(func)
    func = click.option("--control", is_flag=True, help="Hold control (ctrl-c: c --control).")(func)
    return func


# ---- run and exec ------------------------------------------------------------------------------


def no_wait_option(help: str | None = None) -> Callable[[CommandFunc], CommandFunc]:
    return click.option("--no-wait", is_flag=True, help=help)


def timeout_option(help: str | None = None) -> Callable[[CommandFunc], CommandFunc]:
    """``--timeout-ms`` of `pane.run` and `pane.exec` (at least 1)."""
    return click.option("--timeout-ms", type=ID, help=help)


RUN_TIMEOUT_HELP = f"Default {RUN_DEFAULT_TIMEOUT_MS}."
exec_argv = click.argument("argv", nargs=-1, required=True)
EXEC_TIMEOUT_HELP = f"Kill the child after this (default {EXEC_DEFAULT_TIMEOUT_MS})."
EXEC_MAX_OUTPUT_HELP = (
    f"Keep the last N bytes of each stream (default {EXEC_DEFAULT_MAX_OUTPUT_BYTES >> 20} MiB, "
    f"at most {EXEC_MAX_OUTPUT_BYTES >> 20} MiB)."
)


def max_output_option(help: str | None = None) -> Callable[[CommandFunc], CommandFunc]:
    return click.option("--max-output-bytes", type=ID, help=help)


def exit_code_option(help: str) -> Callable[[CommandFunc], CommandFunc]:
    return click.option("--exit-code", is_flag=True, help=help)
