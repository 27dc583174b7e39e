"""The spec's CLI as written (R8.1, R8.2, R7.7): listing verbs show every window, and a relative
`--cwd` names the CLI's own directory.

- `pebrel pane list`, `pebrel agent list` and `pebrel ctl agents` list every window's panes even
  inside a pane (PEBREL_WINDOW_ID set); only `--window` narrows them. Every other verb still
  defaults its window to PEBREL_WINDOW_ID.
- `--cwd` of `tab new`, `window create`, `pane split`, `ctl new-tab` and `ctl split` (R3.1,
  R3.2, R3.4) is made absolute by the CLI, as `agent start` does: the runtime runs in another
  directory.

The agents are the stand-in AI CLIs of tests/fakes (no real agent can log in here).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agent_fixtures import fake_agents_env, started_runtime
from tests.conftest import PEBREL, Runtime

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    with started_runtime(fake_agents_env(tmp_path)) as runtime:
        yield runtime


def pebrel(
    rt: Runtime, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> tuple[int, dict[str, Any]]:
    """`pebrel ARGS` with the runtime's env (plus `env`), run from `cwd`: status, envelope."""
    proc = subprocess.run(
        [PEBREL, *args],
        env={**rt.env, **(env or {})},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    envelope: dict[str, Any] = json.loads(proc.stdout) if proc.stdout else {}
    return proc.returncode, envelope


def ok(rt: Runtime, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    code, envelope = pebrel(rt, *args, env=env)
    assert code == 0 and envelope["ok"], (args, code, envelope)
    payload: dict[str, Any] = envelope["result"]
    return payload


def all_panes(rt: Runtime) -> list[tuple[int, int]]:
    return sorted(
        (p["window_id"], p["pane_id"])
        for w in rt.snapshot()["windows"]
        for t in w["tabs"]
        for p in t["panes"]
    )


def listed(result: dict[str, Any], key: str) -> list[tuple[int, int]]:
    return sorted((row["window_id"], row["pane_id"]) for row in result[key])


# ---- listing verbs: every window, even inside a pane ---------------------------------------------


def test_listing_verbs_show_every_window_inside_a_pane(rt: Runtime, tmp_path: Path) -> None:
    """R8.1, R7.7: with a pane's env (window 1), the listing verbs still show window 2."""
    assert ok(rt, "window", "create")["window_id"] == 2
    one = ok(rt, "agent", "start", "one", "--kind", "claude", "--window", "1")
    two = ok(rt, "agent", "start", "two", "--kind", "codex", "--window", "2")
    agent_panes = sorted([(1, one["pane_id"]), (2, two["pane_id"])])
    panes = all_panes(rt)
    assert {w for w, _ in panes} == {1, 2} and len(panes) == 4
    in_window_1 = {"PEBREL_WINDOW_ID": "1", "PEBREL_PANE_ID": "1"}

    assert listed(ok(rt, "pane", "list", env=in_window_1), "panes") == panes
    assert listed(ok(rt, "agent", "list", env=in_window_1), "agents") == agent_panes
    assert listed(ok(rt, "ctl", "agents", env=in_window_1), "agents") == agent_panes
    # The legacy alias is no default either.
    assert listed(ok(rt, "pane", "list", env={"NEBULA_WINDOW_ID": "1"}), "panes") == panes

    # --window narrows, inside a pane of another window too.
    only_2 = [p for p in panes if p[0] == 2]
    assert listed(ok(rt, "pane", "list", "--window", "2", env=in_window_1), "panes") == only_2
    for verb in (("agent", "list"), ("ctl", "agents")):
        narrowed = ok(rt, *verb, "--window", "2", env=in_window_1)
        assert listed(narrowed, "agents") == [(2, two["pane_id"])], verb

    # Unhappy paths: a window that does not exist, an id that cannot be one.
    code, missing = pebrel(rt, "agent", "list", "--window", "9", env=in_window_1)
    assert code == 1 and missing["error"]["code"] == "target_not_found"
    assert rt.cli("pane", "list", "--window", "0").code == 2


def test_listing_verbs_run_inside_a_real_pane(rt: Runtime, tmp_path: Path) -> None:
    """R8.1, R7.7: run in a pane of window 1 (its own PEBREL_WINDOW_ID), they list window 2."""
    assert ok(rt, "window", "create")["window_id"] == 2
    ok(rt, "agent", "start", "two", "--kind", "codex", "--window", "2")
    panes = all_panes(rt)
    out = tmp_path / "out"
    out.mkdir()
    line = (
        f'test "$PEBREL_WINDOW_ID" = 1 && pebrel pane list > {out}/panes'
        f" && pebrel agent list > {out}/agents && pebrel ctl agents > {out}/ctl"
        f" && pebrel pane list --window 1 > {out}/narrowed"
    )
    ran = rt.ok("pane.run", {"window_id": 1, "pane_id": 1, "command": line})
    assert ran["exit_code"] == 0, ran

    def read(name: str, key: str) -> list[tuple[int, int]]:
        envelope = json.loads((out / name).read_text())
        assert envelope["ok"], envelope
        return listed(envelope["result"], key)

    assert read("panes", "panes") == panes
    assert [w for w, _ in read("agents", "agents")] == [2]
    assert [w for w, _ in read("ctl", "agents")] == [2]
    assert read("narrowed", "panes") == [p for p in panes if p[0] == 1]


def test_other_verbs_keep_the_callers_window(rt: Runtime) -> None:
    """R7.7: pane 1 exists in both windows; PEBREL_WINDOW_ID picks it for the other verbs."""
    assert ok(rt, "window", "create")["window_id"] == 2
    sent = ok(rt, "pane", "send", "1", "true", env={"PEBREL_WINDOW_ID": "2"})
    assert (sent["window_id"], sent["pane_id"]) == (2, 1)
    split = ok(rt, "ctl", "split", "--direction", "down", env={"PEBREL_WINDOW_ID": "2"})
    assert split["window_id"] == 2
    # Without it the pane id is ambiguous: the runtime says so rather than guess.
    ambiguous = rt.cli("pane", "read", "1")
    assert ambiguous.code == 1 and ambiguous.json["error"]["code"] == "ambiguous_target"


# ---- relative --cwd ------------------------------------------------------------------------------


def cli_in(rt: Runtime, directory: Path, *args: str) -> dict[str, Any]:
    """`pebrel ARGS` run from `directory`; the whole envelope."""
    code, envelope = pebrel(rt, *args, cwd=directory)
    assert code == (0 if envelope["ok"] else 1), (args, code, envelope)
    return envelope


def pane_cwd(rt: Runtime, window_id: int, pane_id: int) -> str:
    cwd: str = rt.pane(pane_id, window_id)["cwd"]
    return cwd


RELATIVE_CWD_VERBS: list[tuple[str, ...]] = [
    ("tab", "new", "--window", "1"),
    ("window", "create"),
    ("pane", "split", "1", "--window", "1"),
    ("ctl", "new-tab", "--window", "1"),
    ("ctl", "split", "--window", "1", "--direction", "down"),
]


def test_relative_cwd_is_the_clis_own_directory(rt: Runtime, tmp_path: Path) -> None:
    """R3.1, R3.2, R3.4, R8.1: `--cwd sub` from /x starts the new pane in /x/sub, per verb."""
    base = tmp_path / "work"
    for index, verb in enumerate(RELATIVE_CWD_VERBS):
        name = f"dir{index}"
        (base / name).mkdir(parents=True)
        (base / "deeper").mkdir(exist_ok=True)
        for relative, caller in ((name, base), (f"../{name}", base / "deeper")):
            envelope = cli_in(rt, caller, *verb, "--cwd", relative)
            assert envelope["ok"], (verb, envelope)
            made = envelope["result"]
            expected = os.path.realpath(base / name)
            assert os.path.realpath(pane_cwd(rt, made["window_id"], made["pane_id"])) == expected
            # The shell itself runs there (not only the snapshot's field).
            ran = rt.ok(
                "pane.run",
                {"window_id": made["window_id"], "pane_id": made["pane_id"], "command": "pwd -P"},
            )
            assert ran["exit_code"] == 0
            text = rt.read_text(made["pane_id"], made["window_id"])
            assert expected in text, (verb, text)


def test_relative_cwd_that_is_missing_changes_nothing(rt: Runtime, tmp_path: Path) -> None:
    """R3.1, R3.2, R3.4: a relative --cwd naming no directory is refused, with the absolute path
    the CLI sent, and no window, tab or pane is added."""
    before = all_panes(rt)
    for verb in RELATIVE_CWD_VERBS:
        envelope = cli_in(rt, tmp_path, *verb, "--cwd", "nowhere")
        assert not envelope["ok"], verb
        error = envelope["error"]
        assert error["code"] == "invalid_params", (verb, error)
        assert error["details"]["cwd"] == str(tmp_path / "nowhere"), (verb, error)
    assert all_panes(rt) == before
