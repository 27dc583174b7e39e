"""Launch rules for sessions from launch profiles (I4.2, #18): pure checks and expansions.

- **cwd**: it must exist as a directory, and its real path (symlinks and `..` resolved) must
  lie inside the real path of one of the profile's `cwdRoots` (`SESSION_CWD_MISSING`,
  `SESSION_CWD_DENIED`); control characters are refused.
- **Templates** (the policy checked them when it was stored, collab/policy.py): `{cwd}` and
  `{sessionId}` in `argv`, and `{sessionId}`, `{launchArgs}` and `{cwd}` in `resumeArgv`, only
  ever as whole arguments. The command is the profile's `executable` followed by the expanded
  arguments; the runtime types it with each argument quoted on its own (`shlex.join`).
- **Native ids**: `{sessionId}` in a launch `argv` is a fresh UUID Pebrel makes (for CLIs that
  take their session id, such as `claude --session-id`); the id the agent reports must then be
  that one. Any native id must look like one (`native_id_valid`).
- **Hooks**: the kinds whose native id reaches Pebrel through its hook contract need their
  hooks installed (`hooks_missing` says how to install them, else None).
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from pebrel.cli.hook_settings import SettingsError, merge_claude, merge_codex
from pebrel.collab.policy import CWD, LAUNCH_ARGS, SESSION_ID, has_control
from pebrel.collab.refs import Row
from pebrel.errors import CollabCode, CollabError

#: What a native session id may look like (the spec's ids are UUIDs; CLIs use their own).
NATIVE_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
#: The kinds whose native id reaches Pebrel through its hook contract (docs/agents.md).
HOOK_KINDS: Final = ("claude", "codex")


def real_cwd(cwd: str, roots: Sequence[str]) -> str:
    """The real path of ``cwd``, checked against the profile's roots."""
    if not cwd or has_control(cwd) or not os.path.isabs(cwd):
        raise CollabError(
            CollabCode.INVALID_ARGUMENT,
            "cwd must be an absolute path without control characters",
            {"param": "cwd"},
        )
    if not os.path.isdir(cwd):
        raise CollabError(
            CollabCode.SESSION_CWD_MISSING, "cwd is not an existing directory", {"cwd": cwd}
        )
    real = os.path.realpath(cwd)
    for root in roots:
        base = os.path.realpath(root)
        if real == base or real.startswith(base.rstrip("/") + "/"):
            return real
    raise CollabError(
        CollabCode.SESSION_CWD_DENIED,
        "cwd is not inside one of the launch profile's cwdRoots",
        {"cwd": cwd},
    )


def new_native_id(argv: Sequence[str]) -> str | None:
    """A UUID for `{sessionId}` in a launch argv, None without one."""
    return str(uuid.uuid4()) if SESSION_ID in argv else None


def launch_command(
    executable: str, argv: Sequence[str], cwd: str, native_id: str | None
) -> list[str]:
    """The launch command: the executable, then argv with `{cwd}` and `{sessionId}` set."""
    values = {CWD: cwd, SESSION_ID: native_id or ""}
    return [executable, *(values.get(arg, arg) for arg in argv)]


def resume_command(snapshot: Row, native_id: str) -> list[str]:
    """The resume command of a launch snapshot for ``native_id``: the executable, then
    resumeArgv with `{sessionId}` the native id, `{cwd}` the session's cwd and `{launchArgs}`
    the launch's own arguments as they were typed (I4.3: restore keeps argv, model, cwd and
    wrapper)."""
    argv: list[str] = json.loads(snapshot["argv"])
    cwd = str(snapshot["cwd"])
    launched = launch_command("", argv, cwd, snapshot["created_native_id"])[1:]
    out = [str(snapshot["executable"])]
    for arg in json.loads(snapshot["resume_argv"]):
        if arg == LAUNCH_ARGS:
            out.extend(launched)
        else:
            out.append({CWD: cwd, SESSION_ID: native_id}.get(arg, arg))
    return out


def native_id_valid(native: str) -> bool:
    return NATIVE_ID.fullmatch(native) is not None


def hooks_missing(kind: str, cwd: str, home: Path) -> str | None:
    """Why ``kind`` cannot report its native session id to Pebrel (None: it can)."""
    if kind == "claude":
        files = [
            home / ".claude" / "settings.json",
            Path(cwd) / ".claude" / "settings.json",
            Path(cwd) / ".claude" / "settings.local.json",
        ]
        if any(_installed(path, merge_claude) for path in files):
            return None
        return "its hooks are not installed: run `pebrel agent hooks install --kind claude`"
    if kind == "codex":
        codex_home = Path(os.environ.get("CODEX_HOME") or home / ".codex")
        if _installed(codex_home / "config.toml", merge_codex):
            return None
        return "its notify hook is not installed: run `pebrel agent hooks install --kind codex`"
    return f"{kind} has no way to report its native session id to Pebrel (hooks: {HOOK_KINDS})"


def _installed(path: Path, merge: Any) -> bool:
    """Whether the settings file at ``path`` already holds every Pebrel hook (a merge would
    change nothing)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    try:
        changed: bool = merge(text)[1]
    except SettingsError:
        return False
    return not changed
