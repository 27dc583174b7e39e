"""Hook settings for Claude Code and Codex: the snippets, and merges that never lose user data.

The merge functions are pure (text in, text out); `write_with_backup` is the only I/O. A merge
adds only what is missing, so running it twice changes nothing, and it refuses (SettingsError)
rather than overwrite something it does not own.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import tomllib
from pathlib import Path
from typing import Any

#: Claude Code hook event -> (matcher or None, Pebrel hook event).
CLAUDE_EVENTS: tuple[tuple[str, str | None, str], ...] = (
    ("SessionStart", None, "start"),
    ("UserPromptSubmit", None, "prompt"),
    ("Stop", None, "stop"),
    ("PermissionRequest", None, "attention"),
    ("Notification", "elicitation_dialog", "waiting-input"),
    ("SessionEnd", None, "end"),
)
BACKUP_SUFFIX = ".pebrel-backup"


class SettingsError(Exception):
    """The existing settings cannot be merged safely; the message says why."""


def claude_command(event: str) -> str:
    """A hook command that is a no-op outside Pebrel and always succeeds (stdin carries JSON)."""
    return f'[ -n "$PEBREL_CLI" ] && "$PEBREL_CLI" hook {event} --kind claude || true'


def claude_entry(matcher: str | None, event: str) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    if matcher is not None:
        entry["matcher"] = matcher
    entry["hooks"] = [{"type": "command", "command": claude_command(event)}]
    return entry


def claude_snippet() -> dict[str, Any]:
    """The `hooks` block for ~/.claude/settings.json."""
    return {
        "hooks": {name: [claude_entry(matcher, event)] for name, matcher, event in CLAUDE_EVENTS}
    }


def claude_snippet_text() -> str:
    return json.dumps(claude_snippet(), indent=2) + "\n"


def _is_ours(entry: Any, event: str) -> bool:
    """An entry of a hook event list that already runs `pebrel hook <event> --kind claude`."""
    if not isinstance(entry, dict):
        return False
    hooks = entry.get("hooks")
    if not isinstance(hooks, list):
        return False
    needle = f"hook {event} --kind claude"
    return any(
        isinstance(h, dict) and isinstance(h.get("command"), str) and needle in h["command"]
        for h in hooks
    )


def merge_claude(existing: str | None) -> tuple[str, bool]:
    """Merge our hooks into settings.json text (None: no file). Returns (text, changed)."""
    if existing is None or not existing.strip():
        settings: Any = {}
    else:
        try:
            settings = json.loads(existing)
        except ValueError as exc:
            raise SettingsError(f"the existing settings are not valid JSON ({exc})") from exc
    if not isinstance(settings, dict):
        raise SettingsError("the existing settings are not a JSON object")
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise SettingsError('the existing "hooks" value is not a JSON object')
    changed = False
    for name, matcher, event in CLAUDE_EVENTS:
        entries = hooks.setdefault(name, [])
        if not isinstance(entries, list):
            raise SettingsError(f'the existing "hooks.{name}" value is not a JSON array')
        if any(_is_ours(entry, event) for entry in entries):
            continue
        entries.append(claude_entry(matcher, event))
        changed = True
    if not changed and existing is not None and existing.strip():
        return existing, False
    return json.dumps(settings, indent=2, ensure_ascii=False) + "\n", True


CODEX_SCRIPT = '[ -n "$PEBREL_CLI" ] && "$PEBREL_CLI" hook stop --kind codex "$1" || true'
#: Codex runs notify's argv with its JSON appended: sh -c SCRIPT pebrel-hook JSON ($1).
CODEX_NOTIFY = ["sh", "-c", CODEX_SCRIPT, "pebrel-hook"]
_HEADER = re.compile(r"^[ \t]*\[")


def codex_notify_line() -> str:
    return "notify = " + json.dumps(CODEX_NOTIFY, ensure_ascii=False)


def merge_codex(existing: str | None) -> tuple[str, bool]:
    """Add our top-level `notify` to config.toml text (None: no file). Returns (text, changed).

    No-op when it is already ours; SettingsError when the user has another `notify` (never
    overwritten) or the file is not valid TOML. The line goes before the first table header so
    it stays top-level; every candidate position is checked by parsing the result.
    """
    text = existing or ""
    try:
        current = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"the existing config is not valid TOML ({exc})") from exc
    if "notify" in current:
        if current["notify"] == CODEX_NOTIFY:
            return text, False
        raise SettingsError(
            "the config already has a different top-level `notify`; Pebrel will not overwrite "
            "it. Remove it or chain it yourself, then run this again."
        )
    line = codex_notify_line() + "\n"
    lines = text.splitlines(keepends=True)
    candidates = [i for i, row in enumerate(lines) if _HEADER.match(row)] + [len(lines)]
    for index in candidates:
        before = "".join(lines[:index])
        if before and not before.endswith("\n"):
            before += "\n"
        after = "".join(lines[index:])
        merged = before + line + ("\n" if after else "") + after
        try:
            if tomllib.loads(merged).get("notify") == CODEX_NOTIFY:
                return merged, True
        except tomllib.TOMLDecodeError:
            continue
    raise SettingsError("could not find a place for a top-level `notify` in the config")


def write_with_backup(path: Path, text: str) -> Path | None:
    """Write `text` atomically; keep the previous file as `<name>.pebrel-backup`. Returns it.

    A symlinked settings file is written through (its target is replaced, the link is kept).
    """
    if path.is_symlink():
        path = path.resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    backup: Path | None = None
    if path.exists():
        backup = path.with_name(path.name + BACKUP_SUFFIX)
        backup.write_bytes(path.read_bytes())
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return backup
