"""OSC 133 integration in bash, zsh and fish, without touching the user's dotfiles (R6.1).

Each shell is started with `tab.new` and driven with `pane.run`, which only reports
`finished`/`failed` from a real OSC 133 exit code (R6.2). A shell that is not installed is
skipped, with the reason.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.conftest import Runtime, wait_for


class ShellCase(NamedTuple):
    shell: str
    rc_file: str  # relative to HOME
    rc_text: str  # sets DOTFILE_MARK to "<shell>-rc-loaded"


SHELLS = [
    ShellCase(
        "bash",
        ".bashrc",
        "# user's own bashrc\nexport DOTFILE_MARK=bash-rc-loaded\n",
    ),
    ShellCase(
        "zsh",
        ".zshrc",
        "# user's own zshrc\nexport DOTFILE_MARK=zsh-rc-loaded\n",
    ),
    ShellCase(
        "fish",
        ".config/fish/config.fish",
        "# user's own config.fish\nset -gx DOTFILE_MARK fish-rc-loaded\n",
    ),
]
IDS = [case.shell for case in SHELLS]


def open_tab(rt: Runtime, case: ShellCase) -> int:
    """Write the user's rc file, open a tab running the shell; return its pane id."""
    if shutil.which(case.shell) is None:
        pytest.skip(f"{case.shell} is not installed (shutil.which found no binary)")
    rc = Path(rt.env["HOME"]) / case.rc_file
    rc.parent.mkdir(parents=True, exist_ok=True)
    rc.write_text(case.rc_text)
    created = rt.ok("tab.new", {"shell": case.shell})
    assert created["window_id"] == 1
    pane_id: int = created["pane_id"]
    assert rt.pane(pane_id)["shell"].endswith(case.shell)
    return pane_id


@pytest.mark.parametrize("case", SHELLS, ids=IDS)
def test_true_finishes_with_0(runtime: Runtime, case: ShellCase) -> None:
    """R6.1, R6.2: `true` -> finished, exit code 0 from the shell's OSC 133 D."""
    pane_id = open_tab(runtime, case)
    result = runtime.run(pane_id, "true")
    assert (result["status"], result["exit_code"]) == ("finished", 0)
    assert runtime.pane(pane_id)["task_state"] == "completed"


@pytest.mark.parametrize("case", SHELLS, ids=IDS)
def test_false_fails_with_1(runtime: Runtime, case: ShellCase) -> None:
    """R6.1, R6.2: `false` -> failed, exit code 1."""
    pane_id = open_tab(runtime, case)
    runtime.run(pane_id, "true")
    result = runtime.run(pane_id, "false")
    assert (result["status"], result["exit_code"]) == ("failed", 1)
    assert runtime.pane(pane_id)["task_state"] == "failed"


@pytest.mark.parametrize("case", SHELLS, ids=IDS)
def test_cd_updates_the_pane_cwd(runtime: Runtime, case: ShellCase) -> None:
    """R6.1: `cd /tmp` -> the snapshot's pane cwd follows (OSC 7)."""
    pane_id = open_tab(runtime, case)
    runtime.run(pane_id, "true")
    assert runtime.pane(pane_id)["cwd"] != "/tmp"
    runtime.run(pane_id, "cd /tmp")
    wait_for(lambda: runtime.pane(pane_id)["cwd"] == "/tmp", 10, "pane cwd /tmp")


@pytest.mark.parametrize("case", SHELLS, ids=IDS)
def test_user_rc_is_loaded_and_left_unchanged(runtime: Runtime, case: ShellCase) -> None:
    """R6.1, DESIGN Shells: the user's rc file is sourced and stays byte-identical."""
    rc = Path(runtime.env["HOME"]) / case.rc_file
    pane_id = open_tab(runtime, case)
    before = rc.read_bytes()
    runtime.run(pane_id, 'echo "mark=$DOTFILE_MARK"')
    assert f"mark={case.shell}-rc-loaded" in runtime.read_text(pane_id).split("\n")
    runtime.run(pane_id, "cd /tmp")
    runtime.ok("pane.close", {"pane_id": pane_id})
    assert rc.read_bytes() == before == case.rc_text.encode()


def test_a_line_is_typed_once_zsh_has_drawn_its_prompt(runtime: Runtime) -> None:
    """R6.2: zsh's integration marks the prompt start (A) from precmd, before a slow precmd
    hook of the user and before its line editor draws the prompt; pane.run types the line only
    once the prompt is drawn (B), so the terminal never echoes it before the prompt."""
    case = SHELLS[IDS.index("zsh")]
    slow_hook = "PS1='%% '\nslow_hook() { sleep 0.3 }\nprecmd_functions+=(slow_hook)\n"
    pane_id = open_tab(runtime, case._replace(rc_text=slow_hook))
    for word in ("first", "second"):  # the first prompt, then the one after a command
        result = runtime.run(pane_id, f"echo {word}-$((6*7))")
        assert result["exit_code"] == 0
    lines = [line.strip() for line in runtime.read_text(pane_id).splitlines()]
    assert "% echo first-$((6*7))" in lines and "% echo second-$((6*7))" in lines
    assert "echo first-$((6*7))" not in lines and "echo second-$((6*7))" not in lines
