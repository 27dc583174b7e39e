"""pane.send_key (R4.3) and pane.paste (R4.2) end to end against real bash, sh and programs.

Keys are checked by what real programs receive (ctrl-c ends a foreground `sleep`, up recalls
bash history, a raw-mode reader sees the application cursor form); pastes by what bash runs
and by nothing being typed where bracketed paste is off.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path
from typing import Any, NamedTuple

import psutil
import pytest

from pebrel.model import MAX_PROMPT_BYTES
from tests.conftest import PEBREL, Runtime, at_prompt, wait_for

pytestmark = pytest.mark.timeout(120)

WAIT_MS = 30_000
PROMPT_ENDINGS = ("$", "#")
#: Reads 3 raw bytes from the terminal and prints their repr; `raw-ok` once it is reading.
RAW_READER = (
    'python3 -c "import os,termios,tty;s=termios.tcgetattr(0);tty.setraw(0);'
    "print('%s-ok' % 'raw',flush=True);d=os.read(0,3);"
    "termios.tcsetattr(0,termios.TCSANOW,s);print('got',repr(d))\""
)


def key(rt: Runtime, name: str, pane_id: int = 1, **extra: Any) -> dict[str, Any]:
    return rt.ok("pane.send_key", {"pane_id": pane_id, "key": name, **extra})


def ctrl(rt: Runtime, letter: str, pane_id: int = 1) -> dict[str, Any]:
    return key(rt, letter, pane_id, modifiers={"control": True})


def wait_settled(rt: Runtime, after_seq: int, pane_id: int = 1) -> dict[str, Any]:
    return rt.ok(
        "pane.wait",
        {"pane_id": pane_id, "state": "settled", "after_seq": after_seq, "timeout_ms": WAIT_MS},
        timeout_s=WAIT_MS / 1000 + 10,
    )


def lines_of(rt: Runtime, pane_id: int = 1) -> list[str]:
    found: list[str] = rt.ok("pane.read", {"pane_id": pane_id, "lines": 200})["lines"]
    return found


def at_drawn_prompt(rt: Runtime, pane_id: int = 1) -> list[str]:
    """Wait until the last line is a drawn prompt; return the lines read."""
    found: list[str] = wait_for(
        lambda: (
            lines
            if (lines := lines_of(rt, pane_id)) and lines[-1].rstrip().endswith(PROMPT_ENDINGS)
            else None
        ),
        15,
        f"a shell prompt in pane {pane_id}",
    )
    return found


def ready(rt: Runtime, pane_id: int = 1) -> list[str]:
    """bash ran a first command and drew its next prompt (readline reads a line)."""
    at_prompt(rt, pane_id)
    return at_drawn_prompt(rt, pane_id)


def sh_pane(rt: Runtime) -> int:
    """A new tab running `sh` (dash: no integration, no bracketed paste), at its prompt."""
    pane_id: int = rt.ok("tab.new", {"shell": "sh"})["pane_id"]
    at_drawn_prompt(rt, pane_id)
    return pane_id


def foreground_is(rt: Runtime, name: str, pane_id: int = 1) -> bool:
    """True once a child called `name` leads the foreground process group of the pane's tty."""
    shell = psutil.Process(rt.pane(pane_id)["pid"])
    with open(f"/proc/{shell.pid}/stat", encoding="ascii") as handle:
        tpgid = int(handle.read().rsplit(")", 1)[1].split()[5])
    return any(
        child.pid == tpgid and child.name() == name for child in shell.children(recursive=True)
    )


def wait_foreground(rt: Runtime, name: str, pane_id: int = 1) -> None:
    # A ctrl-c sent before the command owns the terminal reaches only the shell (TRAPS).
    wait_for(lambda: foreground_is(rt, name, pane_id), 10, f"{name} in the foreground")


def cli_with_stdin(rt: Runtime, stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PEBREL, *args], env=rt.env, input=stdin, capture_output=True, text=True, timeout=60
    )


# -- R4.3 pane.send_key --------------------------------------------------------------------------


def test_ctrl_c_stops_a_foreground_sleep_and_the_pane_is_failed(runtime: Runtime) -> None:
    """R4.3: `sleep 30`, then ctrl-c (CLI `pane key 1 c --control`): failed, shell usable."""
    ready(runtime)
    sent = runtime.ok("pane.prompt", {"pane_id": 1, "text": "sleep 30"})
    wait_foreground(runtime, "sleep")
    keyed = runtime.cli("pane", "key", "1", "c", "--control", check=True).json["result"]
    assert (keyed["written"], keyed["submitted"]) == (True, False)  # ctrl-c is not Enter (#14)
    assert keyed["state_change_seq"] >= sent["state_change_seq"]
    settled = wait_settled(runtime, sent["state_change_seq"])
    assert settled["state"] == "failed"
    assert not any(c.name() == "sleep" for c in psutil.Process(runtime.pane(1)["pid"]).children())
    after = runtime.run(1, "echo status-was-$?")
    assert after["status"] == "finished"
    assert "status-was-130" in lines_of(runtime)
    assert runtime.run(1, "true")["status"] == "finished"


def test_ctrl_c_ends_a_run_with_exit_code_130(runtime: Runtime) -> None:
    """R4.3, R6.2: ctrl-c (CLI `ctl send-key`) under a waiting pane.run: failed, exit 130."""
    ready(runtime)
    outcome: dict[str, Any] = {}

    def run_sleep() -> None:
        outcome.update(runtime.call("pane.run", {"pane_id": 1, "command": "sleep 30"}))

    runner = threading.Thread(target=run_sleep)
    runner.start()
    try:
        wait_foreground(runtime, "sleep")
        sent = runtime.cli(
            "ctl", "send-key", "--window", "1", "--pane", "1", "--key", "c", "--control"
        )
        assert sent.code == 0, sent
    finally:
        runner.join(timeout=30)
    assert outcome["ok"], outcome
    assert outcome["result"]["status"] == "failed"
    assert outcome["result"]["exit_code"] == 130
    assert runtime.pane(1)["task_state"] == "failed"


def test_up_then_enter_runs_the_previous_command_again(runtime: Runtime) -> None:
    """R4.3: up recalls bash's last command; enter submits it like a prompt (seq baseline)."""
    ready(runtime)
    runtime.run(1, "echo hist-$((20+22))")
    at_drawn_prompt(runtime)
    assert lines_of(runtime).count("hist-42") == 1
    before = runtime.pane(1)["state_change_seq"]
    up = key(runtime, "up")
    assert up["state_change_seq"] == before  # a key that does not submit moves nothing
    entered = key(runtime, "enter")
    assert entered["state_change_seq"] == before + 1  # the synchronous running edge
    settled = wait_settled(runtime, entered["state_change_seq"])
    assert settled == {
        "state": "completed",
        "state_change_seq": entered["state_change_seq"] + 1,
        "window_id": 1,
        "pane_id": 1,
    }
    assert lines_of(runtime).count("hist-42") == 2


class CursorCase(NamedTuple):
    case_id: str
    setup: str
    expected: str


CURSOR_CASES = [
    CursorCase("normal", "printf '\\e[?1l'", "got b'\\x1b[A'"),
    CursorCase("application", "printf '\\e[?1h'", "got b'\\x1bOA'"),
]


@pytest.mark.parametrize("case", CURSOR_CASES, ids=[c.case_id for c in CURSOR_CASES])
def test_up_is_encoded_for_the_cursor_key_mode(runtime: Runtime, case: CursorCase) -> None:
    """R4.3: with DECCKM set (`ESC [?1h`) up arrives as SS3 A, else as CSI A."""
    ready(runtime)
    sent = runtime.ok("pane.prompt", {"pane_id": 1, "text": f"{case.setup}; {RAW_READER}"})
    runtime.wait_text(1, "raw-ok")
    key(runtime, "up")
    runtime.wait_text(1, case.expected)
    wait_settled(runtime, sent["state_change_seq"])
    runtime.run(1, "printf '\\e[?1l'")


def test_repeat_sends_the_key_n_times(runtime: Runtime) -> None:
    """R4.3: `repeat: 3` of backspace erases three typed characters."""
    ready(runtime)
    runtime.ok("pane.prompt", {"pane_id": 1, "text": "echo rep-abcXYZ", "submit": False})
    runtime.wait_text(1, "rep-abcXYZ")
    key(runtime, "backspace", repeat=3)
    entered = key(runtime, "enter")
    wait_settled(runtime, entered["state_change_seq"])
    assert "rep-abc" in lines_of(runtime)


class BadKey(NamedTuple):
    case_id: str
    params: dict[str, Any]


BAD_KEYS = [
    BadKey("letter-without-control", {"key": "c"}),
    BadKey("letter-with-alt-only", {"key": "c", "modifiers": {"alt": True}}),
    BadKey(
        "letter-with-control-shift", {"key": "c", "modifiers": {"control": True, "shift": True}}
    ),
    BadKey("enter-with-control", {"key": "enter", "modifiers": {"control": True}}),
    BadKey("unknown-key", {"key": "f13"}),
    BadKey("uppercase-letter", {"key": "C", "modifiers": {"control": True}}),
    BadKey("text-as-key", {"key": "echo hi"}),
    BadKey("repeat-65", {"key": "enter", "repeat": 65}),
    BadKey("repeat-0", {"key": "enter", "repeat": 0}),
    BadKey("unknown-modifier", {"key": "c", "modifiers": {"control": True, "meta": True}}),
    BadKey("modifier-not-bool", {"key": "c", "modifiers": {"control": "yes"}}),
]


@pytest.mark.parametrize("case", BAD_KEYS, ids=[c.case_id for c in BAD_KEYS])
def test_bad_keys_are_invalid_params_and_type_nothing(runtime: Runtime, case: BadKey) -> None:
    """R4.3: letters need control, repeat is 1-64, unknown keys and modifiers are refused."""
    before = ready(runtime)
    seq = runtime.pane(1)["state_change_seq"]
    error = runtime.error("pane.send_key", {"pane_id": 1, **case.params})
    assert error["code"] == "invalid_params", error
    assert error["message"]
    assert lines_of(runtime) == before
    assert runtime.pane(1)["state_change_seq"] == seq


def test_letter_without_control_says_control_is_needed(runtime: Runtime) -> None:
    """R4.3: the refusal of a bare letter names the fix (modifiers.control)."""
    error = runtime.error("pane.send_key", {"pane_id": 1, "key": "q"})
    assert error["code"] == "invalid_params"
    assert "modifiers.control" in error["message"]
    assert error["details"]["submitted"] is False


def test_keys_and_pastes_to_an_exited_pane_are_invalid_state(runtime: Runtime) -> None:
    """R4.2, R4.3: once the pane's shell has exited, keys and pastes -> invalid_state."""
    ready(runtime)
    runtime.ok("pane.prompt", {"pane_id": 1, "text": "exit 4"})
    wait_for(lambda: runtime.pane(1)["exited"], 15, "pane 1 exited")
    for method, params in (
        ("pane.send_key", {"key": "enter"}),
        ("pane.send_key", {"key": "c", "modifiers": {"control": True}}),
        ("pane.paste", {"text": "echo late"}),
    ):
        error = runtime.error(method, {"pane_id": 1, **params})
        assert error["code"] == "invalid_state", (method, error)
        assert error["details"]["exited"] is True
        assert error["details"]["submitted"] is False


def test_keys_and_pastes_inside_the_submit_barrier_are_refused(runtime: Runtime) -> None:
    """R4.2, R4.3, R5.4: after `read x` is submitted in sh (edge unconfirmed), a key or a
    paste is input_in_progress and nothing is typed."""
    pane_id = sh_pane(runtime)
    runtime.ok("pane.prompt", {"pane_id": pane_id, "text": "read x"})
    for method, params in (
        ("pane.paste", {"text": "echo barrier-paste"}),
        ("pane.send_key", {"key": "enter"}),
        ("pane.send_key", {"key": "c", "modifiers": {"control": True}}),
    ):
        error = runtime.error(method, {"pane_id": pane_id, **params})
        assert error["code"] == "input_in_progress", (method, error)
        assert error["details"]["submitted"] is False
    assert "barrier-paste" not in runtime.read_text(pane_id)


# -- R4.2 pane.paste -------------------------------------------------------------------------------


def test_multi_line_paste_with_submit_runs_every_line(runtime: Runtime) -> None:
    """R4.2: a two-line paste into bash (bracketed paste on) runs both lines; the seq moves
    like a prompt's: the returned seq is the running edge, a wait from it sees the end."""
    ready(runtime)
    before = runtime.pane(1)["state_change_seq"]
    pasted = runtime.ok(
        "pane.paste", {"pane_id": 1, "text": "echo one-$((0+1))\necho two-$((1+1))"}
    )
    assert pasted["submitted"] is True
    assert pasted["state_change_seq"] == before + 1
    settled = wait_settled(runtime, pasted["state_change_seq"])
    assert (settled["state"], settled["state_change_seq"]) == (
        "completed",
        pasted["state_change_seq"] + 1,
    )
    lines = lines_of(runtime)
    assert "one-1" in lines and "two-2" in lines
    assert lines.index("one-1") < lines.index("two-2")


def test_paste_turns_crlf_and_cr_into_newlines(runtime: Runtime) -> None:
    """R4.2: CRLF and a lone CR in pasted text are newlines (line breaks, never Enter)."""
    ready(runtime)
    text = "echo crlf-$((1+1))\r\necho cr-$((2+2))\recho lf-$((3+3))"
    pasted = runtime.ok("pane.paste", {"pane_id": 1, "text": text})
    wait_settled(runtime, pasted["state_change_seq"])
    lines = lines_of(runtime)
    assert {"crlf-2", "cr-4", "lf-6"} <= set(lines)


def test_paste_without_submit_only_types(runtime: Runtime) -> None:
    """R4.2: `submit: false` types the text and starts nothing; enter then runs it."""
    ready(runtime)
    seq = runtime.pane(1)["state_change_seq"]
    pasted = runtime.ok(
        "pane.paste", {"pane_id": 1, "text": "echo typed-$((5+5))", "submit": False}
    )
    assert pasted["state_change_seq"] == seq
    runtime.wait_text(1, "echo typed-$((5+5))")
    assert "typed-10" not in lines_of(runtime)
    assert runtime.pane(1)["task_state"] != "running"
    entered = key(runtime, "enter")
    assert entered["state_change_seq"] == seq + 1
    wait_settled(runtime, entered["state_change_seq"])
    assert "typed-10" in lines_of(runtime)


def test_paste_into_cat_is_invalid_state_and_types_nothing(runtime: Runtime) -> None:
    """R4.2: `cat` does not enable bracketed paste: invalid_state, bracketed_paste false,
    nothing reaches cat (it would echo it)."""
    ready(runtime)
    sent = runtime.ok("pane.prompt", {"pane_id": 1, "text": "cat"})
    wait_foreground(runtime, "cat")

    def refused() -> dict[str, Any] | None:
        # `cat` can own the terminal (pane.procs reads /proc) before the shell's mark that
        # confirms the prompt's submit reached the router: until then the paste is refused
        # as input_in_progress (the submit barrier), which is not what this test is about.
        found = runtime.error("pane.paste", {"pane_id": 1, "text": "PASTED-INTO-CAT"})
        return None if found["code"] == "input_in_progress" else found

    error = wait_for(refused, 10, "the submit barrier of the prompt to end")
    assert error["code"] == "invalid_state", error
    assert error["details"]["bracketed_paste"] is False
    assert error["details"]["submitted"] is False
    ctrl(runtime, "d")
    settled = wait_settled(runtime, sent["state_change_seq"])
    assert settled["state"] == "completed"
    assert "PASTED-INTO-CAT" not in runtime.read_text(1)


def test_paste_into_sh_is_invalid_state_and_types_nothing(runtime: Runtime) -> None:
    """R4.2: dash never enables bracketed paste: invalid_state, nothing typed, seq unchanged."""
    pane_id = sh_pane(runtime)
    before = lines_of(runtime, pane_id)
    seq = runtime.pane(pane_id)["state_change_seq"]
    error = runtime.error("pane.paste", {"pane_id": pane_id, "text": "echo into-sh"})
    assert error["code"] == "invalid_state", error
    assert error["details"]["bracketed_paste"] is False
    assert lines_of(runtime, pane_id) == before
    assert runtime.pane(pane_id)["state_change_seq"] == seq


class BadPaste(NamedTuple):
    case_id: str
    text: str


BAD_PASTES = [
    BadPaste("esc", "echo \x1b[31mred"),
    BadPaste("nul", "echo a\x00b"),
    BadPaste("bel", "echo a\x07"),
    BadPaste("backspace", "echo a\x08"),
    BadPaste("del", "echo a\x7f"),
    BadPaste("c1-nel", "echo a\x85b"),
    BadPaste("c1-csi", "echo a\x9b31m"),
    BadPaste("empty", ""),
    BadPaste("over-32KiB-ascii", "x" * (MAX_PROMPT_BYTES + 1)),
    # 16385 characters (within a character-count limit) but 32770 bytes of UTF-8.
    BadPaste("over-32KiB-utf8", "é" * (MAX_PROMPT_BYTES // 2 + 1)),
]


@pytest.mark.parametrize("case", BAD_PASTES, ids=[c.case_id for c in BAD_PASTES])
def test_bad_paste_text_is_invalid_params_and_types_nothing(
    runtime: Runtime, case: BadPaste
) -> None:
    """R4.2: ESC, NUL and every other C0/C1 control but newline and tab, empty text and more
    than 32 KiB of UTF-8 -> invalid_params; nothing is typed."""
    before = ready(runtime)
    error = runtime.error("pane.paste", {"pane_id": 1, "text": case.text})
    assert error["code"] == "invalid_params", error
    assert lines_of(runtime) == before


def test_paste_of_32_kib_is_accepted(runtime: Runtime) -> None:
    """R4.2: exactly 32 KiB (with tabs and newlines) is pasted whole."""
    ready(runtime)
    line = "#" + "x\t" * 63 + "\n"  # a comment line of 128 bytes
    text = line * (MAX_PROMPT_BYTES // len(line) - 1) + "echo big-$((6*7))"
    text += "#" * (MAX_PROMPT_BYTES - len(text.encode()))
    assert len(text.encode()) == MAX_PROMPT_BYTES
    pasted = runtime.ok("pane.paste", {"pane_id": 1, "text": text})
    wait_settled(runtime, pasted["state_change_seq"])
    runtime.wait_text(1, "big-42")


def test_cli_paste_from_file_and_stdin_with_wait(runtime: Runtime, tmp_path: Path) -> None:
    """R4.2: `pane paste --from-file F --wait` and `--stdin --wait` (read by the CLI) run the
    text and wait from the post-submit baseline."""
    ready(runtime)
    script = tmp_path / "paste.txt"
    script.write_text("echo file-$((3+4))\necho more-$((4+4))\n", encoding="utf-8")
    from_file = runtime.cli("pane", "paste", "1", "--from-file", str(script), "--wait")
    assert from_file.code == 0, from_file
    assert from_file.json["result"]["state"] == "completed"
    assert from_file.json["result"]["submitted"] is True
    assert {"file-7", "more-8"} <= set(lines_of(runtime))
    at_drawn_prompt(runtime)
    from_stdin = cli_with_stdin(runtime, "echo stdin-$((5+5))", "pane", "paste", "1", "--stdin")
    assert from_stdin.returncode == 0, from_stdin
    runtime.wait_text(1, "stdin-10")
    ctl = cli_with_stdin(
        runtime, "echo ctl-$((6+6))", "ctl", "paste", "--pane", "1", "--stdin", "--wait"
    )
    assert ctl.returncode == 0, ctl
    runtime.wait_text(1, "ctl-12")


class BadCli(NamedTuple):
    case_id: str
    args: tuple[str, ...]


BAD_CLI = [
    BadCli("no-submit-with-wait", ("pane", "paste", "1", "echo x", "--no-submit", "--wait")),
    BadCli("no-source", ("pane", "paste", "1")),
    BadCli("text-and-stdin", ("pane", "paste", "1", "echo x", "--stdin")),
    BadCli("stdin-and-file", ("pane", "paste", "1", "--stdin", "--from-file", "/etc/hostname")),
    BadCli("missing-file", ("pane", "paste", "1", "--from-file", "/nonexistent/paste.txt")),
    BadCli("repeat-65", ("pane", "key", "1", "enter", "--repeat", "65")),
]


@pytest.mark.parametrize("case", BAD_CLI, ids=[c.case_id for c in BAD_CLI])
def test_cli_usage_errors_exit_2_and_send_nothing(runtime: Runtime, case: BadCli) -> None:
    """R4.2, R4.3: contradictory or missing paste sources and out-of-range repeat: exit 2."""
    seq = runtime.pane(1)["state_change_seq"]
    result = runtime.cli(*case.args)
    assert result.code == 2, result
    assert runtime.pane(1)["state_change_seq"] == seq
    assert "echo x" not in runtime.read_text(1)


def test_cli_key_errors_print_the_envelope_and_exit_1(runtime: Runtime) -> None:
    """R4.3: a letter without --control reaches the runtime and comes back invalid_params."""
    result = runtime.cli("pane", "key", "1", "q")
    assert result.code == 1, result
    assert result.json["error"]["code"] == "invalid_params"
