"""pane.prompt, pane.read and pane.run end to end against a real bash (R4.1, R4.4, R6.2)."""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

import pytest

from pebrel.model import MAX_PROMPT_BYTES, READ_MAX_BYTES
from tests.conftest import Runtime, at_prompt, wait_for

PROMPT_ENDINGS = ("$", "#", ">", "%")
BARRIER = "zz-barrier-typed"


def read(rt: Runtime, pane_id: int = 1, **params: Any) -> dict[str, Any]:
    return rt.ok("pane.read", {"pane_id": pane_id, **params})


def at_fresh_prompt(rt: Runtime, pane_id: int = 1) -> dict[str, Any]:
    """Wait until the last line read is a drawn shell prompt; return that read."""
    result: dict[str, Any] = wait_for(
        lambda: (
            r
            if (r := read(rt, pane_id))["lines"]
            and r["lines"][-1].rstrip().endswith(PROMPT_ENDINGS)
            else None
        ),
        15,
        f"a shell prompt in pane {pane_id}",
    )
    return result


def ready(rt: Runtime, pane_id: int = 1) -> dict[str, Any]:
    """The pane ran a first command and its next prompt is drawn; return a read of it."""
    at_prompt(rt, pane_id)
    return at_fresh_prompt(rt, pane_id)


class Rejected(NamedTuple):
    case_id: str
    text: str


REJECTED = [
    Rejected("newline", "echo a\necho b"),
    Rejected("carriage-return", "echo a\r"),
    Rejected("esc", "echo \x1b[31mred"),
    Rejected("nul", "echo a\x00b"),
    Rejected("tab", "echo a\tb"),
    Rejected("del", "echo a\x7f"),
    Rejected("c1-nel", "echo a\x85b"),
    Rejected("over-32KiB-ascii", "x" * (MAX_PROMPT_BYTES + 1)),
    # 16385 characters (within a character-count limit) but 32770 bytes of UTF-8.
    Rejected("over-32KiB-utf8", "é" * (MAX_PROMPT_BYTES // 2 + 1)),
]


@pytest.mark.parametrize("case", REJECTED, ids=[c.case_id for c in REJECTED])
def test_prompt_rejects_control_chars_and_oversize_typing_nothing(
    runtime: Runtime, case: Rejected
) -> None:
    """R4.1: newline, ESC, NUL, tab, DEL, C1 and > 32 KiB -> invalid_params, nothing typed."""
    before = ready(runtime)
    error = runtime.error("pane.prompt", {"pane_id": 1, "text": case.text})
    assert error["code"] == "invalid_params", error
    after = read(runtime)
    assert after["state_change_seq"] == before["state_change_seq"]
    assert runtime.pane(1)["state_change_seq"] == before["state_change_seq"]
    # Anything the rejected call had typed would show up before this barrier on the line.
    runtime.ok("pane.prompt", {"pane_id": 1, "text": BARRIER, "submit": False})
    text = runtime.wait_text(1, BARRIER)
    lines = text.split("\n")
    assert lines[:-1] == before["lines"][:-1]
    prompt_line = before["lines"][-1]
    assert lines[-1].startswith(prompt_line)
    assert lines[-1][len(prompt_line) :].strip() == BARRIER
    assert runtime.pane(1)["state_change_seq"] == before["state_change_seq"]


def test_prompt_accepts_exactly_32_kib(runtime: Runtime) -> None:
    """R4.1: a line of exactly 32768 bytes is accepted and reaches the shell whole."""
    ready(runtime)
    text = "v=" + "x" * (MAX_PROMPT_BYTES - 2)
    assert len(text.encode()) == MAX_PROMPT_BYTES
    sent = runtime.ok("pane.prompt", {"pane_id": 1, "text": text}, timeout_s=60)
    assert sent["submitted"] is True
    runtime.ok(
        "pane.wait",
        {
            "pane_id": 1,
            "state": "settled",
            "after_seq": sent["state_change_seq"],
            "timeout_ms": 30_000,
        },
        timeout_s=60,
    )
    runtime.run(1, 'echo "len=${#v}"')
    assert f"len={MAX_PROMPT_BYTES - 2}" in read(runtime)["lines"]


def test_prompt_types_non_ascii_text(runtime: Runtime) -> None:
    """R4.1: UTF-8 text beyond ASCII is typed as is; its echo shows up."""
    ready(runtime)
    runtime.ok("pane.prompt", {"pane_id": 1, "text": "echo héllo ✓"})
    wait_for(
        lambda: "héllo ✓" in read(runtime)["lines"],
        15,
        "the echoed line 'héllo ✓'",
    )


def test_prompt_without_submit_types_but_does_not_run(runtime: Runtime) -> None:
    """R4.1: submit false types the text on the prompt line; no Enter, no running edge."""
    before = at_fresh_prompt(runtime)
    assert before["task_state"] == "idle"
    seq = before["state_change_seq"]
    sent = runtime.ok("pane.prompt", {"pane_id": 1, "text": "echo typed-only", "submit": False})
    assert (sent["written"], sent["submitted"]) == (True, False)  # no Enter (#14)
    assert sent["state_change_seq"] == seq
    text = runtime.wait_text(1, "echo typed-only")
    assert text.split("\n")[-1].endswith("echo typed-only")
    # No running edge appears within the 2 s submit-confirmation window either.
    error = runtime.error(
        "pane.wait", {"pane_id": 1, "state": "running", "after_seq": seq, "timeout_ms": 2500}
    )
    assert error["code"] == "timeout", error
    pane = runtime.pane(1)
    assert pane["task_state"] == "idle"
    assert pane["state_change_seq"] == seq
    assert "typed-only" not in read(runtime)["lines"]


def _seq_3000(rt: Runtime) -> None:
    ready(rt)
    rt.run(1, "seq 1 3000")
    at_fresh_prompt(rt)


def test_read_2000_lines_returns_the_newest_2000(runtime: Runtime) -> None:
    """R4.4: lines 2000 after 3000 lines of output: exactly 2000, anchored at the bottom."""
    _seq_3000(runtime)
    result = read(runtime, lines=2000)
    lines = result["lines"]
    assert len(lines) == 2000
    assert result["returned_lines"] == 2000
    assert result["requested_lines"] == 2000
    assert lines[-1].rstrip().endswith(PROMPT_ENDINGS)
    assert lines[-2] == "3000"
    # 2000 lines = the prompt + 1999 numbers, so the first is 3000 - 1998.
    assert lines[0] == "1002"
    assert lines == [str(n) for n in range(1002, 3001)] + [lines[-1]]
    assert result["text"] == "\n".join(lines)
    assert result["truncated"] is True
    assert result["history_available"] > 0


def test_read_defaults_to_120_lines(runtime: Runtime) -> None:
    """R4.4: without `lines`, the newest 120 logical lines."""
    _seq_3000(runtime)
    result = read(runtime)
    assert result["requested_lines"] == 120
    assert result["returned_lines"] == 120
    assert result["lines"][:-1] == [str(n) for n in range(2882, 3001)]


@pytest.mark.parametrize("lines", [0, 2001, -1], ids=["zero", "2001", "negative"])
def test_read_rejects_lines_out_of_range(runtime: Runtime, lines: int) -> None:
    """R4.4: `lines` is 1..=2000; anything else -> invalid_params."""
    error = runtime.error("pane.read", {"pane_id": 1, "lines": lines})
    assert error["code"] == "invalid_params", error


def test_read_is_idempotent_and_changes_nothing(runtime: Runtime) -> None:
    """R4.4, R2.6: two reads answer the same and move neither seq nor revision."""
    _seq_3000(runtime)
    snap = runtime.snapshot()
    first = read(runtime, lines=500)
    second = read(runtime, lines=500)
    assert first == second
    after = runtime.snapshot()
    assert after["revision"] == snap["revision"]
    assert runtime.pane(1)["state_change_seq"] == first["state_change_seq"]


def test_read_caps_the_answer_at_1_mib(runtime: Runtime) -> None:
    """R4.4: 2000 lines of 600 characters exceed 1 MiB (twice: `text` and `lines`): the
    oldest are dropped, truncated."""
    ready(runtime)
    runtime.run(1, "for i in $(seq 1 2100); do printf '%0600d\\n' $i; done")
    at_fresh_prompt(runtime)
    result = read(runtime, lines=2000)
    lines = result["lines"]
    assert result["truncated"] is True
    assert len(json.dumps(result, separators=(",", ":")).encode()) <= READ_MAX_BYTES
    assert 800 < len(lines) < 2000
    assert result["returned_lines"] == len(lines)
    assert lines[-2] == f"{2100:0600d}"
    assert all(len(line) == 600 for line in lines[:-1])


def test_read_joins_soft_wrapped_rows_into_one_logical_line(runtime: Runtime) -> None:
    """R4.4: a 300-character line in a 200-column pane reads back as one logical line."""
    ready(runtime)
    assert runtime.pane(1)["cols"] == 200
    runtime.run(1, "printf 'x%.0s' $(seq 1 300); echo")
    lines = at_fresh_prompt(runtime)["lines"]
    assert "x" * 300 in lines
    assert not any(re.fullmatch("x+", line) and len(line) != 300 for line in lines)


def test_read_reports_task_state_and_liveness(runtime: Runtime) -> None:
    """R4.4: read carries task_state (same as the snapshot), exited false, exit_reason null."""
    ready(runtime)
    runtime.run(1, "false")
    result = read(runtime)
    assert result["task_state"] == "failed"
    assert result["task_state"] == runtime.pane(1)["task_state"]
    assert result["exited"] is False
    assert "exit_reason" in result and result["exit_reason"] is None


def test_run_output_precedes_the_next_prompt(runtime: Runtime) -> None:
    """R6.2, R4.4: pane.run `seq 1 3` -> 1, 2, 3 right after the command line; int duration."""
    ready(runtime)
    result = runtime.run(1, "seq 1 3")
    assert result["status"] == "finished" and result["exit_code"] == 0
    assert isinstance(result["duration_ms"], int) and result["duration_ms"] >= 0
    lines = at_fresh_prompt(runtime)["lines"]
    assert lines[-5].endswith("seq 1 3")
    assert lines[-4:-1] == ["1", "2", "3"]
    assert lines[-1].rstrip().endswith(PROMPT_ENDINGS)


def test_prompt_baseline_observes_the_end_of_a_fast_command(runtime: Runtime) -> None:
    """R5.4, R4.1: pane.prompt's state_change_seq is the baseline of its own command.

    A wait with `after_seq` = that seq must see the command settle, however fast it ends
    (this is exactly what `pebrel pane send --wait` does). Repeated because the end of a fast
    command races the reply to the write.
    """
    ready(runtime)
    for attempt in range(30):
        sent = runtime.ok("pane.prompt", {"pane_id": 1, "text": "true"})
        waited = runtime.call(
            "pane.wait",
            {
                "pane_id": 1,
                "state": "settled",
                "after_seq": sent["state_change_seq"],
                "timeout_ms": 3000,
            },
        )
        pane = runtime.pane(1)
        assert waited["ok"], (
            f"attempt {attempt}: prompt returned seq {sent['state_change_seq']}; the pane is "
            f"{pane['task_state']} at seq {pane['state_change_seq']}; wait: {waited['error']}"
        )
