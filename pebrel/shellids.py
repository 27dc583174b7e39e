"""Resolve the `shell` of window.create / tab.new / pane.split to something to launch (R3.2)."""

from __future__ import annotations

import getpass
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pebrel.errors import ErrorCode, PebrelError
from pebrel.settings import Settings, SshTarget, valid_host

BUILTIN_SHELLS = ("bash", "zsh", "fish", "sh")
#: The shorthand for an SSH pane without a profile: ``ssh:[user@]host[:port]`` (R11.1).
SSH_PREFIX = "ssh:"


@dataclass(frozen=True, slots=True)
class ShellChoice:
    shell_id: str
    argv: list[str]
    integrate: bool  # let the worker inject OSC 133 / OSC 7 for a known shell
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    #: An SSH pane's target (R11.1); ``argv`` is then empty and ``cwd`` a remote directory.
    ssh: SshTarget | None = None


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
    if shell.startswith(SSH_PREFIX):
        return ShellChoice(shell_id=shell, argv=[], integrate=False, ssh=parse_ssh_shell(shell))
    profile = settings.profiles.get(shell)
    if profile is not None and profile.ssh is not None:
        return ShellChoice(
            shell_id=shell,
            argv=[],
            integrate=profile.ssh.integration,
            env=dict(profile.env),
            cwd=profile.cwd,
            ssh=profile.ssh,
        )
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


def parse_ssh_shell(shell: str) -> SshTarget:
    """``ssh:[user@]host[:port]`` (an IPv6 address in brackets) -> its target; else
    `invalid_shell`."""
    rest = shell[len(SSH_PREFIX) :]
    user, at, hostport = rest.rpartition("@")
    host, port_text = hostport, ""
    if hostport.startswith("["):
        host, bracket, tail = hostport[1:].partition("]")
        if not bracket or (tail and not tail.startswith(":")):
            host = ""
        port_text = tail[1:]
    elif hostport.count(":") == 1:
        host, _, port_text = hostport.partition(":")
    port = int(port_text) if port_text.isdigit() else (22 if not port_text else 0)
    bad_user = bool(at) and not valid_host(user)
    if bad_user or not valid_host(host) or not 1 <= port <= 65535:
        raise PebrelError(
            ErrorCode.INVALID_SHELL,
            f"{shell!r} is not ssh:[user@]host[:port]",
            {"shell": shell},
        )
    return SshTarget(host=host, user=user or None, port=port)


def ssh_config(target: SshTarget, env: Mapping[str, str], slots_dir: Path) -> dict[str, Any]:
    """What an SSH pane's worker needs to connect (JSON): the target with its defaults filled
    in (the local user, ``~/.ssh/known_hosts``), the agent's socket, and where the runtime's
    SSH panes share their limit of connections starting at once per host (its ipc dir)."""
    home = env.get("HOME") or os.path.expanduser("~")

    def expand(path: str | None) -> str | None:
        if path is None:
            return None
        return home + path[1:] if path == "~" or path.startswith("~/") else path

    return {
        "host": target.host,
        "port": target.port,
        "user": target.user or env.get("USER") or getpass.getuser(),
        "identity_file": expand(target.identity_file),
        "known_hosts": expand(target.known_hosts) or os.path.join(home, ".ssh", "known_hosts"),
        "integration": target.integration,
        "agent_path": env.get("SSH_AUTH_SOCK"),
        "slots_dir": str(slots_dir),
    }
