"""How Pebrel launches a pane's shell with its OSC 133 / OSC 7 integration.

bash, zsh and fish get shell integration without any change to the user's dotfiles:

- bash: ``bash --rcfile <shellinit/bash.sh> -i``; the rcfile sources ``/etc/bash.bashrc`` (unless
  bash already read it itself) and ``~/.bashrc`` first, then installs the marks.
- zsh: ``ZDOTDIR`` points at ``shellinit/zsh``; its ``.zshenv`` restores the user's ``ZDOTDIR``
  (saved in ``PEBREL_ZSH_USER_ZDOTDIR``, absent when it was unset) and sources the user's
  ``.zshenv``; zsh then reads the user's other startup files by itself.
- fish: ``fish --init-command 'source <shellinit/pebrel.fish>'`` (after the user's config).

``sh``/dash and unknown shells are launched with a plain argv and no integration.

Every mark the integration prints carries the pane's secret (``workers.shellkey``), handed over
in a private file whose path is in ``PEBREL_SHELL_KEY_FILE``; the worker adds that variable.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

SHELLINIT_DIR = Path(__file__).parent / "shellinit"
BASH_RCFILE = SHELLINIT_DIR / "bash.sh"
ZSH_DOTDIR = SHELLINIT_DIR / "zsh"
FISH_INIT = SHELLINIT_DIR / "pebrel.fish"

# Saved original ZDOTDIR for zsh; removed from the environment by our .zshenv.
ZSH_USER_ZDOTDIR_VAR = "PEBREL_ZSH_USER_ZDOTDIR"
# Tells bash.sh that bash already read /etc/bash.bashrc; removed by bash.sh.
BASH_SYSTEM_RC_VAR = "PEBREL_BASH_SYSTEM_RC"
BASH_SYSTEM_RC = "/etc/bash.bashrc"

_KIND_RE = re.compile(r"^(bash|zsh|fish|sh|dash|ash|posh)(?:[-._]?[0-9][0-9.]*)?$")
_SH_NAMES = frozenset({"sh", "dash", "ash", "posh"})


@dataclass(frozen=True, slots=True)
class ShellLaunch:
    """The argv and environment additions that start a shell in a pane."""

    argv: list[str]
    env: dict[str, str]  # variables to add/override in the pane environment
    integrated: bool  # True when Pebrel injected OSC 133 (bash, zsh, fish)
    #: Every prompt ends with an OSC 133 B mark (bash, zsh). Pebrel's fish script sends B from
    #: a wrapped ``fish_prompt``, which a later redefinition can undo: the worker learns it.
    ends_prompts_with_b: bool = False


def shell_kind(executable: str) -> str:
    """Classify a shell executable by its basename: bash, zsh, fish, sh or other.

    ``/usr/bin/zsh-5.9`` is ``zsh``, ``/bin/dash`` is ``sh``, a login-style ``-bash`` is ``bash``.
    """
    name = os.path.basename(executable.rstrip("/\\")).lstrip("-").lower()
    if name.endswith(".exe"):
        name = name[:-4]
    match = _KIND_RE.match(name)
    if match is None:
        return "other"
    base = match.group(1)
    return "sh" if base in _SH_NAMES else base


def launch_spec(executable: str, env: Mapping[str, str]) -> ShellLaunch:
    """Return how to launch ``executable`` in a pane whose base environment is ``env``."""
    kind = shell_kind(executable)
    if kind == "bash":
        extra: dict[str, str] = {}
        if _bash_reads_system_rc(_resolve(executable, env)):
            extra[BASH_SYSTEM_RC_VAR] = "read"
        return ShellLaunch([executable, "--rcfile", str(BASH_RCFILE), "-i"], extra, True, True)
    if kind == "zsh":
        extra = {"ZDOTDIR": str(ZSH_DOTDIR)}
        user_zdotdir = env.get("ZDOTDIR")
        if user_zdotdir is not None and not _is_our_zdotdir(user_zdotdir):
            extra[ZSH_USER_ZDOTDIR_VAR] = user_zdotdir
        elif user_zdotdir is not None and ZSH_USER_ZDOTDIR_VAR in env:
            # A base environment captured before our .zshenv ran: keep the saved original.
            extra[ZSH_USER_ZDOTDIR_VAR] = env[ZSH_USER_ZDOTDIR_VAR]
        return ShellLaunch([executable], extra, True, True)
    if kind == "fish":
        command = "source " + _fish_quote(str(FISH_INIT))
        return ShellLaunch([executable, "--init-command", command], {}, True)
    return ShellLaunch([executable], {}, False)


def _is_our_zdotdir(path: str) -> bool:
    try:
        return Path(path).resolve() == ZSH_DOTDIR.resolve()
    except OSError:
        return False


def _fish_quote(text: str) -> str:
    """Quote ``text`` as one fish word (single quotes; only \\ and ' are special)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _resolve(executable: str, env: Mapping[str, str]) -> str | None:
    if os.sep in executable:
        return executable
    return shutil.which(executable, path=env.get("PATH", os.defpath))


def _bash_reads_system_rc(path: str | None) -> bool:
    """Whether this bash was built with SYS_BASHRC and reads /etc/bash.bashrc even with --rcfile.

    Builds that read it (Debian, Ubuntu, Arch, ...) embed the path in the binary.
    """
    if path is None:
        return False
    try:
        real = os.path.realpath(path)
        stat = os.stat(real)
    except OSError:
        return False
    return _binary_mentions(real, stat.st_size, stat.st_mtime_ns, BASH_SYSTEM_RC.encode())


@lru_cache(maxsize=16)
def _binary_mentions(path: str, size: int, mtime_ns: int, needle: bytes) -> bool:
    # size and mtime_ns are part of the cache key so an upgraded binary is read again.
    del size, mtime_ns
    try:
        with open(path, "rb") as handle:
            return needle + b"\0" in handle.read()
    except OSError:
        return False
