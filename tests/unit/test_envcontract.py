"""Pure parts of the pane environment contract (R7.1, R7.3, R7.4, R7.7)."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from pebrel import __version__
from pebrel.envcontract import merge_wslenv, pane_env, prepend_path

OURS = "PEBREL_CLI/p:PEBREL_BIN_DIR/p"
CLI = ("/new/bin/pebrel", "/new/bin")


class WslCase(NamedTuple):
    case_id: str
    current: str | None
    expected: str


WSLENV_CASES = [
    WslCase("unset", None, OURS),
    WslCase("empty", "", OURS),
    WslCase("unrelated-kept-in-order", "ZED/u:ALPHA:MID/p", f"ZED/u:ALPHA:MID/p:{OURS}"),
    WslCase(
        "ours-replaced-in-place",
        "FOO:PEBREL_CLI/u:BAR/l",
        "FOO:PEBREL_CLI/p:BAR/l:PEBREL_BIN_DIR/p",
    ),
    WslCase(
        "ours-without-flags-replaced", "PEBREL_BIN_DIR:FOO", "PEBREL_BIN_DIR/p:FOO:PEBREL_CLI/p"
    ),
    WslCase("duplicates-collapse", "FOO:FOO:PEBREL_CLI/p:PEBREL_CLI/p", f"FOO:{OURS}"),
    WslCase("duplicate-names-keep-first", "FOO/u:FOO/p", f"FOO/u:{OURS}"),
    WslCase("empty-entries-dropped", "::FOO::BAR:", f"FOO:BAR:{OURS}"),
    WslCase("already-merged", OURS, OURS),
]


@pytest.mark.parametrize("case", WSLENV_CASES, ids=[c.case_id for c in WSLENV_CASES])
def test_merge_wslenv(case: WslCase) -> None:
    """R7.4: our /p entries merged into WSLENV, existing entries kept, deduplicated by name."""
    assert merge_wslenv(case.current) == case.expected


@pytest.mark.parametrize("case", WSLENV_CASES, ids=[c.case_id for c in WSLENV_CASES])
def test_merge_wslenv_is_idempotent(case: WslCase) -> None:
    """R7.3: applying the merge twice changes nothing (nesting never grows WSLENV)."""
    once = merge_wslenv(case.current)
    assert merge_wslenv(once) == once


class PathCase(NamedTuple):
    case_id: str
    current: str | None
    expected: str


PATH_CASES = [
    PathCase("unset", None, "/new/bin"),
    PathCase("empty", "", "/new/bin"),
    PathCase("prepended", "/usr/bin:/bin", "/new/bin:/usr/bin:/bin"),
    PathCase("already-first", "/new/bin:/usr/bin", "/new/bin:/usr/bin"),
    PathCase("moved-to-front", "/usr/bin:/new/bin:/bin", "/new/bin:/usr/bin:/bin"),
    PathCase(
        "every-copy-dropped", "/new/bin:/usr/bin:/new/bin:/bin:/new/bin", "/new/bin:/usr/bin:/bin"
    ),
]


@pytest.mark.parametrize("case", PATH_CASES, ids=[c.case_id for c in PATH_CASES])
def test_prepend_path(case: PathCase) -> None:
    """R7.1, R7.3: the bin dir leads PATH exactly once; other entries keep their order."""
    assert prepend_path(case.current, "/new/bin", ":") == case.expected


@pytest.mark.parametrize("case", PATH_CASES, ids=[c.case_id for c in PATH_CASES])
def test_prepend_path_is_idempotent(case: PathCase) -> None:
    """R7.3: prepending twice is prepending once."""
    once = prepend_path(case.current, "/new/bin", ":")
    assert prepend_path(once, "/new/bin", ":") == once


def inherited() -> dict[str, str]:
    """The environment of a runtime started inside another Pebrel (or Nebula) pane."""
    return {
        "HOME": "/home/u",
        "PATH": "/old/bin:/usr/bin",
        "TERM": "screen",
        "TERM_PROGRAM": "nebula",
        "TERM_PROGRAM_VERSION": "0.0.1",
        "PEBREL_DATA_DIR": "/data",
        "PEBREL_WINDOW_ID": "7",
        "PEBREL_PANE_ID": "99",
        "PEBREL_CLI": "/old/bin/pebrel",
        "PEBREL_BIN_DIR": "/old/bin",
        "PEBREL_SOMETHING_ELSE": "x",
        "NEBULA_PANE_ID": "99",
        "NEBULA_WINDOW_ID": "7",
        "NEBULA_CLI": "/old/bin/nebula",
        "NEBULA_LEGACY_ONLY": "y",
        "WSLENV": "FOO/u",
    }


def test_pane_env_replaces_inherited_identity() -> None:
    """R7.1, R7.3, R7.7: inherited PEBREL_*/NEBULA_* values give way to the pane's own."""
    env = pane_env(inherited(), window_id=2, pane_id=3, cli=CLI, windows_host=False)
    assert env["TERM_PROGRAM"] == "pebrel"
    assert env["TERM_PROGRAM_VERSION"] == __version__
    assert (env["PEBREL_WINDOW_ID"], env["PEBREL_PANE_ID"]) == ("2", "3")
    assert (env["PEBREL_CLI"], env["PEBREL_BIN_DIR"]) == CLI
    assert env["PATH"] == "/new/bin:/old/bin:/usr/bin"
    assert env["PEBREL_DATA_DIR"] == "/data"
    assert env["HOME"] == "/home/u"


def test_pane_env_drops_unknown_inherited_contract_variables() -> None:
    """R7.3: stale PEBREL_*/NEBULA_* variables of an outer pane do not leak in."""
    env = pane_env(inherited(), window_id=2, pane_id=3, cli=CLI, windows_host=False)
    assert "PEBREL_SOMETHING_ELSE" not in env
    assert "NEBULA_LEGACY_ONLY" not in env
    assert "NEBULA_DATA_DIR" not in env


def test_pane_env_aliases_mirror_final_values() -> None:
    """R7.1, R7.7: every NEBULA_* alias equals its PEBREL_* value."""
    env = pane_env(inherited(), window_id=2, pane_id=3, cli=CLI, windows_host=False)
    pebrel = {k[len("PEBREL_") :]: v for k, v in env.items() if k.startswith("PEBREL_")}
    pebrel.pop("DATA_DIR")
    nebula = {k[len("NEBULA_") :]: v for k, v in env.items() if k.startswith("NEBULA_")}
    assert nebula == pebrel
    assert set(pebrel) == {"WINDOW_ID", "PANE_ID", "CLI", "BIN_DIR"}


def test_pane_env_explicit_profile_values_win() -> None:
    """R7.1: a profile's explicit PEBREL_* value wins, and its alias follows it."""
    env = pane_env(
        inherited(),
        window_id=2,
        pane_id=3,
        explicit={"PEBREL_PANE_ID": "77", "EDITOR": "vi", "TERM": "xterm"},
        cli=CLI,
        windows_host=False,
    )
    assert env["PEBREL_PANE_ID"] == env["NEBULA_PANE_ID"] == "77"
    assert env["EDITOR"] == "vi"
    assert env["TERM"] == "xterm"


def test_pane_env_without_a_cli_sets_no_cli_variables() -> None:
    """R7.1: no CLI found -> no PEBREL_CLI/PEBREL_BIN_DIR and PATH left as it was."""
    env = pane_env(inherited(), window_id=1, pane_id=1, cli=(None, None), windows_host=False)
    for key in ("PEBREL_CLI", "PEBREL_BIN_DIR", "NEBULA_CLI", "NEBULA_BIN_DIR"):
        assert key not in env
    assert env["PATH"] == "/old/bin:/usr/bin"


def test_pane_env_nested_twice_is_stable() -> None:
    """R7.3: a pane env used as the next runtime's base yields the same PATH and WSLENV."""
    first = pane_env(inherited(), window_id=1, pane_id=1, cli=CLI, windows_host=True)
    second = pane_env(first, window_id=1, pane_id=1, cli=CLI, windows_host=True)
    assert second == first
    assert first["WSLENV"] == f"FOO/u:{OURS}"


def test_pane_env_leaves_wslenv_alone_off_windows() -> None:
    """R7.4: WSLENV is only merged on Windows hosts."""
    env = pane_env(inherited(), window_id=1, pane_id=1, cli=CLI, windows_host=False)
    assert env["WSLENV"] == "FOO/u"
