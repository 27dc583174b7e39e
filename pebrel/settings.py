"""`settings.toml` in the data dir: default shell, scrollback, shell profiles, screen rules.

A profile is either a local command (``argv``) or an SSH target (``ssh = {host, user?, port?,
identity_file?, known_hosts?}``, R11.1), never both.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pebrel.datadir import SETTINGS_FILE
from pebrel.model import DEFAULT_SCROLLBACK_LINES
from pebrel.screenrules import load_rules


@dataclass(frozen=True, slots=True)
class SshTarget:
    """Where an SSH pane connects (R11.1); None fields take their defaults at connect time
    (the local user, port 22, ``~/.ssh/known_hosts``, the agent's and the default keys)."""

    host: str
    user: str | None = None
    port: int = 22
    identity_file: str | None = None
    known_hosts: str | None = None
    #: Inject Pebrel's bash integration into the remote shell (real exit codes).
    integration: bool = False


@dataclass(frozen=True, slots=True)
class Profile:
    id: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    ssh: SshTarget | None = None


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
        ssh = _ssh_target(pid, spec)
        argv = spec.get("argv", [] if ssh is not None else None)
        if ssh is not None and argv:
            raise SettingsError(f"profiles.{pid} takes either argv or ssh, not both")
        if ssh is None and (
            not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv)
        ):
            raise SettingsError(f"profiles.{pid}.argv must be a non-empty list of strings")
        env = spec.get("env", {})
        if not isinstance(env, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items()
        ):
            raise SettingsError(f"profiles.{pid}.env must map strings to strings")
        if ssh is not None and not all(_ENV_NAME.fullmatch(k) for k in env):
            raise SettingsError(f"profiles.{pid}.env names must be shell variable names")
        cwd = spec.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise SettingsError(f"profiles.{pid}.cwd must be a string")
        profiles[pid] = Profile(id=pid, argv=list(argv or []), env=dict(env), cwd=cwd, ssh=ssh)
    if default_shell is not None and (
        default_shell.startswith("ssh:")
        or (default_shell in profiles and profiles[default_shell].ssh is not None)
    ):
        # New tabs of agent.start/fork and splits would run local paths on the remote host.
        raise SettingsError("default_shell must be a local shell, not an SSH profile")
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


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SSH_KEYS = frozenset({"host", "user", "port", "identity_file", "known_hosts"})


def _ssh_target(pid: str, spec: dict[str, Any]) -> SshTarget | None:
    """The profile's ``ssh`` table, validated (None without one)."""
    integration = spec.get("integration", False)
    if not isinstance(integration, bool):
        raise SettingsError(f"profiles.{pid}.integration must be true or false")
    raw = spec.get("ssh")
    if raw is None:
        if integration:
            raise SettingsError(f"profiles.{pid}.integration applies to ssh profiles only")
        return None
    if not isinstance(raw, dict):
        raise SettingsError(f"profiles.{pid}.ssh must be a table")
    unknown = sorted(set(raw) - _SSH_KEYS)
    if unknown:
        raise SettingsError(f"profiles.{pid}.ssh has unknown keys: {', '.join(unknown)}")
    host = raw.get("host")
    if not isinstance(host, str) or not valid_host(host):
        raise SettingsError(f"profiles.{pid}.ssh.host must be a host name or address")
    for name in ("user", "identity_file", "known_hosts"):
        value = raw.get(name)
        if value is not None and (not isinstance(value, str) or not value):
            raise SettingsError(f"profiles.{pid}.ssh.{name} must be a non-empty string")
    port = raw.get("port", 22)
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        raise SettingsError(f"profiles.{pid}.ssh.port must be an integer in 1..65535")
    return SshTarget(
        host=host,
        user=raw.get("user"),
        port=port,
        identity_file=raw.get("identity_file"),
        known_hosts=raw.get("known_hosts"),
        integration=integration,
    )


def valid_host(host: str) -> bool:
    """A host name or address an SSH pane may name: no spaces, controls, slashes or '@'."""
    return bool(host) and len(host) <= 255 and all(c.isprintable() and c not in " /@" for c in host)
