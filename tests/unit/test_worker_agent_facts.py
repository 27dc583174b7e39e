"""Agent facts a pane worker reports, driven without a router.

OSC bytes go through the OscScanner and the program-status parser; screen text through
PaneScreen and the screen-rule watch; real processes through the foreground tracker; and one
real worker (PTY + bash, its `send` captured) runs a fake AI CLI end to end.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pebrel import messages as m
from pebrel.screenrules import load_rules
from pebrel.workers.app import Worker
from pebrel.workers.config import WorkerConfig
from pebrel.workers.foreground import ForegroundTracker
from pebrel.workers.osc import OscEvent, OscScanner
from pebrel.workers.program_status import ProgramReport, ProgramStatusParser
from pebrel.workers.screen import PaneScreen
from pebrel.workers.screenwatch import ScreenRuleWatch
from tests.conftest import assert_never_async, poll_until_async, wait_for, wait_for_async

pytestmark = pytest.mark.timeout(60)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


STREAM = (
    b"hello \x1b]1337;SetUserVar=pebrel_agent_session=" + b64("s-9").encode() + b"\x07"
    b"\x1b]1337;SetUserVar=pebrel_agent_state=" + b64("prompt").encode() + b"\x1b\\"
    b"\x1b]1337;SetUserVar=other=" + b64("x").encode() + b"\x07"
    b"\x1b]26;CodeAgent=codex;SessionId=t-1;Status=awaiting-approval\x07"
    b"\x1b]2;title\x07world"
)
EXPECTED = [
    ProgramReport("running", "s-9", None, "osc1337"),
    ProgramReport("attention", "t-1", "codex", "osc26"),
]


def reports_of(pieces: list[bytes]) -> tuple[list[ProgramReport], bytes]:
    scanner, parser = OscScanner(), ProgramStatusParser()
    reports: list[ProgramReport] = []
    text = b""
    for piece in pieces:
        for part in scanner.feed(piece):
            if isinstance(part, OscEvent):
                report = parser.feed(part.code, part.payload)
                if report is not None:
                    reports.append(report)
            else:
                text += part
    return reports, text


@pytest.mark.parametrize("size", [len(STREAM), 1, 2, 7])
def test_program_status_from_byte_stream(size: int) -> None:
    pieces = [STREAM[i : i + size] for i in range(0, len(STREAM), size)]
    reports, text = reports_of(pieces)
    assert reports == EXPECTED
    assert text == b"hello \x1b]2;title\x07world"


def test_program_status_message_round_trip() -> None:
    msg = m.ProgramStatus(
        window_id=1, pane_id=2, state="attention", session_id=None, kind="codex", origin="osc26"
    )
    assert m.decode(m.encode(msg)) == msg


def test_text_on_screen_before_the_command_matches_no_rule() -> None:
    """R9.3: what the screen showed when the shell started the command is not the new
    agent's; rules match again once the agent has drawn anything."""

    async def main() -> None:
        reports: list[tuple[str | None, str | None]] = []
        screen = PaneScreen(60, 8)
        watch = ScreenRuleWatch(
            load_rules([]), screen.visible_text, lambda r, s: reports.append((r, s)), 0.01
        )
        screen.feed(b"Do you want to proceed?\r\n$ claude\r\n")
        watch.command_started()
        watch.set_kind("claude")
        watch.evaluate()
        assert reports == []
        screen.feed(b"\x1b[2J\x1b[HDo you want to proceed?\r\n")
        watch.evaluate()
        assert reports == [("claude.proceed", "attention")]

    asyncio.run(main())


def test_screen_rules_are_coalesced_and_reported_on_change() -> None:
    async def main() -> None:
        reports: list[tuple[str | None, str | None]] = []
        screen = PaneScreen(60, 8)
        reads = 0

        def read_text() -> str:
            nonlocal reads
            reads += 1
            return screen.visible_text()

        watch = ScreenRuleWatch(
            load_rules([]), read_text, lambda r, s: reports.append((r, s)), 0.05
        )
        screen.feed(b"Do you want to proceed?\r\n")
        for _ in range(50):  # many chunks before any agent: nothing is evaluated
            watch.screen_changed()
        await assert_never_async(
            lambda: reads or reports,
            0.1,
            "no agent: an evaluation the chunks armed would run within two 0.05 s debounces",
        )
        watch.set_kind("claude")
        for _ in range(50):
            watch.screen_changed()
        await wait_for_async(lambda: reads, 10, "the first evaluation")
        await assert_never_async(
            lambda: reads > 1,
            0.1,
            "the 50 chunks are one evaluation: a second would run within two debounces",
        )
        assert reports == [("claude.proceed", "attention")]
        screen.feed(b"\x1b[2J\x1b[H> \r\n")
        for _ in range(20):
            watch.screen_changed()
        await wait_for_async(lambda: reads >= 2, 10, "the evaluation of the cleared screen")
        proceed, cleared = ("claude.proceed", "attention"), (None, None)
        assert reports == [proceed, cleared] and reads == 2
        screen.feed(b"(esc to interrupt)")
        watch.screen_changed()
        await wait_for_async(lambda: reads >= 3, 10, "the evaluation of the working line")
        working = ("claude.working", "running")
        assert reports == [proceed, cleared, working]
        watch.set_kind(None)  # the agent left: the match goes with it, at once
        assert reports == [proceed, cleared, working, cleared]
        watch.screen_changed()
        await assert_never_async(
            lambda: reads > 3 or len(reports) > 4,
            0.1,
            "no agent: a change arms no evaluation; one would run within two debounces",
        )
        assert reads == 3 and len(reports) == 4
        watch.close()

    asyncio.run(main())


def wait_foreground(tracker: ForegroundTracker, pgid: int, kind: str | None, program: str) -> None:
    def seen() -> bool:
        tracker.update(pgid, time.monotonic())
        current = tracker.current
        return (current.agent_kind, current.program) == (kind, program)

    wait_for(seen, 5, f"{program} ({kind}) in the foreground", interval_s=0.05)


def write_script(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text(body)
    path.chmod(0o755)
    return path


@pytest.mark.parametrize(
    ("argv", "kind", "program"),
    [
        (["{bin}/claude"], "claude", "claude"),  # a #!/bin/sh script
        (["{bin}/codex.py"], "codex", "codex"),  # python script
        (["sh", "-c", "{bin}/opencode; true"], "opencode", "opencode"),  # child of a wrapper
        (["sleep", "30"], None, "sleep"),
        (["sh", "-c", "sleep 30; echo claude"], None, "sh"),
    ],
    ids=["sh-script", "python-script", "wrapped", "sleep", "sh-c"],
)
def test_tracker_on_real_processes(
    tmp_path: Path, argv: list[str], kind: str | None, program: str
) -> None:
    write_script(tmp_path, "claude", "#!/bin/sh\nsleep 30\n")
    write_script(tmp_path, "opencode", "#!/bin/sh\nsleep 30\n")
    # The scripts sleep 30 s: programs that must stay running while the tracker looks at them.
    write_script(tmp_path, "codex.py", f"#!{sys.executable}\nimport time\ntime.sleep(30)\n")
    proc = subprocess.Popen([a.format(bin=tmp_path) for a in argv], process_group=0)
    try:
        tracker = ForegroundTracker(os.getpid())
        wait_foreground(tracker, proc.pid, kind, program)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


FAKE_CLAUDE = """#!/bin/sh
printf '\\033]1337;SetUserVar=pebrel_agent_session={session}\\007'
printf '\\033]1337;SetUserVar=pebrel_agent_state={state}\\007'
printf '\\033]26;CodeAgent=claude;Status=awaiting-approval\\033\\\\'
printf 'Do you want to proceed?\\n'
read answer
printf 'FAKE %s\\n' READY
sleep 30
"""


def test_worker_reports_agent_facts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    write_script(bin_dir, "claude", FAKE_CLAUDE.format(session=b64("s-1"), state=b64("prompt")))
    config = WorkerConfig(
        endpoint="inproc://unused",
        window_id=1,
        pane_id=1,
        argv=["/bin/bash", "--norc", "--noprofile"],
        integrate=False,
        env={
            "PATH": f"{bin_dir}:/usr/bin:/bin",
            "TERM": "xterm",
            "HOME": str(tmp_path),
            "PS1": "pane$ ",
        },
        cwd=str(tmp_path),
        cols=80,
        rows=24,
        scrollback_lines=100,
        log_path=str(tmp_path / "worker.log"),
        screen_rules=[
            {
                "id": "fake.ready",
                "kind": "claude",
                "state": "waiting_input",
                "literal": "FAKE READY",
            }
        ],
    )
    worker = Worker(config)
    sent: list[m.Message] = []
    monkeypatch.setattr(worker, "send", sent.append)

    def of(kind: type[m.Message]) -> list[m.Message]:
        return [msg for msg in sent if isinstance(msg, kind)]

    async def until(check: Callable[[], bool], what: str) -> None:
        if not await poll_until_async(check, 10):
            pytest.fail(f"timed out waiting for {what}: {sent}")

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.add_reader(worker.pty.fd, worker.on_readable)
        poll = loop.create_task(worker._poll_foreground())
        try:
            await until(lambda: worker.screen.visible_text().endswith("$"), "the prompt")
            await assert_never_async(  # idle: silent
                lambda: of(m.ForegroundChanged) or of(m.ScreenMatched),
                0.3,
                "an idle shell reports nothing; the foreground is looked at every 50 ms",
            )
            worker.writer.queue(1, b"claude\n")
            await until(lambda: len(of(m.ScreenMatched)) >= 1, "the approval rule")
            worker.writer.queue(2, b"y\n")
            await until(lambda: len(of(m.ScreenMatched)) >= 2, "the extra rule")
            fg = of(m.ForegroundChanged)[-1]
            assert isinstance(fg, m.ForegroundChanged)
            os.killpg(fg.foreground_pgid, signal.SIGKILL)
            await until(lambda: worker.shell_in_foreground, "the shell")
        finally:
            poll.cancel()
            loop.remove_reader(worker.pty.fd)
            worker.screen_rules.close()

    try:
        asyncio.run(main())
    finally:
        worker.pty.kill()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(worker.pty.pid, 0)
        worker.pty.close_fd()

    ids = {"window_id": 1, "pane_id": 1}
    agent_fg = [msg for msg in of(m.ForegroundChanged) if isinstance(msg, m.ForegroundChanged)]
    assert [(f.shell_in_foreground, f.agent_kind, f.program) for f in agent_fg][-2:] == [
        (False, "claude", "claude"),
        (True, None, ""),
    ]
    assert of(m.ProgramStatus) == [
        m.ProgramStatus(**ids, state="running", session_id="s-1", kind=None, origin="osc1337"),
        m.ProgramStatus(**ids, state="attention", session_id=None, kind="claude", origin="osc26"),
    ]
    assert of(m.ScreenMatched) == [
        m.ScreenMatched(**ids, rule_id="claude.proceed", state="attention"),
        m.ScreenMatched(**ids, rule_id="fake.ready", state="waiting_input"),
        m.ScreenMatched(**ids, rule_id=None, state=None),
    ]
    # the agent's exit is reported before its screen match is dropped
    order = [type(msg) for msg in sent if isinstance(msg, m.ForegroundChanged | m.ScreenMatched)]
    assert order[-2:] == [m.ForegroundChanged, m.ScreenMatched]
