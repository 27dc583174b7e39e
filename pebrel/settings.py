"""`settings.toml` in the data dir: default shell, scrollback, shell profiles, screen rules."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pebrel.datadir import SETTINGS_FILE
from pebrel.model import DEFAULT_SCROLLBACK_LINES
from pebrel.screenrules import load_rules


@dataclass(frozen=True, slots=True)
class Profile:
    id: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None


@dataclass(frozen=True, slots=True)
class Settings:
    default_shell: str | None = None
    scrollback_lines: int = DEFAULT_SCROLLBACK_LINES
    profiles: dict[str, Profile] = field(default_factory=dict)
    #: Extra `[[screen_rules]]` tables, validated; matched before the shipped rules.
    screen_rules: list[dict[str, Any]] = field(default_factory=list)


class SettingsError(ValueError):
    """settings.toml exists but is not valid; the message names the field."""


def load_settings(directory: Path) -> Settings:
    path = directory / SETTINGS_FILE
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Settings()
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"{path}: {exc}") from exc
    default_shell = raw.get("default_shell")
    if default_shell is not None and not isinstance(default_shell, str):
        raise SettingsError("default_shell must be a string")
    scrollback = raw.get("scrollback_lines", DEFAULT_SCROLLBACK_LINES)
    if (
        not isinstance(scrollback, int)
        or isinstance(scrollback, bool)
        or not (0 <= scrollback <= 1_000_000)
    ):
        raise SettingsError("scrollback_lines must be an integer in 0..1000000")
    profiles: dict[str, Profile] = {}
    for pid, spec in (raw.get("profiles") or {}).items():
        if not isinstance(spec, dict):
            raise SettingsError(f"profiles.{pid} must be a table")
        argv = spec.get("argv")
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise SettingsError(f"profiles.{pid}.argv must be a non-empty list of strings")
        env = spec.get("env", {})
        if not isinstance(env, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items()
        ):
            raise SettingsError(f"profiles.{pid}.env must map strings to strings")
        cwd = spec.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise SettingsError(f"profiles.{pid}.cwd must be a string")
        profiles[pid] = Profile(id=pid, argv=list(argv), env=dict(env), cwd=cwd)
    screen_rules = raw.get("screen_rules", [])
    try:
        load_rules(screen_rules)
    except ValueError as exc:
        raise SettingsError(str(exc)) from exc
    return Settings(
        default_shell=default_shell,
        scrollback_lines=scrollback,
        profiles=profiles,
        screen_rules=[dict(rule) for rule in screen_rules],
    )
