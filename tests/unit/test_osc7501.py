"""OSC 7501 (Program Status Protocol) and OSC 9;4 reading, the record table, and a pane's
status records in its worker (#20). End to end: ``tests/e2e/test_program_status.py``."""

from __future__ import annotations

import asyncio
import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pebrel import messages as m
from pebrel.workers import status_records
from pebrel.workers.osc7501 import (
    MAX_RECORDS,
    QUERY_REPLY,
    Clear,
    Progress,
    Query,
    Record,
    StatusTable,
    parse,
    parse_progress,
)
from pebrel.workers.status_records import StatusRecords
from tests.conftest import wait_for_async

pytestmark = pytest.mark.timeout(30)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_a_full_report_is_read() -> None:
    body = f"state=blocked:kind=permission:progress=40:app=claude-code:id=a/b:msg={b64('Ok?')}"
    assert parse(body) == Record(
        id="a/b", state="blocked", kind="permission", progress=40, app="claude-code", msg="Ok?"
    )
    assert parse("state=working:title=" + b64("Build")) == Record("", "working", title="Build")


def test_the_query_and_clear() -> None:
    assert parse("?") == Query()
    assert QUERY_REPLY == b"\x1b]7501;?\x1b\\"
    assert parse("state=clear") == Clear("")
    assert parse("state=clear:id=us-east") == Clear("us-east")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # kind only with blocked; progress only with working or blocked, 0-100
        ("state=done:kind=permission", Record("", "done")),
        ("state=idle:progress=5", Record("", "idle")),
        ("state=working:progress=101", Record("", "working")),
        ("state=working:progress=x", Record("", "working")),
        ("state=blocked:kind=other", Record("", "blocked")),
        # a malformed pair is skipped, an unknown key ignored, the last duplicate wins
        ("state=working:nonsense:msg=%%%", Record("", "working")),
        ("state=working:Upper=1:future=ok", Record("", "working")),
        ("state=idle:state=working", Record("", "working")),
        # an app outside its grammar is left out
        ("state=working:app=a,b", Record("", "working")),
        # base64 without padding decodes
        ("state=working:msg=T2s", Record("", "working", msg="Ok")),
    ],
)
def test_pair_rules(body: str, expected: Record) -> None:
    assert parse(body) == expected


@pytest.mark.parametrize(
    "body",
    [
        "kind=permission",  # no state
        "state=bogus",
        "state=working:id=a//b",
        "state=working:id=" + "/".join(["a"] * 9),  # deeper than 8
        "state=working:id=" + "a" * 33,  # a segment over 32
        "state=working:msg=QQ=",  # padding that does not fill the group
        "state=working:msg=" + b64("a\nb"),  # a control character
        "state=working:msg=" + b64("a\x85b"),  # a C1 control
        "state=working:msg=" + base64.b64encode(b"\xff\xfe").decode(),  # not UTF-8
        "state=working:msg=" + b64("x" * 2049),  # over 2,048 decoded
        "state=working:msg=" + "A" * 2736,  # over 2,732 encoded
        "state=working:title=" + b64("x" * 193),  # over 192 decoded
        "state=working:abcdefghijklmnopq=1",  # a key over 16 bytes
        "state=working:app=" + "a" * 33,
        "state=working:msg=" + "A" * 4090,  # the sequence over 4,096 bytes
    ],
)
def test_reports_that_are_ignored_whole(body: str) -> None:
    assert parse(body) is None


@given(st.text(max_size=300))
def test_any_body_parses_or_is_ignored(body: str) -> None:
    """Nothing a program prints can raise out of the parser."""
    result = parse(body)
    assert result is None or isinstance(result, (Record, Clear, Query))


def test_osc_9_4_forms() -> None:
    assert parse_progress("4;1;40") == Progress("working", 40)
    assert parse_progress("4;3") == Progress("working", None)
    assert parse_progress("4;4;10") == Progress("working", 10)
    assert parse_progress("4;2;70") == Progress("error", 70)
    assert parse_progress("4;0") == Progress(None, None)
    assert parse_progress("4;1;400") == Progress("working", None)
    assert parse_progress("Build finished") is None  # a notification, not progress
    assert parse_progress("4;9;1") is None


def test_the_table_replaces_clears_subtrees_and_evicts_the_oldest() -> None:
    table = StatusTable(capacity=3)
    assert table.apply(Record("", "working", app="deploy"))
    assert table.apply(Record("eu", "working"))
    assert table.apply(Record("eu/db", "blocked", kind="question"))
    assert not table.apply(Record("eu/db", "blocked", kind="question"))  # the same again
    assert table.app_of(table.records["eu/db"]) == "deploy"  # inherited from the root
    assert table.apply(Record("eu", "done"))  # replaced whole, now the newest
    assert table.apply(Record("us", "working"))  # over capacity: the root (oldest) goes
    assert list(table.records) == ["eu/db", "eu", "us"]
    assert table.apply(Clear("eu"))
    assert list(table.records) == ["us"]
    assert not table.apply(Clear("nothing"))
    assert table.apply(Clear(""))
    assert not table.records
    assert StatusTable().capacity == MAX_RECORDS


class Pane:
    """A StatusRecords with a settable foreground group and what it wrote and sent."""

    def __init__(self) -> None:
        self.pgid = 100
        self.answers: list[bytes] = []
        self.sent: list[m.ProgramRecords] = []
        self.status = StatusRecords(
            {"window_id": 1, "pane_id": 1}, lambda: self.pgid, self.answers.append, self.send
        )

    def send(self, message: m.Message) -> None:
        assert isinstance(message, m.ProgramRecords)
        self.sent.append(message)

    def states(self) -> list[list[str]]:
        return [[r["state"] for r in message.records] for message in self.sent]


def test_the_query_is_answered_and_nothing_else_is_written() -> None:
    pane = Pane()
    pane.status.osc(7501, "?")
    pane.status.osc(7501, "state=working")
    assert pane.answers == [QUERY_REPLY]
    assert pane.states() == [["working"]]


def test_records_end_when_their_group_leaves_the_foreground() -> None:
    pane = Pane()
    pane.status.osc(7501, "state=blocked:kind=permission")
    pane.status.osc(9, "4;1;30")
    pane.status.foreground(100)  # still the owner: nothing
    assert len(pane.sent) == 2
    pane.status.foreground(200)
    last = pane.sent[-1]
    assert (last.records, last.progress, last.left) == ([], None, True)
    pane.status.foreground(300)  # nothing held: nothing sent
    assert len(pane.sent) == 3


def test_a_report_under_another_group_ends_the_earlier_groups_records_first() -> None:
    pane = Pane()
    pane.status.osc(7501, "state=done")
    pane.pgid = 200
    pane.status.osc(7501, "state=working:id=job")
    assert [(msg.left, [r["id"] for r in msg.records]) for msg in pane.sent] == [
        (False, [""]),
        (True, []),
        (False, ["job"]),
    ]


def test_a_new_prompt_ends_working_and_blocked_records_only() -> None:
    pane = Pane()
    for body in ("state=working", "state=done:id=a", "state=blocked:id=b", "state=idle:id=c"):
        pane.status.osc(7501, body)
    pane.status.prompt()
    assert pane.states()[-1] == ["done", "idle"]


def test_a_commands_end_ends_every_record_the_shell_itself_reported() -> None:
    """Read while the shell held the foreground (a builtin printf, a cat that just ended):
    the command is over at the prompt, whatever the records said."""
    pane = Pane()
    pane.status._shell_pgid = 100
    pane.status.osc(7501, "state=done")
    pane.status.osc(7501, "state=error:id=x")
    pane.status.command_ended()
    assert (pane.states()[-1], pane.sent[-1].left) == ([], True)
    pane.pgid = 200  # a program's own records stay until it leaves the foreground
    pane.status.osc(7501, "state=done")
    pane.status.command_ended()
    assert pane.states()[-1] == ["done"]


def test_updates_that_move_no_state_go_out_at_most_twice_a_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(status_records, "UPDATE_INTERVAL_S", 0.2)

    async def main() -> None:
        pane = Pane()
        pane.status.osc(7501, "state=working:progress=0")
        for percent in range(1, 100):
            pane.status.osc(7501, f"state=working:progress={percent}")
        assert len(pane.sent) == 1  # the rest is held
        await wait_for_async(lambda: len(pane.sent) == 2, 5, "the held update")
        assert pane.sent[-1].records[0]["progress"] == 99
        pane.status.osc(7501, "state=working:progress=100")
        pane.status.osc(7501, "state=blocked:kind=question")  # a state change: at once
        assert len(pane.sent) == 3 and pane.sent[-1].records[0]["state"] == "blocked"
        await asyncio.sleep(0.3)
        assert len(pane.sent) == 3  # the held update went out with the state change

    asyncio.run(main())


def test_malformed_reports_send_nothing() -> None:
    pane = Pane()
    for body in ("state=bogus", "state=working:msg=QQ=", "x" * 5000, "state=working:id=a//b"):
        pane.status.osc(7501, body)
    pane.status.osc(9, "Build finished")
    assert pane.sent == [] and pane.answers == []
