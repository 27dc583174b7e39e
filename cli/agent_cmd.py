"""`pebrel agent ...`: named agents by generation (R8.1, R8.2, R9.2-R9.4, R9.7), and hook settings.

Agent verbs take an agent's name or its stable `agent_id`; they call the agent.* methods, which
refuse an old generation (`agent_exited`, `agent_replaced`) rather than deliver to a new session.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from pebrel.cli import agent_params
from pebrel.cli.options import (
    AFTER_SEQ_HELP,
    FROM_FILE_HELP,
    LINES_HELP,
    STDIN_HELP,
    SUBMISSION_TIMEOUT_HELP,
    after_seq_option,
    check_submit_wait,
    cwd_option,
    generation_option,
    lines_option,
    list_window_option,
    no_submit_option,
    pane_option,
    paste_source_options,
    pretty_option,
    read_paste_text,
    ready_timeout_option,
    screen_option,
    submission_timeout_option,
    submission_wait_option,
    wait_state_option,
    wait_timeout_option,
    window_option,
)
from pebrel.cli.output import (
    EXIT_ERROR,
    EXIT_OK,
    call,
    emit,
    refuse_remote_agent_paste,
    submit_then_wait,
)
from pebrel.model import READY_DEFAULT_TIMEOUT_MS

agent_arg = click.argument("agent")
GENERATION_HELP = (
    "Refuse unless the agent is still this generation (agent_exited / agent_replaced)."
)
wait_option = submission_wait_option(
    "Then wait for STATE (default settled: the turn ended) after this submission."
)


@click.group()
def agent() -> None:
    """Start, list, prompt, read and wait on named AI agents (names or agent ids)."""


@agent.command("list")
@list_window_option
@pretty_option
def list_agents(window_id: int | None, pretty: bool) -> None:
    """Panes where a known AI CLI runs, with identity, state and evidence source."""
    call(agent_params.agents_list(window_id=window_id), pretty)


@agent.command("start")
@click.argument("name")
@click.option("--kind", required=True, help="claude, codex, opencode, cursor, pi, omp or kimi.")
@window_option
@pane_option(help="Start in this idle pane (default: new tab).")
@cwd_option("Working directory of the agent (default: the new tab's).")
@click.option("--resume", "resume_session_id", help="Resume this provider session id.")
@ready_timeout_option(
    f"Fail with agent_ready_timeout after this (default {READY_DEFAULT_TIMEOUT_MS})."
)
@pretty_option
def start(
    name: str,
    kind: str,
    window_id: int | None,
    pane_id: int | None,
    cwd: str | None,
    resume_session_id: str | None,
    ready_timeout_ms: int | None,
    pretty: bool,
) -> None:
    """Start a named agent NAME of --kind and wait until it is ready."""
    req = agent_params.agent_start(
        name=name,
        kind=kind,
        window_id=window_id,
        pane_id=pane_id,
        cwd=cwd,
        resume_session_id=resume_session_id,
        ready_timeout_ms=ready_timeout_ms,
    )
    call(req, pretty)


@agent.command("launch")
@click.argument("name")
@click.argument("argv", nargs=-1, required=True)
@click.option("--kind", required=True, help="claude, codex, opencode, cursor, pi, omp or kimi.")
@click.option("--cwd", required=True, help="The directory to start in.")
@window_option
@pane_option(help="Type it in this pane, alone in its window (default: a new window).")
@click.option("--shell-pid", type=int, help="Refuse unless the pane still runs this shell.")
@pretty_option
def launch(
    name: str,
    argv: tuple[str, ...],
    kind: str,
    cwd: str,
    window_id: int | None,
    pane_id: int | None,
    shell_pid: int | None,
    pretty: bool,
) -> None:
    """Type ARGV (quoted one by one) as named agent NAME into an idle shell of its own.

    Answers once the line is typed; `agent get` and `agent wait` tell whether it came up.
    Put `--` before ARGV when it holds options."""
    req = agent_params.agent_launch(
        name=name,
        kind=kind,
        argv=list(argv),
        cwd=cwd,
        window_id=window_id,
        pane_id=pane_id,
        shell_pid=shell_pid,
    )
    call(req, pretty)


@agent.command("send")
@agent_arg
@click.argument("text")
@generation_option(help=GENERATION_HELP)
@no_submit_option("Type the text without pressing Enter.")
@wait_option
@submission_timeout_option(SUBMISSION_TIMEOUT_HELP)
@pretty_option
def send(
    agent: str,
    text: str,
    generation: int | None,
    no_submit: bool,
    wait_state: str | None,
    timeout_ms: int | None,
    pretty: bool,
) -> None:
    """Type one prompt line to AGENT; with --wait, return when that turn ends."""
    check_submit_wait(no_submit, wait_state)
    req = agent_params.agent_prompt(
        agent=agent, generation=generation, text=text, submit=not no_submit
    )
    submit_then_wait(req, wait_state, timeout_ms, pretty, agent_params.agent_wait_after)


@agent.command("paste")
@agent_arg
@click.argument("text", required=False)
@paste_source_options(STDIN_HELP, FROM_FILE_HELP)
@generation_option(help=GENERATION_HELP)
@no_submit_option("Paste without pressing Enter afterwards.")
@wait_option
@submission_timeout_option(SUBMISSION_TIMEOUT_HELP)
@pretty_option
def paste(
    agent: str,
    text: str | None,
    from_stdin: bool,
    from_file: str | None,
    generation: int | None,
    no_submit: bool,
    wait_state: str | None,
    timeout_ms: int | None,
    pretty: bool,
) -> None:
    """Bracketed paste of multi-line text to AGENT; with --wait, return when that turn ends."""
    check_submit_wait(no_submit, wait_state)
    data = read_paste_text(text, from_stdin, from_file)
    if from_stdin or from_file is not None:
        refuse_remote_agent_paste(agent, "--stdin" if from_stdin else "--from-file", pretty)
    req = agent_params.agent_paste(
        agent=agent, generation=generation, text=data, submit=not no_submit
    )
    submit_then_wait(req, wait_state, timeout_ms, pretty, agent_params.agent_wait_after)


@agent.command("read")
@agent_arg
@generation_option(help=GENERATION_HELP)
@lines_option(LINES_HELP)
@screen_option
@pretty_option
def read(agent: str, generation: int | None, lines: int | None, screen: bool, pretty: bool) -> None:
    """The last lines of AGENT's pane, or (--screen) its visible screen."""
    req = agent_params.agent_read(agent=agent, generation=generation, lines=lines, screen=screen)
    call(req, pretty)


@agent.command("delegate")
@agent_arg
@click.argument("text")
@generation_option(help=GENERATION_HELP)
@pretty_option
def delegate(agent: str, text: str, generation: int | None, pretty: bool) -> None:
    """Give AGENT a task; its final message comes back to the calling agent by itself.

    Run it inside an agent's pane: the origin is PEBREL_WINDOW_ID / PEBREL_PANE_ID. Returns as
    soon as the task is registered and submitted.
    """
    window = os.environ.get("PEBREL_WINDOW_ID") or os.environ.get("NEBULA_WINDOW_ID")
    pane = os.environ.get("PEBREL_PANE_ID") or os.environ.get("NEBULA_PANE_ID")
    if not (window and window.isdigit() and pane and pane.isdigit()):
        raise click.UsageError(
            "agent delegate must run inside an agent's Pebrel pane "
            "(PEBREL_WINDOW_ID and PEBREL_PANE_ID are not set)"
        )
    req = agent_params.agent_delegate(
        agent=agent,
        generation=generation,
        text=text,
        origin_window_id=int(window),
        origin_pane_id=int(pane),
    )
    call(req, pretty)


@agent.command("get")
@agent_arg
@generation_option(help=GENERATION_HELP)
@pretty_option
def get(agent: str, generation: int | None, pretty: bool) -> None:
    """AGENT's id, generation, pane, state and last message."""
    call(agent_params.agent_get(agent=agent, generation=generation), pretty)


@agent.command("wait")
@agent_arg
@generation_option(
    help="This generation (default: the one current at --after-seq, else the current one; "
    "agent_replaced if it is no longer current)."
)
@wait_state_option
@after_seq_option(AFTER_SEQ_HELP)
@wait_timeout_option
@pretty_option
def wait(
    agent: str,
    generation: int | None,
    state: str,
    after_seq: int | None,
    timeout_ms: int,
    pretty: bool,
) -> None:
    """Wait until this generation of AGENT reaches a state (after --after-seq)."""
    req = agent_params.agent_wait(
        agent=agent, generation=generation, state=state, after_seq=after_seq, timeout_ms=timeout_ms
    )
    call(req, pretty)


@agent.group("hooks")
def hooks() -> None:
    """Hook settings that make Claude Code and Codex report their state to Pebrel."""


def default_settings_path(kind: str) -> Path:
    home = Path.home()
    return (
        home / ".claude" / "settings.json" if kind == "claude" else home / ".codex" / "config.toml"
    )


@hooks.command("install")
@click.option("--kind", type=click.Choice(["claude", "codex"]), required=True)
@click.option("--print", "print_only", is_flag=True, help="Print the snippet; change nothing.")
@click.option(
    "--settings",
    "settings_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Settings file (default ~/.claude/settings.json or ~/.codex/config.toml).",
)
@pretty_option
def install(kind: str, print_only: bool, settings_path: Path | None, pretty: bool) -> None:
    """Merge Pebrel's hooks into the user's settings (idempotent, with a backup)."""
    from pebrel.cli import hook_settings as hs
    from pebrel.envelope import error_response, ok_response
    from pebrel.errors import ErrorCode, PebrelError

    if print_only:
        click.echo(
            hs.claude_snippet_text() if kind == "claude" else hs.codex_notify_line(),
            nl=kind != "claude",
        )
        sys.exit(EXIT_OK)
    path = settings_path or default_settings_path(kind)
    merge = hs.merge_claude if kind == "claude" else hs.merge_codex
    try:
        existing = path.read_text(encoding="utf-8") if path.exists() else None
        text, changed = merge(existing)
        backup = hs.write_with_backup(path, text) if changed else None
    except (hs.SettingsError, OSError, UnicodeDecodeError) as exc:
        error = PebrelError(ErrorCode.ACTION_FAILED, f"{path}: {exc}", {"path": str(path)})
        emit(error_response(None, error), pretty)
        sys.exit(EXIT_ERROR)
    result = {
        "kind": kind,
        "path": str(path),
        "changed": changed,
        "backup": str(backup) if backup else None,
    }
    emit(ok_response(None, result), pretty)
    sys.exit(EXIT_OK)
