"""Resolve the `shell` of window.create / tab.new / pane.split to something to launch (R3.2)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field

from pebrel.errors import ErrorCode, PebrelError
from pebrel.settings import Settings

BUILTIN_SHELLS = ("bash", "zsh", "fish", "sh")


@dataclass(frozen=True, slots=True)
class ShellChoice:
    shell_id: str
    argv: list[str]
    integrate: bool  # let the worker inject OSC 133 / OSC 7 for a known shell
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None


def default_shell(settings: Settings, env: dict[str, str] | os._Environ[str]) -> ShellChoice:
    configured = settings.default_shell
    if configured:
        return resolve_shell(configured, settings)
    candidate = env.get("SHELL") or "/bin/bash"
    path = candidate if os.path.isabs(candidate) else shutil.which(candidate)
    if not path or not os.access(path, os.X_OK):
        path = "/bin/bash"
    return ShellChoice(shell_id=os.path.basename(path), argv=[path], integrate=True)


def resolve_shell(shell: str, settings: Settings) -> ShellChoice:
    """A builtin id or a settings.toml profile id; else `invalid_shell`, never a fallback."""
    profile = settings.profiles.get(shell)
    if profile is not None:
        exe = profile.argv[0]
        found = exe if os.path.isabs(exe) else shutil.which(exe)
        if not found:
            raise PebrelError(
                ErrorCode.INVALID_SHELL,
                f"profile {shell!r}: {exe!r} is not an executable",
                {"shell": shell},
            )
        return ShellChoice(
            shell_id=shell,
            argv=[found, *profile.argv[1:]],
            integrate=len(profile.argv) == 1,
            env=dict(profile.env),
            cwd=profile.cwd,
        )
    if shell in BUILTIN_SHELLS:
        found = shutil.which(shell)
        if found:
            return ShellChoice(shell_id=shell, argv=[found], integrate=True)
        raise PebrelError(
            ErrorCode.INVALID_SHELL, f"shell {shell!r} is not installed", {"shell": shell}
        )
    raise PebrelError(
        ErrorCode.INVALID_SHELL,
        f"unknown shell id {shell!r}",
        {"shell": shell, "known": [*BUILTIN_SHELLS, *sorted(settings.profiles)]},
    )
