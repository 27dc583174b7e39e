"""`pebrel agent ...`: named agents by generation (R8.1, R8.2, R9.2-R9.4, R9.7), and hook settings.

Agent verbs take an agent's name or its stable `agent_id`; they call the agent.* methods, which
refuse an old generation (`agent_exited`, `agent_replaced`) rather than deliver to a new session.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from pebrel.cli.output import (
    CLI_WAIT_TIMEOUT_MS,
    EXIT_ERROR,
    EXIT_OK,
    call,
    check_submit_wait,
    emit,
    pretty_option,
    prune,
    submit_then_wait,
    wait_timeout_option,
    wait_timeout_s,
    window_option,
)
from pebrel.cli.pane_cmd import WAIT_STATES, read_paste_text, submission_wait_option

#: agent.start's default `ready_timeout_ms` (the runtime applies the same).
READY_DEFAULT_TIMEOUT_MS = 60_000
agent_arg = click.argument("agent")
generation_option = click.option(
    "--generation",
    type=click.IntRange(min=1),
    help="Refuse unless the agent is still this generation (agent_exited / agent_replaced).",
)
wait_option = submission_wait_option(
    "Then wait for STATE (default settled: the turn ended) after this submission."
)


def deliver_then_wait(
    method: str,
    params: dict[str, Any],
    state: str | None,
    timeout_ms: int | None,
    pretty: bool,
) -> NoReturn:
    """agent.prompt or agent.paste; with a state, agent.wait on that generation from its seq.

    The wait envelope is printed; its result carries `last_message`, the final message a stop
    hook supplied.
    """

    def generation_of(result: dict[str, Any]) -> dict[str, Any]:
        return {
            "agent": result.get("agent_id") or params["agent"],
            "generation": result["generation"],
        }

    submit_then_wait(method, params, state, timeout_ms, pretty, "agent.wait", generation_of)


@click.group()
def agent() -> None:
    """Start, list, prompt, read and wait on named AI agents (names or agent ids)."""


@agent.command("list")
@window_option
@pretty_option
def list_agents(window_id: int | None, pretty: bool) -> None:
    """Panes where a known AI CLI runs, with identity, state and evidence source."""
    call("agents.list", prune(window_id=window_id), pretty)


@agent.command("start")
@click.argument("name")
@click.option("--kind", required=True, help="claude, codex, opencode, cursor, pi, omp or kimi.")
@window_option
@click.option(
    "--pane",
    "pane_id",
    type=click.IntRange(min=1),
    help="Start in this idle pane (default: new tab).",
)
@click.option("--cwd", help="Working directory of the agent (default: the new tab's).")
@click.option("--resume", "resume_session_id", help="Resume this provider session id.")
@click.option(
    "--ready-timeout-ms",
    type=click.IntRange(1, 3_600_000),
    help="Fail with agent_ready_timeout after this (default 60000).",
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
    params = prune(
        name=name,
        kind=kind,
        window_id=window_id,
        pane_id=pane_id,
        cwd=os.path.abspath(cwd) if cwd is not None else None,
        resume_session_id=resume_session_id,
        ready_timeout_ms=ready_timeout_ms,
    )
    call("agent.start", params, pretty, wait_timeout_s(ready_timeout_ms, READY_DEFAULT_TIMEOUT_MS))


@agent.command("send")
@agent_arg
@click.argument("text")
@generation_option
@click.option("--no-submit", is_flag=True, help="Type the text without pressing Enter.")
@wait_option
@wait_timeout_option
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
    params = prune(agent=agent, generation=generation, text=text, submit=not no_submit)
    deliver_then_wait("agent.prompt", params, wait_state, timeout_ms, pretty)


@agent.command("paste")
@agent_arg
@click.argument("text", required=False)
@click.option("--stdin", "from_stdin", is_flag=True, help="Paste what stdin holds.")
@click.option(
    "--from-file", type=click.Path(dir_okay=False), help="Paste this file's text (read by the CLI)."
)
@generation_option
@click.option("--no-submit", is_flag=True, help="Paste without pressing Enter afterwards.")
@wait_option
@wait_timeout_option
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
    params = prune(agent=agent, generation=generation, text=data, submit=not no_submit)
    deliver_then_wait("agent.paste", params, wait_state, timeout_ms, pretty)


@agent.command("read")
@agent_arg
@generation_option
@click.option("--lines", type=click.IntRange(1, 2000), help="Logical lines (default 120).")
@pretty_option
def read(agent: str, generation: int | None, lines: int | None, pretty: bool) -> None:
    """The last lines of AGENT's pane."""
    call("agent.read", prune(agent=agent, generation=generation, lines=lines), pretty)


@agent.command("delegate")
@agent_arg
@click.argument("text")
@generation_option
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
    params = prune(
        agent=agent,
        generation=generation,
        text=text,
        origin_window_id=int(window),
        origin_pane_id=int(pane),
    )
    call("agent.delegate", params, pretty)


@agent.command("get")
@agent_arg
@generation_option
@pretty_option
def get(agent: str, generation: int | None, pretty: bool) -> None:
    """AGENT's id, generation, pane, state and last message."""
    call("agent.get", prune(agent=agent, generation=generation), pretty)


@agent.command("wait")
@agent_arg
@click.option("--generation", type=click.IntRange(min=1), required=True)
@click.option("--state", type=WAIT_STATES, default="settled", show_default=True)
@click.option("--after-seq", type=click.IntRange(min=1), help="Count only later transitions.")
@click.option(
    "--timeout-ms", type=click.IntRange(min=0), default=CLI_WAIT_TIMEOUT_MS, show_default=True
)
@pretty_option
def wait(
    agent: str,
    generation: int,
    state: str,
    after_seq: int | None,
    timeout_ms: int,
    pretty: bool,
) -> None:
    """Wait until this generation of AGENT reaches a state."""
    params = prune(
        agent=agent, generation=generation, state=state, after_seq=after_seq, timeout_ms=timeout_ms
    )
    call("agent.wait", params, pretty, wait_timeout_s(timeout_ms, CLI_WAIT_TIMEOUT_MS))


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
