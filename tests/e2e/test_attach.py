"""`pebrel attach` driven like a person would: inside a real tmux pane, keys in with
send-keys, what the terminal shows out with capture-pane (#21 item 2).
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from tests.conftest import PEBREL, Runtime, at_prompt, prompt_read, wait_for

pytestmark = [
    pytest.mark.timeout(90),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

_names = itertools.count(1)


class Tmux:
    """A private tmux server (its own socket name) with one 100x30 session."""

    def __init__(self, rt: Runtime, command: str) -> None:
        self.name = f"pebrel-attach-{os.getpid()}-{next(_names)}"
        self.env = {**rt.env, "TERM": "xterm-256color"}
        self.tmux("-f", "/dev/null", "new-session", "-d", "-x", "100", "-y", "30", command)

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.name, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        return done.stdout

    def screen(self, styled: bool = False) -> str:
        return self.tmux("capture-pane", "-p", *(["-e"] if styled else []))

    def shows(self, needle: str, timeout_s: float = 15) -> str:
        def seen() -> str | None:
            text = self.screen()
            return text if needle in text else None

        found: str = wait_for(seen, timeout_s, f"{needle!r} in the tmux pane")
        return found

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.tmux("send-keys", *(["-l"] if literal else []), *keys)

    def close(self) -> None:
        subprocess.run(
            ["tmux", "-L", self.name, "kill-server"], env=self.env, capture_output=True, timeout=10
        )


@pytest.fixture
def attached(runtime: Runtime) -> Iterator[Tmux]:
    at_prompt(runtime)
    runtime.run(1, r"printf 'plain \033[1;31mred-word\033[0m end\n'")
    term = Tmux(runtime, f"{PEBREL} attach 1; echo attach-exit=$?; sleep 600")
    try:
        term.shows("Ctrl-] detaches")
        yield term
    finally:
        term.close()


def test_attach_mirrors_the_pane_with_its_colours(runtime: Runtime, attached: Tmux) -> None:
    text = attached.shows("red-word")
    assert "plain red-word end" in text
    styled = attached.screen(styled=True)
    row = next(line for line in styled.splitlines() if "red-word" in line)
    before = row[: row.index("red-word")]
    assert "31m" in before and "1m" in before, repr(row)
    assert not runtime.pane(1)["exited"]


def test_typing_reaches_the_pane_without_a_running_edge(runtime: Runtime, attached: Tmux) -> None:
    before = runtime.pane(1)
    attached.keys("echo from-attach", literal=True)
    runtime.wait_text(1, "echo from-attach")
    after = runtime.pane(1)
    assert (after["task_state"], after["state_change_seq"]) == (
        before["task_state"],
        before["state_change_seq"],
    )
    attached.keys("Enter")
    runtime.wait_text(1, "\nfrom-attach")
    attached.shows("\nfrom-attach")  # and the mirror shows the output


def test_ctrl_right_bracket_detaches_and_the_pane_runs_on(runtime: Runtime, attached: Tmux) -> None:
    attached.keys("C-]")
    text = attached.shows("attach-exit=0")
    assert "[detached from pane 1:1: detached]" in text
    assert not runtime.pane(1)["exited"]
    assert runtime.run(1, "echo still-here")["exit_code"] == 0


def test_a_resized_terminal_is_redrawn(attached: Tmux) -> None:
    attached.tmux("resize-window", "-x", "60", "-y", "12")

    def bottom_bar() -> str | None:
        rows = attached.screen().split("\n")
        return rows[11] if len(rows) > 11 and "Ctrl-] detaches" in rows[11] else None

    wait_for(bottom_bar, 15, "the status line on row 12")


def test_attach_inside_a_pebrel_pane_only_shows(runtime: Runtime) -> None:
    at_prompt(runtime)
    runtime.run(1, "echo in-pane-one")
    split = runtime.ok("pane.split", {"pane_id": 1, "direction": "down"})
    viewer = split["pane_id"]
    at_prompt(runtime, viewer)
    runtime.ok("pane.prompt", {"pane_id": viewer, "text": "pebrel attach 1"})
    runtime.wait_text(viewer, "read-only inside a pane")
    assert "in-pane-one" in runtime.read_text(viewer)
    before = prompt_read(runtime)["text"]
    runtime.ok("pane.prompt", {"pane_id": viewer, "text": "x", "submit": False})
    runtime.ok("pane.prompt", {"pane_id": viewer, "text": "q", "submit": False})
    runtime.wait_text(viewer, "[detached from pane 1:1: detached]")
    assert prompt_read(runtime)["text"] == before  # nothing was typed into pane 1


def test_attach_refusals(runtime: Runtime) -> None:
    at_prompt(runtime)
    piped = runtime.cli("attach", "1")
    assert piped.code == 1
    assert "needs a terminal" in piped.json["error"]["message"]
    term = Tmux(runtime, f"{PEBREL} attach 9; echo attach-exit=$?; sleep 600")
    try:
        text = term.shows("attach-exit=1")
        assert "target_not_found" in text.replace("\n", "")  # wrapped at 100 columns
    finally:
        term.close()
