"""`pebrel collab` sends the right collab.* method and params for each verb (I1-I4, #16).

Each verb runs in-process through click with the one request function replaced by a recorder
(as tests/unit/test_cli_params.py does), so what is checked is exactly what would go on the
wire; every request is also validated against the schema, so the CLI and the schema agree.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from click.testing import CliRunner, Result

from pebrel.cli import output
from pebrel.cli.main import main
from pebrel.cli.params import Request
from pebrel.client import unavailable_envelope
from pebrel.collab.rights import READS
from pebrel.schema import load_schema, validate_params

pytestmark = pytest.mark.timeout(30)

TSK = "tsk_0123456789abcdef0123"
SES = "ses_00112233445566778899"
ATT = "att_aabbccddeeff00112233"
EVT = "evt_99887766554433221100"
DEC = "dec_0a0b0c0d0e0f10111213"
MSG = "msg_ffeeddccbbaa99887766"
KEY = re.compile(r"^[0-9a-f]{32}$")


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Request]]:
    """The requests the CLI sends, recorded instead of sent; each is answered ok."""
    recorded: list[Request] = []

    def record(req: Request) -> dict[str, Any]:
        recorded.append(req)
        return {"protocol": "nebula.runtime", "version": 1, "id": 1, "ok": True, "result": {}}

    monkeypatch.setattr(output, "request", record)
    yield recorded


def invoke(argv: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(main, shlex.split(argv), input=stdin, prog_name="pebrel")


def run(argv: str, recorded: list[Request], stdin: str | None = None) -> tuple[Request, Any]:
    """Run `pebrel ARGV`; the one request it sent and the envelope it printed."""
    recorded.clear()
    result = invoke(argv, stdin)
    assert result.exit_code == 0, (argv, result.output, result.exception)
    assert len(recorded) == 1
    return recorded[0], json.loads(result.output)


class Case(NamedTuple):
    argv: str
    method: str
    params: dict[str, Any]

    @property
    def write(self) -> bool:
        return self.method not in READS


C = "collab"
CASES = (
    Case(f"{C} capabilities", "collab.capabilities", {}),
    Case(f"{C} group create team-a", "collab.group.create", {"name": "team-a"}),
    Case(f"{C} group list", "collab.group.list", {}),
    Case(f"{C} group show team-a", "collab.group.show", {"group": "team-a"}),
    Case(f"{C} group add team-a {SES}", "collab.group.add", {"group": "team-a", "session": SES}),
    Case(
        f"{C} group remove grp_00aa {SES}",
        "collab.group.remove",
        {"group": "grp_00aa", "session": SES},
    ),
    Case(
        f"{C} session register --agent demo --group team-a",
        "collab.session.register",
        {"agent": "demo", "group": "team-a"},
    ),
    Case(f"{C} session register --agent demo", "collab.session.register", {"agent": "demo"}),
    Case(f"{C} session get {SES}", "collab.session.get", {"session": SES}),
    Case(f"{C} session list", "collab.session.list", {}),
    Case(
        f"{C} session create --launch-profile claude --cwd /srv/work --group team-a",
        "collab.session.create",
        {"launch_profile": "claude", "cwd": "/srv/work", "group": "team-a"},
    ),
    Case(
        f"{C} session create --launch-profile claude --cwd /srv/work --group g --integration p",
        "collab.session.create",
        {"launch_profile": "claude", "cwd": "/srv/work", "group": "g", "integration": "p"},
    ),
    Case(f"{C} session restore {SES}", "collab.session.restore", {"session": SES}),
    Case(f"{C} session list --group team-a", "collab.session.list", {"group": "team-a"}),
    Case(
        f"{C} task create --group team-a --title 'Fix it' --content 'the details'",
        "collab.task.create",
        {"group": "team-a", "title": "Fix it", "content": "the details"},
    ),
    Case(
        f"{C} task create --group team-a --title T --content C --assignee {SES} "
        """--metadata '{"ticket": 7}'""",
        "collab.task.create",
        {
            "group": "team-a",
            "title": "T",
            "content": "C",
            "assignee": SES,
            "metadata": {"ticket": 7},
        },
    ),
    Case(
        f"{C} task create --group team-a --title T --content C --source external "
        """--external-actor '{"id": "u-1"}' --external-message-id m-9""",
        "collab.task.create",
        {
            "group": "team-a",
            "title": "T",
            "content": "C",
            "source": "external",
            "external_actor": {"id": "u-1"},
            "external_message_id": "m-9",
        },
    ),
    Case(
        f"{C} task comment {TSK} --content why "
        ""
        """--external-actor '{"id": "u-1"}' --external-message-id m-10 --metadata '{"a": 1}'""",
        "collab.task.comment",
        {
            "task": TSK,
            "content": "why",
            "external_actor": {"id": "u-1"},
            "external_message_id": "m-10",
            "metadata": {"a": 1},
        },
    ),
    Case(
        f"{C} task revise {TSK} --revision 2 --content more --external-message-id m-11",
        "collab.task.revise",
        {"task": TSK, "revision": 2, "content": "more", "external_message_id": "m-11"},
    ),
    Case(
        f"{C} task answer {TSK} --decision {DEC} --content yes --metadata '{{}}'",
        "collab.task.answer",
        {"task": TSK, "decision": DEC, "content": "yes", "metadata": {}},
    ),
    Case(
        f"""{C} task assign {TSK} --assignee {SES} --revision 3 --external-actor '{{"id": 1}}'""",
        "collab.task.assign",
        {"task": TSK, "assignee": SES, "revision": 3, "external_actor": {"id": 1}},
    ),
    Case(f"{C} task get {TSK}", "collab.task.get", {"task": TSK}),
    Case(f"{C} task list", "collab.task.list", {}),
    Case(
        f"{C} task list --group team-a --status accepted",
        "collab.task.list",
        {"group": "team-a", "status": "accepted"},
    ),
    Case(
        f"{C} task assign {TSK} --assignee {SES} --revision 3",
        "collab.task.assign",
        {"task": TSK, "assignee": SES, "revision": 3},
    ),
    Case(
        f"{C} task comment {TSK} --content 'why?'",
        "collab.task.comment",
        {"task": TSK, "content": "why?"},
    ),
    Case(
        f"{C} task revise {TSK} --revision 2 --content 'also docs'",
        "collab.task.revise",
        {"task": TSK, "revision": 2, "content": "also docs"},
    ),
    Case(
        f"{C} task question {TSK} --content 'which branch?'",
        "collab.task.question",
        {"task": TSK, "content": "which branch?"},
    ),
    Case(
        f"{C} task answer {TSK} --decision {DEC} --content main",
        "collab.task.answer",
        {"task": TSK, "decision": DEC, "content": "main"},
    ),
    Case(
        f"{C} task respond {TSK} --attempt {ATT} --to-event {EVT} --content because",
        "collab.task.respond",
        {"task": TSK, "attempt": ATT, "to_event": EVT, "content": "because"},
    ),
    Case(
        f"{C} task report {TSK} --status ack", "collab.task.report", {"task": TSK, "status": "ack"}
    ),
    Case(
        f"{C} task report {TSK} --status complete --content done --summary 'all green' "
        f"""--evidence '["pytest: 12 passed"]' --attempt {ATT}""",
        "collab.task.report",
        {
            "task": TSK,
            "status": "complete",
            "content": "done",
            "summary": "all green",
            "evidence": ["pytest: 12 passed"],
            "attempt": ATT,
        },
    ),
    Case(
        f"{C} task submit-plan {TSK} --content 'step 1'",
        "collab.task.submit_plan",
        {"task": TSK, "content": "step 1"},
    ),
    Case(f"{C} task approve-plan {TSK}", "collab.task.approve_plan", {"task": TSK}),
    Case(f"{C} task accept {TSK}", "collab.task.accept", {"task": TSK}),
    Case(f"{C} task close {TSK}", "collab.task.close", {"task": TSK}),
    Case(f"{C} task reopen {TSK}", "collab.task.reopen", {"task": TSK}),
    Case(f"{C} message get {MSG}", "collab.message.get", {"message": MSG}),
    Case(
        f"{C} reply {MSG} --content thanks", "collab.reply", {"message": MSG, "content": "thanks"}
    ),
    Case(
        f"""{C} reply {MSG} --content done --status complete --evidence '{{"ok": true}}'""",
        "collab.reply",
        {"message": MSG, "content": "done", "status": "complete", "evidence": {"ok": True}},
    ),
    Case(f"{C} events list --group team-a", "collab.events.list", {"group": "team-a"}),
    Case(
        f"{C} events list --group team-a --after 10 --limit 5",
        "collab.events.list",
        {"group": "team-a", "after": 10, "limit": 5},
    ),
)


@pytest.mark.parametrize("case", CASES, ids=[case.argv[7:40] for case in CASES])
def test_each_verb_sends_its_method_and_params(case: Case, sent: list[Request]) -> None:
    """I1-I4: the method and exactly the params given (plus a key on a write), schema-valid."""
    req, printed = run(case.argv, sent)
    assert req.method == case.method
    params = dict(req.params)
    key = params.pop("idempotency_key", None)
    assert params == case.params
    validate_params(req.method, req.params)
    if case.write:
        assert key is not None and KEY.match(key)
        assert printed["result"]["idempotency_key"] == key
    else:
        assert key is None
        assert "idempotency_key" not in printed["result"]


def test_every_collab_method_has_a_verb() -> None:
    """#16: the verbs above cover every collab.* method of the schema, and only those (the
    `collab.integration.*` admin methods are `pebrel integration`'s: test_integration_cli.py)."""
    methods = {
        name
        for name in load_schema()["methods"]
        if name.startswith("collab.") and not name.startswith("collab.integration.")
    }
    assert {case.method for case in CASES} == methods
    assert methods > {name for name in READS if not name.startswith("collab.integration.")}


def test_a_generated_key_is_new_each_time_and_a_given_one_is_sent(sent: list[Request]) -> None:
    """I3.1: without --idempotency-key each write gets a fresh key; a given key is sent as is
    and printed back, so a retry repeats the same write."""
    argv = f"{C} task comment {TSK} --content again"
    first, _ = run(argv, sent)
    second, _ = run(argv, sent)
    assert first.params["idempotency_key"] != second.params["idempotency_key"]
    given, printed = run(f"{argv} --idempotency-key retry-1", sent)
    assert given.params["idempotency_key"] == "retry-1"
    assert printed["result"]["idempotency_key"] == "retry-1"


def test_the_acting_session_goes_with_a_session_s_writes(sent: list[Request]) -> None:
    """I3.2: `collab --session ID` is the acting session of the verbs that take one; a read
    sends none (the method acts as nobody)."""
    req, _ = run(f"{C} --session {SES} task report {TSK} --status working", sent)
    assert req.params["session"] == SES
    req, _ = run(f"{C} --session {SES} reply {MSG} --content ok", sent)
    assert req.params["session"] == SES
    req, _ = run(f"{C} --session {SES} task get {TSK}", sent)
    assert "session" not in req.params
    req, _ = run(f"{C} task report {TSK} --status working", sent)
    assert "session" not in req.params  # the service resolves the pane's session


def test_content_from_a_file_and_from_stdin(sent: list[Request], tmp_path: Path) -> None:
    """--content-file FILE, --content-file - and --content - read the text (the CLI reads it)."""
    text = "line one\nline two: ünïcode\n"
    path = tmp_path / "task.md"
    path.write_text(text, encoding="utf-8")
    req, _ = run(f"{C} task create --group g --title T --content-file {path}", sent)
    assert req.params["content"] == text
    req, _ = run(f"{C} task comment {TSK} --content-file -", sent, stdin=text)
    assert req.params["content"] == text
    req, _ = run(f"{C} task respond {TSK} --attempt {ATT} --to-event {EVT} --content -", sent, text)
    assert req.params["content"] == text
    req, _ = run(f"{C} task report {TSK} --status complete --content-file {path}", sent)
    assert req.params["content"] == text


USAGE_ERRORS = (
    f"{C} task create --group g --title T",
    f"{C} task create --group g --title T --content a --content-file /etc/hostname",
    f"{C} task create --group g --title T --content-file /no/such/file",
    f"{C} task create --group g --title T --content a --metadata 'not json'",
    f"{C} task create --group g --title T --content a --metadata '[1, 2]'",
    f"{C} task create --group g --title T --content a --external-actor '[1]'",
    f"{C} task comment {TSK} --content a --external-actor 'nope'",
    f"{C} task report {TSK} --status complete --evidence '{{broken'",
    f"{C} task report {TSK} --status done",
    f"{C} task report {TSK}",
    f"{C} task assign {TSK} --assignee {SES} --revision 0",
    f"{C} task assign {TSK} --assignee {SES}",
    f"{C} task comment {TSK}",
    f"{C} task comment {TSK} --content hi --idempotency-key 'has space'",
    f"{C} task comment {TSK} --content hi --idempotency-key {'k' * 129}",
    f"{C} task list --status pending",
    f"{C} task respond {TSK} --content x",
    f"{C} reply {MSG} --content x --evidence '[1]'",
    f"{C} events list",
    f"{C} events list --group g --limit 0",
    f"{C} events list --group g --limit 1001",
    f"{C} --session {SES} task accept {TSK}",
    f"{C} --session {SES} task approve-plan {TSK}",
    f"{C} --session {SES} group create team-b",
    f"{C} --session {SES} session register --agent demo",
    f"{C} --session {SES} session restore {SES}",
    f"{C} session create --cwd /srv/work",
    f"{C} task frobnicate {TSK}",
    f"{C} --principal p capabilities",
)


@pytest.mark.parametrize("argv", USAGE_ERRORS)
def test_usage_errors_exit_2_and_send_nothing(argv: str, sent: list[Request]) -> None:
    result = invoke(argv)
    assert result.exit_code == 2, (argv, result.output)
    assert sent == []


def test_an_error_envelope_exits_1_with_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refused write prints the envelope (exit 1) with the key it was sent with."""
    error = {
        "code": "TASK_CHANGED",
        "message": "revision 3 is not 2",
        "details": {"retryable": False},
    }
    monkeypatch.setattr(
        output,
        "request",
        lambda req: {
            "protocol": "nebula.runtime",
            "version": 1,
            "id": 1,
            "ok": False,
            "error": error,
        },
    )
    result = invoke(f"{C} task revise {TSK} --revision 2 --content x --idempotency-key k1")
    assert result.exit_code == 1
    printed = json.loads(result.output)
    assert printed["error"]["code"] == "TASK_CHANGED"
    assert printed["error"]["details"] == {"retryable": False, "idempotency_key": "k1"}


def test_no_runtime_exits_3_with_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """No runtime: exit 3, and the generated key is printed so the write can be retried."""

    def unreachable(req: Request) -> dict[str, Any]:
        raise output.Unreachable(unavailable_envelope("no runtime is running"))

    monkeypatch.setattr(output, "request", unreachable)
    result = invoke(f"{C} task close {TSK}")
    assert result.exit_code == 3
    printed = json.loads(result.output)
    assert KEY.match(printed["error"]["details"]["idempotency_key"])
    result = invoke(f"{C} task get {TSK}")
    assert result.exit_code == 3
    assert "idempotency_key" not in json.loads(result.output)["error"]["details"]
