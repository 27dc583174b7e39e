"""AI CLI kinds and recognising them from a process's argv (DESIGN "Agents").

A process is an agent when argv[0] is a known AI CLI executable, or when argv[0] is an
interpreter or package launcher (node, bun, deno, python, npx, uvx, `npm exec`, ...) and the
script, module or package it runs is one. Matching is on whole names only, never a substring of
the command line: `vim codex.py`, `cat claude.md` and `grep claude` are not agents.

Pure and import-light: the router, the pane workers and the CLI all import it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

KINDS: tuple[str, ...] = ("claude", "codex", "opencode", "cursor", "pi", "omp", "kimi")

DISPLAY_NAMES: dict[str, str] = {
    "claude": "Claude Code",
    "codex": "Codex",
    "opencode": "OpenCode",
    "cursor": "Cursor Agent",
    "pi": "Pi",
    "omp": "Oh My Pi",
    "kimi": "Kimi",
}

#: Executable basenames (argv[0]) of each kind.
EXECUTABLES: dict[str, str] = {
    "claude": "claude",
    "codex": "codex",
    "opencode": "opencode",
    "agent": "cursor",
    "cursor-agent": "cursor",
    "pi": "pi",
    "omp": "omp",
    "kimi": "kimi",
}

#: Script, module and package names an interpreter or launcher may run.
SCRIPT_NAMES: dict[str, str] = {
    **EXECUTABLES,
    "claude-code": "claude",
    "opencode-ai": "opencode",
    "kimi-cli": "kimi",
    "kimi_cli": "kimi",
}

_NODE = frozenset({"node", "nodejs"})
_PYTHON = re.compile(r"python(\d+(\.\d+)?)?")
_LAUNCHERS = frozenset({"npx", "bunx", "pnpx", "uvx"})
_SCRIPT_EXTENSIONS = (".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".py", ".sh")
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish"})

# Options that take a separate value, per launcher family; "" marks inline code (no script).
_NODE_VALUE_OPTS = frozenset(
    {
        "-r",
        "--require",
        "--import",
        "--loader",
        "--experimental-loader",
        "-C",
        "--conditions",
        "--title",
        "--inspect-port",
        "--env-file",
        "--input-type",
    }
)
_NODE_CODE_OPTS = frozenset({"-e", "--eval", "-p", "--print"})
_BUN_VALUE_OPTS = frozenset({"-r", "--preload", "--cwd", "--env-file", "-c", "--config"})
_DENO_VALUE_OPTS = frozenset(
    {"-c", "--config", "--import-map", "--lock", "--cert", "--env-file", "--location", "--seed"}
)
_PY_VALUE_OPTS = frozenset({"-X", "-W", "--check-hash-based-pycs"})
_NPX_VALUE_OPTS = frozenset({"-p", "--package", "--registry", "--cache", "--userconfig"})
_NPX_CODE_OPTS = frozenset({"-c", "--call"})
_UVX_VALUE_OPTS = frozenset(
    {
        "--from",
        "--with",
        "--with-requirements",
        "-p",
        "--python",
        "--index",
        "--index-url",
        "--extra-index-url",
        "--default-index",
        "-f",
        "--find-links",
        "--cache-dir",
        "--directory",
        "--project",
        "--config-file",
        "--env-file",
    }
)


def basename(arg0: str) -> str:
    """argv[0]'s file name: no directory, no login-shell "-", no ".exe"."""
    name = arg0.replace("\\", "/").rsplit("/", 1)[-1].lstrip("-")
    return name[:-4] if name.lower().endswith(".exe") else name


def _positional(
    args: Sequence[str], value_opts: frozenset[str], code_opts: frozenset[str] = frozenset()
) -> tuple[str | None, int]:
    """The first non-option argument and its index; None when there is none or code is inline."""
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            return (args[index + 1], index + 1) if index + 1 < len(args) else (None, index)
        if not arg.startswith("-") or arg == "-":
            return (None, index) if arg == "-" else (arg, index)
        option = arg.split("=", 1)[0]
        if option in code_opts:
            return None, index
        if option in value_opts and "=" not in arg:
            index += 1
        index += 1
    return None, index


def _shell_script(args: Sequence[str]) -> str | None:
    """The script file a shell runs (`sh ./claude`, a `#!/bin/sh` script); None for -c, -s, -i."""
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            return args[index + 1] if index + 1 < len(args) else None
        if not arg.startswith(("-", "+")):
            return arg
        if arg == "--command" or arg.startswith("--command="):
            return None  # fish's inline code
        if arg in ("--rcfile", "--init-file", "--init-command", "-C"):
            index += 1
        elif arg.startswith("--"):
            pass
        elif arg[0] == "-" and any(letter in arg for letter in "cs"):
            return None  # inline code or commands from stdin
        elif arg[-1] in "oO":  # -o option / -O shopt take a value
            index += 1
        index += 1
    return None


def _python_target(args: Sequence[str]) -> str | None:
    """The script or `-m` module a python command line runs; None for `-c` or a REPL."""
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            return args[index + 1] if index + 1 < len(args) else None
        if not arg.startswith("-") or arg == "-":
            return None if arg == "-" else arg
        if arg.startswith("--"):
            if arg.split("=", 1)[0] in _PY_VALUE_OPTS and "=" not in arg:
                index += 1
            index += 1
            continue
        # A cluster of one-letter flags: -uB, -X dev, -Wignore, -mpkg, -c code.
        for position, letter in enumerate(arg[1:], start=1):
            rest = arg[position + 1 :]
            if letter == "c":
                return None
            if letter == "m":
                return rest or (args[index + 1] if index + 1 < len(args) else None)
            if letter in "XW":
                if not rest:
                    index += 1
                break
        index += 1
    return None


def _package_name(spec: str) -> str:
    """A package spec's bare name: `@scope/name@1.2` -> name, `kimi-cli==1.0` -> kimi-cli."""
    for prefix in ("npm:", "jsr:"):
        if spec.startswith(prefix):
            spec = spec[len(prefix) :]
    if spec.startswith("@"):
        spec = spec.split("/", 1)[1] if "/" in spec else spec[1:]
    spec = spec.split("@", 1)[0]
    return re.split(r"[\[=<>~!; ]", spec, maxsplit=1)[0]


def _script_name(target: str) -> str:
    """A script path's name without extension; a generic entry point is named by its package."""
    if "/" not in target.replace("\\", "/") or target.startswith("@"):
        name = _package_name(target)
    else:
        parts = target.replace("\\", "/").split("/")
        name = parts[-1]
        if name.startswith(("npm:", "jsr:")):
            name = _package_name(name)
        if "node_modules" in parts:
            # .../node_modules/@scope/pkg/cli.js or .../node_modules/pkg/bin/run.js
            at = len(parts) - 1 - parts[::-1].index("node_modules")
            rest = parts[at + 1 : -1]
            if rest and rest[0] != ".bin":
                package = rest[1] if rest[0].startswith("@") and len(rest) > 1 else rest[0]
                if _strip_ext(name) not in SCRIPT_NAMES:
                    name = package
    return _strip_ext(name)


def _strip_ext(name: str) -> str:
    for ext in _SCRIPT_EXTENSIONS:
        if name.endswith(ext) and len(name) > len(ext):
            return name[: -len(ext)]
    return name


def _launched(argv: Sequence[str]) -> str | None:
    """The script, module or package an interpreter or launcher argv runs, else None."""
    exe = basename(argv[0]).lower()
    args = list(argv[1:])
    if exe in _NODE:
        target, _ = _positional(args, _NODE_VALUE_OPTS, _NODE_CODE_OPTS)
    elif exe == "bun":
        target, at = _positional(args, _BUN_VALUE_OPTS, frozenset({"-e", "--eval", "-p"}))
        if target in ("run", "x"):
            target, _ = _positional(args[at + 1 :], _BUN_VALUE_OPTS | _NPX_VALUE_OPTS)
    elif exe == "deno":
        target, at = _positional(args, _DENO_VALUE_OPTS)
        if target in ("run", "x"):
            target, _ = _positional(args[at + 1 :], _DENO_VALUE_OPTS)
        elif target == "eval":
            target = None
    elif exe in _SHELLS:
        target = _shell_script(args)
    elif _PYTHON.fullmatch(exe):
        target = _python_target(args)
    elif exe in _LAUNCHERS:
        value_opts = _UVX_VALUE_OPTS if exe == "uvx" else _NPX_VALUE_OPTS
        target, _ = _positional(args, value_opts, _NPX_CODE_OPTS)
    elif exe in ("npm", "pnpm", "yarn"):
        sub, at = _positional(args, _NPX_VALUE_OPTS)
        if sub not in ("exec", "x", "dlx"):
            return None
        target, _ = _positional(args[at + 1 :], _NPX_VALUE_OPTS, _NPX_CODE_OPTS)
    else:
        return None
    return _script_name(target) if target else None


def describe(argv: Sequence[str]) -> tuple[str | None, str]:
    """(kind or None, display name of the program): the launched script's name for wrappers."""
    if not argv or not argv[0]:
        return None, ""
    exe = basename(argv[0])
    kind = EXECUTABLES.get(exe)
    if kind is not None:
        return kind, exe
    script = _launched(argv)
    if script:
        return SCRIPT_NAMES.get(script), script
    return None, exe


def classify(argv: Sequence[str]) -> str | None:
    """The agent kind an argv runs (one of KINDS), or None. Whole names only, never substrings."""
    return describe(argv)[0]


def display_name(kind: str) -> str:
    return DISPLAY_NAMES.get(kind, kind)
