"""The environment contract every local pane gets (FEATURES R7.1-R7.4, R7.6-R7.7)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pebrel import __version__

#: Variables of the contract, with what they mean; reported by `runtime.describe`.
CONTRACT: dict[str, str] = {
    "TERM_PROGRAM": "always 'pebrel' inside a Pebrel pane",
    "TERM_PROGRAM_VERSION": "the Pebrel version",
    "PEBREL_WINDOW_ID": "window of the calling pane (pane ids are unique only within a window)",
    "PEBREL_PANE_ID": "the calling pane's id within its window",
    "PEBREL_CLI": "absolute path of the pebrel CLI (local panes only)",
    "PEBREL_BIN_DIR": "directory of PEBREL_CLI, prepended to PATH (local panes only)",
    "PEBREL_PANE_REMOTE": "'1' in SSH panes (set on the remote host; local panes lack it)",
}
ALIAS_PREFIX = "NEBULA_"
#: Entries Pebrel adds to WSLENV so WSL translates the paths (Windows hosts).
WSLENV_ENTRIES = ("PEBREL_CLI/p", "PEBREL_BIN_DIR/p")


def cli_location() -> tuple[str | None, str | None]:
    """Absolute path of the `pebrel` console script that belongs to this interpreter."""
    exe_dir = Path(sys.executable).parent
    names = ("pebrel.exe", "pebrel") if sys.platform == "win32" else ("pebrel",)
    for name in names:
        candidate = exe_dir / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate), str(exe_dir)
    found = shutil.which("pebrel")
    if found:
        resolved = Path(found).absolute()
        return str(resolved), str(resolved.parent)
    return None, None


def prepend_path(current: str | None, entry: str, sep: str = os.pathsep) -> str:
    """Put `entry` first in a PATH-like value, dropping every other copy of it (idempotent)."""
    parts = [p for p in (current or "").split(sep) if p and p != entry]
    return sep.join([entry, *parts])


def merge_wslenv(current: str | None, entries: Iterable[str] = WSLENV_ENTRIES) -> str:
    """Merge `NAME/flags` entries into a WSLENV value; deduplicated by variable name.

    Existing entries keep their order; an existing entry for one of our names is replaced by
    ours in place; repeated identical entries collapse to one. Applying it twice changes nothing.
    """
    ours = {e.split("/", 1)[0]: e for e in entries}
    result: list[str] = []
    seen: set[str] = set()
    for item in (current or "").split(":"):
        if not item:
            continue
        name = item.split("/", 1)[0]
        if name in seen:
            continue
        seen.add(name)
        result.append(ours.get(name, item))
    for name, entry in ours.items():
        if name not in seen:
            result.append(entry)
    return ":".join(result)


def pane_env(
    base: Mapping[str, str],
    *,
    window_id: int,
    pane_id: int,
    explicit: Mapping[str, str] | None = None,
    cli: tuple[str | None, str | None] | None = None,
    windows_host: bool = sys.platform == "win32",
) -> dict[str, str]:
    """The environment of a new local pane, built from the runtime's own environment.

    Inherited PEBREL_*/NEBULA_* values (a runtime started inside another Pebrel pane) are
    replaced; `explicit` (a shell profile's env) wins over everything computed here; NEBULA_*
    aliases mirror the final PEBREL_* values.
    """
    env = {k: v for k, v in base.items() if not k.startswith(("PEBREL_", ALIAS_PREFIX))}
    env.pop("PEBREL_DATA_DIR", None)
    if "PEBREL_DATA_DIR" in base:
        # The data dir says which runtime the pane belongs to; keep it so `pebrel` finds us.
        env["PEBREL_DATA_DIR"] = base["PEBREL_DATA_DIR"]
    cli_path, bin_dir = cli if cli is not None else cli_location()
    env["TERM"] = "xterm-256color"
    env["TERM_PROGRAM"] = "pebrel"
    env["TERM_PROGRAM_VERSION"] = __version__
    env["PEBREL_WINDOW_ID"] = str(window_id)
    env["PEBREL_PANE_ID"] = str(pane_id)
    if cli_path and bin_dir:
        env["PEBREL_CLI"] = cli_path
        env["PEBREL_BIN_DIR"] = bin_dir
        env["PATH"] = prepend_path(env.get("PATH"), bin_dir)
    for key, value in (explicit or {}).items():
        env[key] = value
    if windows_host:
        env["WSLENV"] = merge_wslenv(env.get("WSLENV"))
    for key in [k for k in env if k.startswith("PEBREL_") and k != "PEBREL_DATA_DIR"]:
        env[ALIAS_PREFIX + key[len("PEBREL_") :]] = env[key]
    return env


def remote_pane_env(
    *, window_id: int, pane_id: int, explicit: Mapping[str, str] | None = None
) -> dict[str, str]:
    """What an SSH pane's remote shell gets (R11.1, R7): its identity and PEBREL_PANE_REMOTE=1,
    never PEBREL_CLI, PEBREL_BIN_DIR or the data dir (they name this machine's files). Set in
    the command the connection executes: a stock sshd refuses environment requests."""
    env = {
        "TERM_PROGRAM": "pebrel",
        "TERM_PROGRAM_VERSION": __version__,
        "PEBREL_WINDOW_ID": str(window_id),
        "PEBREL_PANE_ID": str(pane_id),
        "PEBREL_PANE_REMOTE": "1",
    }
    env.update(explicit or {})
    for key in [k for k in env if k.startswith("PEBREL_")]:
        env[ALIAS_PREFIX + key[len("PEBREL_") :]] = env[key]
    return env


def describe_env() -> dict[str, Any]:
    """The `env` section of `runtime.describe`."""
    return {
        "variables": dict(CONTRACT),
        "aliases": {
            k: ALIAS_PREFIX + k[len("PEBREL_") :] for k in CONTRACT if k.startswith("PEBREL_")
        },
        "legacy_fallback": ["NEBULA_CLI", "NEBULA_PANE_ID", "NEBULA_WINDOW_ID"],
        "wslenv_entries": list(WSLENV_ENTRIES),
        "local_only": ["PEBREL_CLI", "PEBREL_BIN_DIR"],
        #: SSH panes (R11.1): what their remote shell gets, set in the command it runs.
        "remote_panes": {
            "set": sorted(remote_pane_env(window_id=1, pane_id=1)),
            "never_set": ["PEBREL_CLI", "PEBREL_BIN_DIR", "PEBREL_DATA_DIR"],
        },
    }
