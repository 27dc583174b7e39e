"""`pebrel env`: who am I, where is the control plane, what can I run (R7.5, R7.6).

Always succeeds: the environment half needs no runtime, and what is missing is said plainly.
"""

from __future__ import annotations

import os
from typing import Any

import click

from cli.output import emit, pretty_option
from pebrel import PROTOCOL, __version__
from pebrel.client import Client, RuntimeUnavailable
from pebrel.datadir import data_dir
from pebrel.envelope import ok_response


def _env(name: str) -> str | None:
    """PEBREL_<name>, falling back to the legacy NEBULA_<name> (R7.6)."""
    return os.environ.get(f"PEBREL_{name}") or os.environ.get(f"NEBULA_{name}")


def commands(window_id: int, pane_id: int) -> list[dict[str, str]]:
    """Every command with a copy-and-run example, in an order that can be run top to bottom."""
    w, p = window_id, pane_id
    rows = [
        ("env", "who and where am I, is the runtime up", "pebrel env --pretty"),
        ("runtime status", "is a runtime answering", "pebrel runtime status"),
        ("runtime start", "start the runtime (idempotent)", "pebrel runtime start"),
        ("pane list", "all panes as flat rows", "pebrel pane list"),
        (
            "pane read",
            "last logical lines of a pane",
            f"pebrel pane read {p} --window {w} --lines 40",
        ),
        (
            "pane send",
            "type a line, press Enter, wait until it settles",
            f'pebrel pane send {p} --window {w} "echo hello from pebrel" --wait',
        ),
        (
            "pane wait",
            "wait for a task state (use --after-seq from a previous answer)",
            f"pebrel pane wait {p} --window {w} --state settled --timeout-ms 5000",
        ),
        (
            "pane run",
            "run a command, get its real exit code",
            f'pebrel pane run {p} --window {w} "ls"',
        ),
        (
            "ctl describe",
            "versions, methods, features, env contract",
            "pebrel ctl describe --pretty",
        ),
        ("ctl snapshot", "windows, tabs, panes, states", "pebrel ctl snapshot --pretty"),
        ("ctl read", "pane.read", f"pebrel ctl read --window {w} --pane {p} --lines 120"),
        ("ctl run", "pane.run", f'pebrel ctl run --window {w} --pane {p} --command "true"'),
        (
            "ctl prompt",
            "pane.prompt, then wait from the post-submit baseline",
            f'pebrel ctl prompt --window {w} --pane {p} --text "echo done" --wait settled',
        ),
        (
            "ctl wait",
            "pane.wait",
            f"pebrel ctl wait --window {w} --pane {p} --state settled --timeout-ms 5000",
        ),
        ("ctl focus", "focus a window or pane", f"pebrel ctl focus --window {w} --pane {p}"),
        ("ctl new-tab", "open a tab", f"pebrel ctl new-tab --window {w}"),
        ("ctl split", "split the focused pane", f"pebrel ctl split --window {w} --direction right"),
        (
            "pane split",
            "split a given pane",
            f"pebrel pane split {p} --window {w} --direction down",
        ),
        ("pane focus", "focus a pane", f"pebrel pane focus {p} --window {w}"),
        ("tab new", "open a tab", f"pebrel tab new --window {w}"),
        ("tab close", "close an idle tab by index", f"pebrel tab close 2 --window {w}"),
        ("window create", "open a window", "pebrel window create"),
        ("window focus", "focus a window", f"pebrel window focus {w}"),
        (
            "pane close",
            "close an idle pane (busy needs --confirm)",
            f"pebrel pane close 2 --window {w}",
        ),
        ("window close", "close an idle window", f"pebrel window close {w + 1}"),
        ("runtime stop", "stop the runtime and everything it started", "pebrel runtime stop"),
    ]
    return [{"command": c, "description": d, "example": e} for c, d, e in rows]


@click.command()
@pretty_option
def env(pretty: bool) -> None:
    """Describe this pane's identity, the runtime's reachability and every command."""
    window = _env("WINDOW_ID")
    pane = _env("PANE_ID")
    cli_path = _env("CLI")
    missing: list[str] = []
    in_pane = os.environ.get("TERM_PROGRAM") in ("pebrel", "nebula") and pane is not None
    if not in_pane:
        missing.append("not inside a Pebrel pane (no PEBREL_PANE_ID / TERM_PROGRAM=pebrel)")
    elif window is None:
        missing.append("PEBREL_WINDOW_ID is not set (pane ids are only unique within a window)")
    runtime: dict[str, Any] = {"reachable": False, "data_dir": str(data_dir())}
    try:
        with Client(timeout_s=3) as client:
            answer = client.ping()
            runtime.update(
                reachable=answer.startswith("PONG"),
                pid=client.info.pid,
                port=client.info.port,
                runtime_id=client.info.runtime_id,
                version=client.info.version,
            )
    except (RuntimeUnavailable, OSError) as exc:
        runtime["problem"] = str(exc)
        missing.append(f"no runtime reachable: {exc}")
    w = int(window) if window and window.isdigit() else 1
    p = int(pane) if pane and pane.isdigit() else 1
    result = {
        "in_pebrel_pane": in_pane,
        "window_id": int(window) if window and window.isdigit() else None,
        "pane_id": int(pane) if pane and pane.isdigit() else None,
        "remote": _env("PANE_REMOTE") == "1",
        "cli": cli_path,
        "bin_dir": _env("BIN_DIR"),
        "term_program": os.environ.get("TERM_PROGRAM"),
        "cli_version": __version__,
        "protocol": PROTOCOL,
        "runtime": runtime,
        "missing": missing,
        "commands": commands(w, p),
    }
    emit(ok_response(None, result), pretty)
