"""pane.exec (R6.3) and pane.procs (R6.4) against a real runtime, pane worker and shell.

Processes are checked in the real process table (psutil), restricted to this runtime's data
dir, so other runtimes on the machine cannot disturb the assertions.
"""

from __future__ import annotations

import base64
import contextlib
import json
import threading
import time
from typing import Any

import psutil
import pytest

from pebrel.router.handlers.exec import capture, utf8_tail
from tests.conftest import Runtime, at_prompt, processes_of, prompt_read, wait_for

pytestmark = pytest.mark.timeout(90)

MIB = 1 << 20


def exec_(rt: Runtime, argv: list[str], **params: Any) -> dict[str, Any]:
    return rt.ok("pane.exec", {"window_id": 1, "pane_id": 1, "argv": argv, **params})


def live_with_argv(rt: Runtime, *argvs: list[str]) -> list[list[str]]:
    """Live processes of this runtime whose argv is one of `argvs`."""
    found = []
    for proc in processes_of(rt.data_dir):
        try:
            cmdline = proc.cmdline()
        except psutil.Error:
            continue
        if cmdline in argvs:
            found.append(cmdline)
    return found


# ---- pure parts ------------------------------------------------------------------------------


def test_utf8_tail_drops_at_most_three_continuation_bytes() -> None:
    """R6.3: a truncated tail is cut on a UTF-8 boundary before utf-8 vs base64 is decided."""
    assert utf8_tail("é".encode()[1:] + b"ab", truncated=True) == b"ab"
    assert utf8_tail("€".encode()[1:] + b"x", truncated=True) == b"x"
    assert utf8_tail(b"\x80\x80\x80\x80x", truncated=True) == b"\x80x"
    assert utf8_tail(b"\x80ab", truncated=False) == b"\x80ab"
    text, record = capture("€".encode()[2:] + "ok€".encode(), total=100)
    assert (text, record["encoding"], record["retained_bytes"]) == ("ok€", "utf-8", 5)
    text, record = capture(b"\xff\xfe", total=2)
    assert record == {
        "encoding": "base64",
        "total_bytes": 2,
        "retained_bytes": 2,
        "truncated": False,
    }
    assert base64.b64decode(text) == b"\xff\xfe"


# ---- semantics -------------------------------------------------------------------------------


def test_streams_are_separate_and_argv_is_literal(runtime: Runtime) -> None:
    """R6.3: stdout and stderr come back apart; argv reaches the program without a shell."""
    literal = exec_(runtime, ["echo", "$HOME", "a b", "*"])
    assert literal["stdout"] == "$HOME a b *\n"
    assert literal["stderr"] == ""
    both = exec_(runtime, ["sh", "-c", "echo to-out; echo to-err >&2"])
    assert (both["stdout"], both["stderr"]) == ("to-out\n", "to-err\n")
    assert both["exit_code"] == 0 and both["signal"] is None and both["timed_out"] is False
    assert both["capture"]["stdout"] == {
        "encoding": "utf-8",
        "total_bytes": 7,
        "retained_bytes": 7,
        "truncated": False,
    }


def test_cwd_follows_the_shell_and_stdin_is_devnull(runtime: Runtime) -> None:
    """R6.3: the child runs in the pane's current cwd (after `cd`) with stdin from /dev/null."""
    at_prompt(runtime)
    runtime.run(1, "cd /tmp")
    result = exec_(runtime, ["pwd"])
    assert result["stdout"] == "/tmp\n"
    assert result["cwd"] == "/tmp"
    started = time.monotonic()
    cat = exec_(runtime, ["cat"], timeout_ms=20_000)
    assert time.monotonic() - started < 2
    assert (cat["stdout"], cat["exit_code"], cat["timed_out"]) == ("", 0, False)


def test_exec_never_touches_the_pane(runtime: Runtime) -> None:
    """R6.3: an exec is not on the PTY: grid, history and state_change_seq do not move."""
    at_prompt(runtime)
    runtime.run(1, "echo before-exec")
    before = prompt_read(runtime, lines=200)  # the next prompt drawn: nothing more to come
    seq = runtime.pane(1)["state_change_seq"]
    exec_(runtime, ["sh", "-c", "echo exec-output; echo exec-error >&2"])
    after = runtime.ok("pane.read", {"window_id": 1, "pane_id": 1, "lines": 200})
    assert after["lines"] == before["lines"]
    assert "exec-output" not in after["text"]
    assert runtime.pane(1)["state_change_seq"] == seq


def test_exit_codes_and_signals(runtime: Runtime) -> None:
    """R6.3: the child's exit status; a child killed by a signal has exit_code null."""
    assert exec_(runtime, ["sh", "-c", "exit 3"])["exit_code"] == 3
    killed = exec_(runtime, ["sh", "-c", "kill -9 $$"])
    assert (killed["exit_code"], killed["signal"], killed["timed_out"]) == (None, 9, False)


def test_tail_of_a_large_output_is_kept(runtime: Runtime) -> None:
    """R6.3: the last max_output_bytes (1 MiB by default) of a stream are kept, with exact
    totals and the truncated flag; a tail starting inside a character is cut before it."""
    script = (
        "import sys; out = sys.stdout.buffer; "
        "out.write((b'x' * 1023 + b'\\n') * 3072); out.write(b'the-last-line\\n')"
    )
    result = exec_(runtime, ["python3", "-c", script])
    record = result["capture"]["stdout"]
    assert record == {
        "encoding": "utf-8",
        "total_bytes": 3 * MIB + len("the-last-line\n"),
        "retained_bytes": MIB,
        "truncated": True,
    }
    assert len(result["stdout"]) == MIB
    assert result["stdout"].endswith("x\nthe-last-line\n")

    accents = exec_(runtime, ["python3", "-c", "print('é' * 1000, end='')"], max_output_bytes=1001)
    assert accents["stdout"] == "é" * 500
    assert accents["capture"]["stdout"]["retained_bytes"] == 1000
    assert accents["capture"]["stdout"]["total_bytes"] == 2000


def test_invalid_params_change_nothing(runtime: Runtime) -> None:
    """R6.3: max_output_bytes above 16 MiB, an empty argv or a NUL are invalid_params."""
    base = {"window_id": 1, "pane_id": 1}
    too_big = runtime.error("pane.exec", {**base, "argv": ["true"], "max_output_bytes": 17 * MIB})
    assert too_big["code"] == "invalid_params"
    assert "max_output_bytes" in too_big["message"]
    assert runtime.error("pane.exec", {**base, "argv": []})["code"] == "invalid_params"
    assert runtime.error("pane.exec", {**base, "argv": ["ec\u0000ho"]})["code"] == "invalid_params"
    ok = exec_(runtime, ["true"], max_output_bytes=16 * MIB)
    assert ok["exit_code"] == 0


def test_binary_output_is_base64(runtime: Runtime) -> None:
    """R6.3: kept bytes that are not UTF-8 come back base64-encoded, and decode back."""
    result = exec_(runtime, ["printf", "\\377\\376ab"])
    assert result["capture"]["stdout"]["encoding"] == "base64"
    assert base64.b64decode(result["stdout"]) == b"\xff\xfeab"
    assert result["capture"]["stderr"]["encoding"] == "utf-8"


def test_timeout_kills_the_child_in_time(runtime: Runtime) -> None:
    """R6.3: on timeout the call returns what was captured, timed_out true, within a second
    of the deadline, and the child is gone."""
    started = time.monotonic()
    result = exec_(runtime, ["sh", "-c", "echo partial; exec sleep 30.5"], timeout_ms=1000)
    elapsed = time.monotonic() - started
    assert result["timed_out"] is True
    assert result["stdout"] == "partial\n"
    assert (result["exit_code"], result["signal"]) == (None, 9)
    assert 1.0 <= elapsed < 2.0, elapsed
    assert live_with_argv(runtime, ["sleep", "30.5"]) == []


def test_timeout_kills_setsid_and_nohup_escapees(runtime: Runtime) -> None:
    """R6.3: a timeout kills the whole tree, including `setsid` and `nohup` escapees that
    re-parented away from the child."""
    script = "setsid sleep 300 & nohup sleep 301 >/dev/null 2>&1 & sleep 30"
    started = time.monotonic()
    result = exec_(runtime, ["sh", "-c", script], timeout_ms=1000)
    assert result["timed_out"] is True
    assert time.monotonic() - started < 2.0
    assert live_with_argv(runtime, ["sleep", "300"], ["sleep", "301"], ["sleep", "30"]) == []


def test_leftover_holding_stdout_does_not_hold_the_call(runtime: Runtime) -> None:
    """R6.3: the call returns when the child exits plus at most a 200 ms grace for pipes held
    by leftovers, which are then killed."""
    started = time.monotonic()
    result = exec_(runtime, ["sh", "-c", "sleep 30.25 & echo done"])
    elapsed = time.monotonic() - started
    assert result["stdout"] == "done\n"
    assert result["exit_code"] == 0 and result["timed_out"] is False
    assert elapsed < 1.0, elapsed
    assert live_with_argv(runtime, ["sleep", "30.25"]) == []


def test_stderr_flood_before_stdout_does_not_deadlock(runtime: Runtime) -> None:
    """R6.3: both pipes are drained at once: 2 MiB on stderr before any stdout completes."""
    script = (
        "import sys; sys.stderr.buffer.write(b'e' * (2 * 1024 * 1024)); "
        "sys.stderr.flush(); print('out-after')"
    )
    result = exec_(runtime, ["python3", "-c", script], timeout_ms=20_000)
    assert result["timed_out"] is False
    assert result["stdout"] == "out-after\n"
    assert result["capture"]["stderr"]["total_bytes"] == 2 * MIB
    assert result["capture"]["stderr"]["truncated"] is True


def test_concurrent_execs_keep_the_pane_responsive(runtime: Runtime) -> None:
    """R6.3: 32 concurrent `sleep 1` execs on one pane finish in under 3 s, while a read and
    a prompt to that pane still answer."""
    at_prompt(runtime)
    results: dict[int, dict[str, Any]] = {}

    def one(index: int) -> None:
        results[index] = runtime.call(
            "pane.exec", {"window_id": 1, "pane_id": 1, "argv": ["sleep", "1"]}
        )

    threads = [threading.Thread(target=one, args=(i,)) for i in range(32)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    # Let the execs start before the read and the prompt: poll until every `sleep 1` has been
    # seen running (pids are collected, so one that already ended still counts).
    execs: set[int] = set()

    def all_execs_seen() -> bool:
        for proc in processes_of(runtime.data_dir):
            with contextlib.suppress(psutil.Error):
                if proc.cmdline() == ["sleep", "1"]:
                    execs.add(proc.pid)
        return len(execs) >= 32

    wait_for(all_execs_seen, 5, "the 32 `sleep 1` execs running")
    read_at = time.monotonic()
    runtime.ok("pane.read", {"window_id": 1, "pane_id": 1})
    prompted = runtime.ok("pane.prompt", {"window_id": 1, "pane_id": 1, "text": "echo mid-exec"})
    answered_in = time.monotonic() - read_at
    for thread in threads:
        thread.join(10)
    elapsed = time.monotonic() - started
    assert prompted["submitted"] is True
    assert answered_in < 0.9, answered_in  # before the sleeps end
    assert elapsed < 3.0, elapsed
    assert len(results) == 32
    bad = [r for r in results.values() if not r["ok"] or r["result"]["exit_code"] != 0]
    assert bad == []
    runtime.wait_text(1, "mid-exec")


def test_sixteen_concurrent_trues(runtime: Runtime) -> None:
    """R6.3: 16 concurrent execs of `true` all succeed with exit code 0."""
    results: list[dict[str, Any]] = []
    lock = threading.Lock()

    def one() -> None:
        envelope = runtime.call("pane.exec", {"window_id": 1, "pane_id": 1, "argv": ["true"]})
        with lock:
            results.append(envelope)

    threads = [threading.Thread(target=one) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(results) == 16
    assert [r["ok"] and r["result"]["exit_code"] for r in results] == [0] * 16


def test_spawn_failures_are_action_failed(runtime: Runtime, tmp_path: Any) -> None:
    """R6.3: a program that cannot be started is action_failed with errno and argv0."""
    missing = runtime.error(
        "pane.exec", {"window_id": 1, "pane_id": 1, "argv": ["no-such-program-xyz"]}
    )
    assert missing["code"] == "action_failed"
    assert missing["details"]["errno"] == "ENOENT"
    assert missing["details"]["argv0"] == "no-such-program-xyz"
    script = tmp_path / "not-executable.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    denied = runtime.error("pane.exec", {"window_id": 1, "pane_id": 1, "argv": [str(script)]})
    assert denied["code"] == "action_failed"
    assert denied["details"]["errno"] == "EACCES"


def test_exec_on_an_exited_pane_is_invalid_state(runtime: Runtime) -> None:
    """R6.3, R6.4: an exited pane refuses exec; procs reports no root and no processes."""
    at_prompt(runtime)
    runtime.ok("pane.prompt", {"window_id": 1, "pane_id": 1, "text": "exit"})
    wait_for(lambda: runtime.pane(1)["exited"], 10, "pane 1 exited")
    refused = runtime.error("pane.exec", {"window_id": 1, "pane_id": 1, "argv": ["true"]})
    assert refused["code"] == "invalid_state"
    procs = runtime.ok("pane.procs", {"window_id": 1, "pane_id": 1})
    assert (procs["root_pid"], procs["processes"]) == (None, [])


def test_closing_the_pane_kills_its_running_execs(runtime: Runtime) -> None:
    """R6.3: execs die with their pane: pane.close ends a running exec and its tree."""
    at_prompt(runtime)
    runtime.ok("pane.split", {"window_id": 1, "pane_id": 1, "direction": "right"})
    answers: list[dict[str, Any]] = []
    script = "setsid sleep 302 & sleep 303"
    thread = threading.Thread(
        target=lambda: answers.append(
            runtime.call("pane.exec", {"window_id": 1, "pane_id": 1, "argv": ["sh", "-c", script]})
        )
    )
    thread.start()
    wait_for(lambda: live_with_argv(runtime, ["sleep", "303"]), 10, "the exec running")
    runtime.ok("pane.close", {"window_id": 1, "pane_id": 1})
    thread.join(10)
    assert len(answers) == 1 and answers[0]["ok"] is False, answers
    assert live_with_argv(runtime, ["sleep", "302"], ["sleep", "303"]) == []


# ---- CLI -------------------------------------------------------------------------------------


def test_cli_exec_exit_code(runtime: Runtime) -> None:
    """R6.3: `pebrel pane exec --exit-code` passes the child's status through (124 on timeout,
    128+N on signal N); without it the CLI exits 0 and prints the envelope."""
    three = runtime.cli(
        "pane", "exec", "1", "--window", "1", "--exit-code", "--", "sh", "-c", "exit 3"
    )
    assert three.code == 3, three
    assert three.json["result"]["exit_code"] == 3
    plain = runtime.cli("pane", "exec", "1", "--window", "1", "--", "sh", "-c", "exit 3")
    assert plain.code == 0 and plain.json["ok"] is True
    timed = runtime.cli(
        "pane",
        "exec",
        "1",
        "--window",
        "1",
        "--timeout-ms",
        "300",
        "--exit-code",
        "--",
        "sleep",
        "5",
    )
    assert timed.code == 124, timed
    killed = runtime.cli(
        "ctl", "exec-pane", "--window", "1", "--pane", "1", "--exit-code", "--",
        "sh", "-c", "kill -15 $$",
    )  # fmt: skip
    assert killed.code == 128 + 15, killed
    failed = runtime.cli("pane", "exec", "1", "--window", "1", "--exit-code", "--", "no-such-xyz")
    assert failed.code == 125 and failed.json["error"]["code"] == "action_failed"
    echoed = runtime.cli("ctl", "exec-pane", "--window", "1", "--pane", "1", "--", "echo", "hi")
    assert echoed.code == 0 and echoed.json["result"]["stdout"] == "hi\n"


# ---- pane.procs ------------------------------------------------------------------------------


def test_procs_lists_the_shell_then_its_foreground_job(runtime: Runtime) -> None:
    """R6.4: the real tree under the pane's shell: shell first, then `sleep 30` with its argv,
    marked foreground; after pane.close it is gone."""
    at_prompt(runtime)
    runtime.ok("pane.run", {"window_id": 1, "pane_id": 1, "command": "sleep 30", "wait": False})

    def sleeping() -> dict[str, Any] | None:
        result = runtime.ok("pane.procs", {"window_id": 1, "pane_id": 1})
        if any(p["argv"] == ["sleep", "30"] for p in result["processes"]):
            return result
        return None

    result = wait_for(sleeping, 10, "sleep 30 in pane.procs")
    shell, *rest = result["processes"]
    assert shell["pid"] == result["root_pid"] == runtime.pane(1)["pid"]
    assert shell["foreground"] is False
    sleep = next(p for p in rest if p["argv"] == ["sleep", "30"])
    assert sleep["ppid"] == shell["pid"]
    assert sleep["foreground"] is True
    assert sleep["name"] == "sleep"
    assert sleep["cwd"] == shell["cwd"]
    assert sleep["memory_rss"] > 0 and sleep["create_time"] > 0
    assert isinstance(sleep["cpu_percent"], float)
    cli = runtime.cli("pane", "procs", "1", "--window", "1")
    assert cli.code == 0 and cli.json["result"]["root_pid"] == shell["pid"]
    assert runtime.cli("ctl", "procs", "--window", "1", "--pane", "1").code == 0

    runtime.ok("pane.close", {"window_id": 1, "pane_id": 1, "confirm": True})
    wait_for(lambda: not psutil.pid_exists(sleep["pid"]) or _zombie(sleep["pid"]), 5, "sleep gone")
    gone = runtime.call("pane.procs", {"window_id": 1, "pane_id": 1})
    assert gone["ok"] is False, json.dumps(gone)


def _zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True
