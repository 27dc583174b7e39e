"""Screens as they are, end to end against a real bash (R4.4): emoji, joiners and combining
marks read back whole; `pane.read` with `screen` is the visible grid (compared with tmux for
the same bytes); the prompt after `less` is a line of its own; answers stay within 1 MiB."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pebrel.model import READ_MAX_BYTES
from tests.agent_fixtures import fake_agents_env, started_runtime
from tests.conftest import Runtime, at_prompt, wait_for
from tests.e2e.test_pane_io import at_fresh_prompt, read, ready
from tests.e2e.test_transport import Wire
from tests.tmux_oracle import capture, needs_tmux
from tests.unit.test_screen_text import TEXTS

pytestmark = pytest.mark.timeout(120)

CLEAR = "\x1b[H\x1b[2J"


def screen_read(rt: Runtime, pane_id: int = 1) -> dict[str, Any]:
    return rt.ok("pane.read", {"pane_id": pane_id, "screen": True})


def show_and_hold(rt: Runtime, path: Path) -> None:
    """Clear the pane, write the file's bytes raw and keep the screen still (`read` waits)."""
    rt.ok(
        "pane.prompt",
        {"pane_id": 1, "text": f"stty raw -echo; printf '\\033[H\\033[2J'; cat {path}; read -r"},
    )


def held_screen(rt: Runtime, first_row: str) -> dict[str, Any]:
    result: dict[str, Any] = wait_for(
        lambda: r if (r := screen_read(rt))["lines"][0] == first_row else None,
        15,
        f"{first_row!r} on the first row",
    )
    return result


def test_emoji_joiners_and_marks_read_back_whole(runtime: Runtime, tmp_path: Path) -> None:
    """R4.4: text after U+200D / U+FE0F is never dropped; combining marks stay as written."""
    ready(runtime)
    sample = tmp_path / "sample.txt"
    sample.write_text("".join(case.text + "\n" for case in TEXTS), encoding="utf-8")
    runtime.run(1, f"cat {sample}")
    lines = at_fresh_prompt(runtime)["lines"]
    start = lines.index(TEXTS[0].text)
    assert lines[start : start + len(TEXTS)] == [case.text for case in TEXTS]
    rows = screen_read(runtime)["lines"]
    for case in TEXTS:
        assert case.text in rows


def test_screen_read_is_the_visible_grid(runtime: Runtime, tmp_path: Path) -> None:
    """R4.4: `screen` answers one entry per row, `cols` cells each, a wide character's
    second cell "", the cursor's cell, and no logical-line joining or trimming of rows."""
    ready(runtime)
    data = tmp_path / "grid.bin"
    data.write_bytes("中x ⚠️ ok\r\nsecond".encode())
    show_and_hold(runtime, data)
    result = held_screen(runtime, "中x ⚠️ ok")
    pane = runtime.pane(1)
    rows, cols = pane["rows"], pane["cols"]
    assert (result["rows"], result["cols"]) == (rows, cols)
    assert len(result["lines"]) == len(result["screen"]) == len(result["wrapped"]) == rows
    assert all(len(row) == cols for row in result["screen"])
    assert result["screen"][0][:7] == ["中", "", "x", " ", "⚠️", " ", "o"]
    assert result["lines"][:3] == ["中x ⚠️ ok", "second", ""]
    assert result["text"] == "\n".join(result["lines"])
    assert result["cursor"] == {"row": 1, "col": 6, "visible": True}
    assert result["wrapped"] == [False] * rows
    assert result["alt_screen"] is False
    assert result["first_row"] == 0 and result["truncated"] is False
    assert result["requested_lines"] == result["returned_lines"] == rows
    assert result["task_state"] == pane["task_state"]
    cli = runtime.cli("pane", "read", "1", "--screen")
    assert cli.code == 0, cli
    assert cli.json["result"]["screen"] == result["screen"]


@needs_tmux
def test_screen_rows_match_tmux_for_plain_text(runtime: Runtime, tmp_path: Path) -> None:
    """R4.4: for plain text (ASCII, CJK, a soft wrap, cursor moves) the rows are tmux's."""
    ready(runtime)
    pane = runtime.pane(1)
    cols, rows = pane["cols"], pane["rows"]
    body = (
        "plain ascii\r\n"
        + "中文字符" * (cols // 8)
        + "\r\n"
        + "w" * (cols + 17)
        + "\r\nmoved\x1b[6;9Hhere\x1b[2;3H!"
    ).encode()
    data = tmp_path / "plain.bin"
    data.write_bytes(body)
    show_and_hold(runtime, data)
    result = held_screen(runtime, "plain ascii")
    shown = list(result["lines"])
    while shown and not shown[-1]:
        shown.pop()
    assert shown == capture(body, cols, rows, tmp_path)
    assert result["wrapped"][:4] == [False, False, True, False]
    logical = read(runtime, lines=rows)["lines"]
    assert logical[-len(capture(body, cols, rows, tmp_path, join=True)) :] == capture(
        body, cols, rows, tmp_path, join=True
    )


def test_screen_read_refuses_lines(runtime: Runtime) -> None:
    """R4.4: `screen` answers every row, so `lines` with it is invalid_params."""
    at_prompt(runtime)
    error = runtime.error("pane.read", {"pane_id": 1, "screen": True, "lines": 5})
    assert error["code"] == "invalid_params", error
    assert error["details"]["field"] == "lines"
    cli = runtime.cli("pane", "read", "1", "--screen", "--lines", "5")
    assert cli.code != 0
    assert json.loads(cli.stdout)["error"]["code"] == "invalid_params"


@pytest.mark.skipif(shutil.which("less") is None, reason="less is not installed")
def test_prompt_after_less_is_a_line_of_its_own(runtime: Runtime, tmp_path: Path) -> None:
    """R4.4: less nudges a full last row to wrap (" \\b") before its prompt; once it quits,
    the shell's prompt is not joined onto that row."""
    first = ready(runtime)["lines"][-1]
    pane = runtime.pane(1)
    cols, rows = pane["cols"], pane["rows"]
    long_lines = tmp_path / "long.txt"
    # Lines of 1.25 rows: the page ends on the first row of a line that goes on.
    long_lines.write_text(
        "".join(str(n % 10) * (cols + cols // 4) + "\n" for n in range(rows + 5)), "utf-8"
    )
    runtime.ok("pane.prompt", {"pane_id": 1, "text": f"LESS= less -X {long_lines}"})
    wait_for(
        lambda: screen_read(runtime)["lines"][-1].startswith(str(long_lines)),
        15,
        "less's prompt on the last row",
    )
    runtime.ok("pane.prompt", {"pane_id": 1, "text": "q", "submit": False})
    lines = at_fresh_prompt(runtime)["lines"]
    assert lines[-1] == first
    assert set(lines[-2]) <= set("0123456789") and len(lines[-2]) == cols
    grid = screen_read(runtime)
    assert grid["lines"][grid["cursor"]["row"]] == first
    assert not grid["wrapped"][grid["cursor"]["row"] - 1]


def test_read_answer_stays_within_1_mib_on_the_wire(runtime: Runtime) -> None:
    """R4.4: `text` and `lines[]` carry the lines twice; the whole answer line, as sent, is
    at most 1 MiB, the oldest lines dropped and `truncated` set."""
    ready(runtime)
    runtime.run(1, "for i in $(seq 1 2100); do printf '%01100d\\n' $i; done")
    at_fresh_prompt(runtime)
    with Wire(runtime) as wire:
        wire.send("pane.read", {"pane_id": 1, "lines": 2000})
        raw = wire.read_line()
    assert len(raw) <= READ_MAX_BYTES
    result = json.loads(raw)["result"]
    assert result["truncated"] is True
    assert 300 < result["returned_lines"] == len(result["lines"]) < 2000
    assert result["lines"][-2] == f"{2100:01100d}"
    assert result["text"] == "\n".join(result["lines"])
    screen = runtime.ok("pane.read", {"pane_id": 1, "screen": True})
    assert len(json.dumps(screen).encode()) <= READ_MAX_BYTES


def test_agent_read_screen_is_the_agents_visible_grid(tmp_path: Path) -> None:
    """R4.4, R9.4: agent.read takes `screen` too (the agent's pane, bound to its generation);
    the fake CLI is a stand-in for a real one."""
    with started_runtime(fake_agents_env(tmp_path)) as rt:
        started = rt.cli("agent", "start", "demo", "--kind", "claude")
        assert started.code == 0, started
        done = rt.cli("agent", "send", "demo", "hello world", "--wait")
        assert done.code == 0 and done.json["result"]["state"] == "completed", done
        for args in (("agent", "read", "demo"), ("ctl", "agent-read", "--agent", "demo")):
            shown = rt.cli(*args, "--generation", "1", "--screen")
            assert shown.code == 0, shown
            result = shown.json["result"]
            assert (result["agent_id"], result["generation"]) == (
                started.json["result"]["agent_id"],
                1,
            )
            assert len(result["screen"]) == result["rows"] == len(result["lines"])
            assert all(len(row) == result["cols"] for row in result["screen"])
            assert any("answer: dlrow olleh" in line for line in result["lines"])
