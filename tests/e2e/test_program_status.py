"""Program status (OSC 7501) and OSC 9;4 progress end to end: a program that says what it is
doing moves its pane's task state, the pane record shows what it said, and nothing printed
after the program is gone fakes a state (#20 items 1, 2 and 4).

The program is ``tests/fakes/status_emitter.py``, a stand-in that reports what the test tells
it through a named pipe (nothing is typed into the pane, so no submitted line moves its
state); with ``--gated`` it reports only after the terminal answered the protocol's query,
as Claude Code does."""

from __future__ import annotations

import base64
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pytest

from tests.agent_fixtures import fake_agents_env, started_runtime
from tests.conftest import Runtime, at_prompt, wait_for
from tests.e2e.test_schema import problems
from tests.e2e.test_taskstate import sh_tab

pytestmark = pytest.mark.timeout(120)

EMITTER = Path(__file__).resolve().parent.parent / "fakes" / "status_emitter.py"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


class Emitter:
    def __init__(self, rt: Runtime, pipe: IO[str], pane_id: int) -> None:
        self.rt, self.pipe, self.pane_id, self.sent = rt, pipe, pane_id, 0

    def send(self, command: str) -> None:
        """One command; returns once the emitter has written it (its ``ok N`` is on screen),
        or at once for ``exit``."""
        self.pipe.write(command + "\n")
        self.pipe.flush()
        if command.startswith("exit"):
            return
        self.sent += 1
        self.rt.wait_text(self.pane_id, f"ok {self.sent}")

    def pane(self) -> dict[str, Any]:
        return self.rt.pane(self.pane_id)

    def until(self, what: str, check: Any) -> dict[str, Any]:
        def matched() -> dict[str, Any] | None:
            pane = self.pane()
            return pane if check(pane) else None

        found: dict[str, Any] = wait_for(matched, 10, what)
        return found


@contextmanager
def emitter(rt: Runtime, tmp_path: Path, *args: str, pane_id: int = 1) -> Iterator[Emitter]:
    """The stand-in running in the pane, at its command loop."""
    at_prompt(rt, pane_id)
    fifo = tmp_path / f"commands-{pane_id}"
    os.mkfifo(fifo)
    command = f"{sys.executable} {EMITTER} --fifo {fifo} {' '.join(args)}"
    rt.ok("pane.prompt", {"pane_id": pane_id, "text": command})
    with open(fifo, "w") as pipe:  # opens once the emitter opened its end
        yield Emitter(rt, pipe, pane_id)


def state_of(pane: dict[str, Any]) -> tuple[str, str | None, str | None]:
    status = pane.get("program_status")
    return pane["task_state"], status and status["state"], status and status["kind"]


def test_a_gated_program_moves_its_pane_through_every_state(
    runtime: Runtime, tmp_path: Path
) -> None:
    """The query is answered before DA1 (the gate opens); working, blocked (permission,
    question, auth), done and error map to the task states; idle after done keeps completed;
    the shell's exit code decides once the program is gone, and its records go with it."""
    with emitter(runtime, tmp_path, "--gated") as em:
        runtime.wait_text(1, "gate: yes")
        assert "\\x1b]7501;?\\x1b\\\\" in runtime.read_text(1)  # the same bytes came back
        em.send("7501 state=working:app=build:progress=10:msg=" + b64("compiling"))
        pane = em.until(
            "running", lambda p: p["task_state"] == "running" and p.get("program_status")
        )
        status = pane["program_status"]
        assert (status["state"], status["app"], status["progress"], status["msg"]) == (
            "working",
            "build",
            10,
            "compiling",
        )
        assert (status["source"], status["id"], pane.get("progress")) == ("osc7501", "", 10)
        em.send("7501 state=blocked:kind=permission:msg=" + b64("Deploy to prod?"))
        pane = em.until("attention", lambda p: p["task_state"] == "attention")
        assert pane["program_status"]["msg"] == "Deploy to prod?"
        em.send("7501 state=blocked:kind=question")
        em.until("waiting_input", lambda p: state_of(p) == ("waiting_input", "blocked", "question"))
        em.send("7501 state=blocked:kind=auth")
        em.until("auth", lambda p: state_of(p) == ("waiting_input", "blocked", "auth"))
        em.send("7501 state=done")
        pane = em.until("completed", lambda p: p["task_state"] == "completed")
        seq = pane["state_change_seq"]
        em.send("7501 state=idle")
        pane = em.until("idle reported", lambda p: p["program_status"]["state"] == "idle")
        assert (pane["task_state"], pane["state_change_seq"]) == ("completed", seq)
        em.send("7501 state=error")
        em.until("failed", lambda p: p["task_state"] == "failed")
        em.send("7501 state=working")
        em.until("running again", lambda p: p["task_state"] == "running")
        em.send("exit 3")
        pane = em.until("the exit code", lambda p: p.get("program_status") is None)
        assert pane["task_state"] == "failed"  # exit 3, though it last said working


def test_the_query_is_answered_with_its_own_bytes_before_da1(
    runtime: Runtime, tmp_path: Path
) -> None:
    """The answer to the query is exactly the query's bytes, before the DA1 reply."""
    with emitter(runtime, tmp_path, "--gated"):
        runtime.wait_text(1, "gate: yes")
        text = runtime.read_text(1)
    reply = text.split("reply: ", 1)[1].splitlines()[0]
    assert reply.startswith("b'\\x1b]7501;?\\x1b\\\\\\x1b[?")


def test_child_records_a_blocked_child_and_the_inherited_app(
    runtime: Runtime, tmp_path: Path
) -> None:
    with emitter(runtime, tmp_path) as em:
        em.send("7501 state=working:app=deploy")
        em.send("7501 state=working:id=us-east:progress=40")
        em.send("7501 state=blocked:id=eu-west/db:kind=permission:msg=" + b64("drop table?"))
        pane = em.until("attention", lambda p: p["task_state"] == "attention")
        status = pane["program_status"]
        assert (status["state"], status["id"], status["app"], status["msg"]) == (
            "blocked",
            "eu-west/db",
            "deploy",
            "drop table?",
        )
        ids = [(r["id"], r["state"], r["app"]) for r in status["records"]]
        assert ids == [
            ("", "working", "deploy"),
            ("eu-west/db", "blocked", "deploy"),
            ("us-east", "working", "deploy"),
        ]
        assert status["records_total"] == 3
        assert problems(pane, "#/$defs/pane") == []
        em.send("7501 state=clear:id=eu-west")
        pane = em.until("running", lambda p: p["task_state"] == "running")
        assert [r["id"] for r in pane["program_status"]["records"]] == ["", "us-east"]
        em.send("7501 state=clear")
        pane = em.until("no records", lambda p: p.get("program_status") is None)
        em.send("exit 0")


def test_reports_split_across_reads_and_ended_by_bel_count(
    runtime: Runtime, tmp_path: Path
) -> None:
    with emitter(runtime, tmp_path) as em:
        em.send("split state=blocked:kind=question:msg=" + b64("which branch?"))
        pane = em.until("waiting_input", lambda p: p["task_state"] == "waiting_input")
        assert pane["program_status"]["msg"] == "which branch?"
        em.send("bel state=done")
        em.until("completed", lambda p: p["task_state"] == "completed")
        em.send("exit 0")


MALFORMED = [
    "state=bogus",  # unknown state
    "kind=permission",  # no state
    "state=blocked:id=bad//id",  # an id outside the grammar
    "state=blocked:msg=" + b64("line\nbreak"),  # a control character in decoded text
    "state=blocked:msg=" + "A" * 2736,  # msg over its encoded limit
    "state=blocked:averyveryverylongkey=1",  # a key over 16 bytes
    "state=blocked:msg=QQ=",  # base64 padded wrong
    "state=blocked:title=" + b64("x" * 200),  # title over 192 bytes decoded
    "state=blocked:id=" + "/".join(["a"] * 9),  # deeper than 8 levels
]


def test_malformed_reports_change_nothing(runtime: Runtime, tmp_path: Path) -> None:
    """Each is ignored whole: the pane stays running with the one good record, and the
    worker keeps going (a read and a later good report still work)."""
    with emitter(runtime, tmp_path) as em:
        em.send("7501 state=working:app=good")
        pane = em.until("running", lambda p: p["task_state"] == "running")
        before = (pane["state_change_seq"], pane.get("program_status"))
        for body in MALFORMED:
            em.send(f"7501 {body}")
        em.send("7501 " + "x" * 5000)  # longer than a report may be
        pane = em.pane()
        assert (pane["state_change_seq"], pane.get("program_status")) == before
        em.send("7501 state=done:app=good")
        em.until("completed", lambda p: p["task_state"] == "completed")
        em.send("exit 0")


def test_a_cat_of_recorded_reports_is_at_most_transient(runtime: Runtime, tmp_path: Path) -> None:
    """Printed reports count only while the printing group holds the foreground: once `cat`
    is done the shell's exit code decides and no record is left."""
    log = tmp_path / "recorded.log"
    log.write_text(
        "\x1b]7501;state=blocked:kind=permission:msg=" + b64("approve?") + "\x1b\\\n"
        "\x1b]7501;state=error:id=step\x1b\\\n"
        "\x1b]7501;state=done:id=other\x1b\\\n"
        "\x1b]9;4;2;50\x1b\\\n"
    )
    at_prompt(runtime)
    ran = runtime.run(1, f"cat {log}")
    assert ran["exit_code"] == 0
    pane = runtime.pane(1)
    assert (pane["task_state"], pane.get("program_status"), pane.get("progress")) == (
        "completed",
        None,
        None,
    )
    ran = runtime.run(1, f"cat {log}; false")
    pane = runtime.pane(1)
    assert (pane["task_state"], pane.get("program_status")) == ("failed", None)


def test_osc_9_4_progress_is_lower_evidence_and_the_pane_progress(
    runtime: Runtime, tmp_path: Path
) -> None:
    with emitter(runtime, tmp_path) as em:
        em.send("94 1 40")
        pane = em.until("progress", lambda p: p.get("progress") == 40)
        assert pane["task_state"] == "running"
        assert pane["program_status"]["source"] == "osc9_4"
        assert problems(pane, "#/$defs/pane") == []
        em.send("7501 state=blocked:kind=permission")  # OSC 7501 outranks it
        pane = em.until("attention", lambda p: p["task_state"] == "attention")
        assert (pane["program_status"]["source"], pane.get("progress")) == ("osc7501", 40)
        em.send("7501 state=clear")
        em.until("progress again", lambda p: p["program_status"]["source"] == "osc9_4")
        em.send("94 2 70")
        pane = em.until("failed", lambda p: p["task_state"] == "failed")
        assert pane.get("progress") == 70
        em.send("94 0")
        em.until("removed", lambda p: p.get("program_status") is None)
        em.send("exit 0")


def test_progress_updates_are_rate_limited_and_the_last_one_shows(
    runtime: Runtime, tmp_path: Path
) -> None:
    """2,000 progress reports in a burst move the snapshot revision a few times, not 2,000,
    and the last value is what the pane record shows."""
    with emitter(runtime, tmp_path) as em:
        em.send("7501 state=working:progress=0")
        em.until("running", lambda p: p["task_state"] == "running")
        revision = runtime.snapshot()["revision"]
        seq = em.pane()["state_change_seq"]
        em.send("many 2000")
        pane = em.until("the last progress", lambda p: p.get("progress") == 1999 % 101)
        assert pane["state_change_seq"] == seq  # progress moves no state
        assert runtime.snapshot()["revision"] - revision < 20
        em.send("exit 0")


def test_an_agent_reporting_osc_7501_and_hooks_the_newer_word_wins(tmp_path: Path) -> None:
    """A fake Claude Code (a stand-in) that reports with OSC 7501 once its query is answered:
    its reports are the agent's program evidence; a hook that comes later outranks them, and
    the program's next report outranks the hook again."""
    env = fake_agents_env(tmp_path, FAKE_AGENT_MODE="osc7501", FAKE_AGENT_WORK_MS="100")
    with started_runtime(env) as rt:
        started = rt.ok("agent.start", {"name": "st", "kind": "claude"})
        target = {"agent": "st"}
        ids = {"window_id": started["window_id"], "pane_id": started["pane_id"]}

        def agent_is(state: str, source: str) -> dict[str, Any] | None:
            agent: dict[str, Any] = rt.ok("agent.get", target)
            return agent if (agent["state"], agent["state_source"]) == (state, source) else None

        wait_for(lambda: agent_is("idle", "program"), 10, "the program's idle report")
        rt.ok("agent.prompt", {**target, "text": "hello", "submit": True})
        wait_for(lambda: agent_is("completed", "program"), 10, "the turn's done report")
        status = rt.pane(ids["pane_id"], ids["window_id"])["program_status"]
        assert (status["state"], status["app"], status["msg"]) == (
            "done",
            "fake-claude",
            "final: hello",
        )
        rt.ok("agent.prompt", {**target, "text": "approve this", "submit": True})
        wait_for(lambda: agent_is("attention", "program"), 10, "the blocked report")
        rt.ok("agent.hook", {**ids, "event": "stop", "kind": "claude"})  # newer: it wins
        wait_for(lambda: agent_is("completed", "hook"), 10, "the hook's word")
        rt.ok("agent.prompt", {**target, "text": "y", "submit": True})
        wait_for(lambda: agent_is("completed", "program"), 10, "the program's next done")


SCRIPT = """\
printf '\\033]7501;state=working:app=build:progress=30\\033\\\\'
read _
printf '\\033]7501;state=blocked:kind=question:msg=%s\\033\\\\' "$(printf 'Which branch?' | base64)"
read _
printf '\\033]7501;state=done\\033\\\\'
read _
exit 4
"""


@pytest.mark.parametrize("shell", ["bash", "sh"])
def test_a_script_reports_with_printf_as_the_skill_shows(
    runtime: Runtime, tmp_path: Path, shell: str
) -> None:
    """The Skill's printf lines in a script, in an integrated bash pane and in a `sh` pane
    without integration: running, waiting_input, completed; then the script exits 4: with
    integration the exit code decides (failed), without it the shell's state (idle)."""
    script = tmp_path / "build.sh"
    script.write_text(SCRIPT)
    pane_id = 1 if shell == "bash" else sh_tab(runtime)
    window = runtime.pane(pane_id)["window_id"]
    if shell == "bash":
        at_prompt(runtime, pane_id)
    runtime.ok("pane.prompt", {"window_id": window, "pane_id": pane_id, "text": f"sh {script}"})

    def reached(state: str, reported: str | None) -> dict[str, Any]:
        def seen() -> dict[str, Any] | None:
            pane = runtime.pane(pane_id, window)
            status = pane.get("program_status")
            said = status["state"] if status else None
            return pane if (pane["task_state"], said) == (state, reported) else None

        found: dict[str, Any] = wait_for(seen, 10, f"{state} ({reported})")
        return found

    def go_on() -> None:
        runtime.ok("pane.send_key", {"window_id": window, "pane_id": pane_id, "key": "enter"})

    assert reached("running", "working")["program_status"]["progress"] == 30
    go_on()
    assert reached("waiting_input", "blocked")["program_status"]["msg"] == "Which branch?"
    go_on()
    reached("completed", "done")
    go_on()
    reached("failed" if shell == "bash" else "idle", None)
