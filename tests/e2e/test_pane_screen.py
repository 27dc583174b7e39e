"""pane.screen: the visible screen with each cell's colours and attributes, and the cursor,
as a view for people renders it (#21 item 1)."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest

from tests.conftest import Runtime, at_prompt, wait_for
from tests.e2e.test_robustness import worker_of
from tests.e2e.test_schema import problems

pytestmark = pytest.mark.timeout(60)

#: The wire's default look: default colours, no attribute.
DEFAULT_STYLE: dict[str, Any] = {
    "fg": None,
    "bg": None,
    "bold": False,
    "italic": False,
    "underline": False,
    "strikethrough": False,
    "inverse": False,
    "blink": False,
}

PAINT = (
    r"printf '\033[1;31mRED\033[0m plain \033[38;5;20mIDX\033[0m \033[38;2;1;2;3;48;2;250;0;9m"
    r"TRUE\033[0m \033[4;7mUI\033[0m \033[3;9mIS\033[0m 中文!\n'"
)


def screen(rt: Runtime, pane_id: int = 1) -> dict[str, Any]:
    result: dict[str, Any] = rt.ok("pane.screen", {"pane_id": pane_id})
    return result


def painted_row(shown: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    for runs in shown["lines"]:
        if any(text.startswith("RED") for text, _ in runs):
            return [(text, shown["styles"][style]) for text, style in runs]
    raise AssertionError(shown["lines"])


def test_colours_attributes_and_wide_characters(runtime: Runtime) -> None:
    at_prompt(runtime)
    runtime.run(1, PAINT)

    def painted() -> dict[str, Any] | None:
        shown = screen(runtime)
        return shown if any("中文" in t for r in shown["lines"] for t, _ in r) else None

    shown = wait_for(painted, 10, "the painted line")
    assert problems(shown, "#/methods/pane.screen/result") == []
    row = dict(painted_row(shown))
    default = shown["styles"][0]
    assert default == DEFAULT_STYLE
    assert row["RED"]["fg"] == "red" and row["RED"]["bold"]
    assert row[" plain "] == default
    assert row["IDX"]["fg"] == "#0000d7"  # 256-colour 20
    assert (row["TRUE"]["fg"], row["TRUE"]["bg"]) == ("#010203", "#fa0009")
    assert row["UI"]["underline"] and row["UI"]["inverse"]
    assert row["IS"]["italic"] and row["IS"]["strikethrough"]
    texts = [text for text, _ in painted_row(shown)]
    assert texts[-1] == " 中文!"  # the wide characters once each; no trailing blanks
    assert (shown["cols"], shown["rows"]) == (runtime.pane(1)["cols"], runtime.pane(1)["rows"])
    assert len(shown["lines"]) == shown["rows"]
    assert shown["styles_cut"] is False and shown["alt_screen"] is False


def test_the_cursor_and_the_alternate_screen(runtime: Runtime) -> None:
    at_prompt(runtime)
    runtime.ok("pane.prompt", {"pane_id": 1, "text": "printf '\\033[?1049h\\033[5;7Hmid'; cat"})

    def alternate() -> dict[str, Any] | None:
        shown = screen(runtime)
        return shown if shown["alt_screen"] and shown["lines"][4] else None

    shown = wait_for(alternate, 10, "the alt screen")
    assert shown["lines"][4] == [["      mid", 0]]
    assert shown["cursor"] == {"row": 4, "col": 9, "visible": True}
    key = {"pane_id": 1, "key": "c", "modifiers": {"control": True}}
    runtime.ok("pane.send_key", key)
    runtime.ok("pane.prompt", {"pane_id": 1, "text": "printf '\\033[?1049l'"})
    wait_for(lambda: not screen(runtime)["alt_screen"], 10, "the main screen again")


def test_unknown_panes_and_a_dead_worker_are_refused(runtime: Runtime) -> None:
    at_prompt(runtime)
    missing = runtime.error("pane.screen", {"pane_id": 99})
    assert missing["code"] == "target_not_found"
    os.kill(worker_of(runtime, 1).pid, signal.SIGKILL)
    wait_for(lambda: runtime.pane(1)["exited"], 10, "the pane to exit")
    gone = runtime.error("pane.screen", {"pane_id": 1})
    assert gone["code"] == "invalid_state"
    assert runtime.ok("pane.read", {"pane_id": 1})["exited"] is True  # reads still answer


def test_the_cli_prints_the_screen(runtime: Runtime) -> None:
    at_prompt(runtime)
    result = runtime.cli("pane", "screen", "1")
    assert result.code == 0, result.stdout
    assert result.json["ok"] and result.json["result"]["styles"][0]["fg"] is None
