"""The CLI's params builders: a ctl verb and its resource verb send the same request (R8.1, R8.3).

Each verb runs in-process through click with the one request function replaced by a recorder,
so what is compared is exactly what would go on the wire (method, params, client deadline).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import pytest
from click.testing import CliRunner

from pebrel import model
from pebrel.cli import agent_params, options, output, params
from pebrel.cli.main import main
from pebrel.cli.params import Request
from pebrel.schema import load_schema, validate_params

pytestmark = pytest.mark.timeout(30)

#: What the recorder answers every request with: enough for a submission's follow-up wait.
ANSWER = {
    "window_id": 2,
    "pane_id": 3,
    "state_change_seq": 5,
    "agent_id": "agent-1",
    "generation": 2,
    "runtime_id": "r",
    "revision": 1,
    "windows": [],
}


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Request]]:
    """The requests the CLI sends, recorded instead of sent (no runtime needed)."""
    recorded: list[Request] = []

    def record(req: Request) -> dict[str, Any]:
        recorded.append(req)
        return {"ok": True, "result": dict(ANSWER)}

    monkeypatch.setattr(output, "request", record)
    for name in options.WINDOW_ENV:
        monkeypatch.delenv(name, raising=False)
    yield recorded


def run(argv: str, recorded: list[Request]) -> list[Request]:
    """Run `pebrel ARGV` (split on spaces); the requests it sent."""
    recorded.clear()
    result = CliRunner().invoke(main, argv.split(), prog_name="pebrel")
    assert result.exit_code == 0, (argv, result.output, result.exception)
    return list(recorded)


class Pair(NamedTuple):
    id: str
    resource: str
    ctl: str


PAIRS = (
    Pair("read", "pane read 3 --window 2 --lines 40", "ctl read --window 2 --pane 3 --lines 40"),
    Pair("read-default", "pane read 3", "ctl read --pane 3"),
    Pair(
        "prompt-wait",
        "pane send 3 hi --window 2 --wait running --timeout-ms 500",
        "ctl prompt --window 2 --pane 3 --text hi --wait running --timeout-ms 500",
    ),
    Pair("prompt-bare-wait", "pane send 3 hi --wait", "ctl prompt --pane 3 --text hi --wait"),
    Pair(
        "prompt-no-submit",
        "pane send 3 hi --no-submit",
        "ctl prompt --pane 3 --text hi --no-submit",
    ),
    Pair(
        "wait",
        "pane wait 3 --state idle --after-seq 4 --timeout-ms 100",
        "ctl wait --pane 3 --state idle --after-seq 4 --timeout-ms 100",
    ),
    Pair("wait-default", "pane wait 3", "ctl wait --pane 3"),
    Pair(
        "run",
        "pane run 3 ls --no-wait --timeout-ms 1000",
        "ctl run --pane 3 --command ls --no-wait --timeout-ms 1000",
    ),
    Pair("run-default", "pane run 3 ls", "ctl run --pane 3 --command ls"),
    Pair(
        "split",
        "pane split 3 --direction down --cwd /tmp --shell zsh",
        "ctl split --pane 3 --direction down --cwd /tmp --shell zsh",
    ),
    Pair("pane-focus", "pane focus 3 --window 2", "ctl focus --window 2 --pane 3"),
    Pair("window-focus", "window focus 2 --pane 3", "ctl focus --window 2 --pane 3"),
    Pair(
        "key",
        "pane key 3 c --control --shift --repeat 2",
        "ctl send-key --pane 3 --key c --control --shift --repeat 2",
    ),
    Pair("paste", "pane paste 3 hello --wait", "ctl paste --pane 3 --text hello --wait"),
    Pair(
        "exec",
        "pane exec 3 --timeout-ms 50 --max-output-bytes 10 -- ls -la",
        "ctl exec-pane --pane 3 --timeout-ms 50 --max-output-bytes 10 -- ls -la",
    ),
    Pair("exec-default", "pane exec 3 -- true", "ctl exec-pane --pane 3 -- true"),
    Pair("procs", "pane procs 3 --window 2", "ctl procs --window 2 --pane 3"),
    Pair(
        "new-tab",
        "tab new --window 1 --cwd /x --shell bash --cols 100 --rows 30",
        "ctl new-tab --window 1 --cwd /x --shell bash --cols 100 --rows 30",
    ),
    Pair("agents", "agent list --window 2", "ctl agents --window 2"),
    Pair("agent-get", "agent get bob --generation 2", "ctl agent-get --agent bob --generation 2"),
    Pair(
        "agent-prompt",
        "agent send bob hi --generation 2 --wait settled --timeout-ms 9",
        "ctl agent-prompt --agent bob --generation 2 --text hi --wait settled --timeout-ms 9",
    ),
    Pair(
        "agent-read",
        "agent read bob --generation 2 --lines 10",
        "ctl agent-read --agent bob --generation 2 --lines 10",
    ),
    Pair(
        "agent-wait",
        "agent wait bob --generation 2 --state idle --after-seq 3",
        "ctl agent-wait --agent bob --generation 2 --state idle --after-seq 3",
    ),
)


@pytest.mark.parametrize("pair", PAIRS, ids=[p.id for p in PAIRS])
def test_ctl_and_resource_verb_send_the_same_valid_requests(
    pair: Pair, sent: list[Request]
) -> None:
    """R8.3: `pebrel ctl <verb>` and the resource verb over its method build one request."""
    resource = run(pair.resource, sent)
    assert resource, pair.resource
    assert run(pair.ctl, sent) == resource
    for req in resource:
        validate_params(req.method, req.params)


def test_a_submission_waits_from_its_baseline_with_the_cli_default(sent: list[Request]) -> None:
    """R5.5: `--wait` waits on the submission's pane from its seq, CLI_WAIT_TIMEOUT_MS long."""
    prompt, wait = run("pane send 3 hi --wait", sent)
    assert prompt == Request("pane.prompt", {"pane_id": 3, "text": "hi", "submit": True})
    assert wait.method == "pane.wait"
    assert wait.params == {
        "window_id": 2,
        "pane_id": 3,
        "state": "settled",
        "after_seq": 5,
        "timeout_ms": model.CLI_WAIT_TIMEOUT_MS,
    }
    assert wait.timeout_s == model.CLI_WAIT_TIMEOUT_MS / 1000 + params.WAIT_MARGIN_S
    _, agent_wait = run("agent send bob hi --wait running", sent)
    assert agent_wait.params["agent"] == "agent-1"  # the stable id, not the name
    assert agent_wait.params["after_seq"] == 4  # the running edge itself counts


class Deadline(NamedTuple):
    id: str
    request: Request
    timeout_ms: int


DEADLINES = (
    Deadline("run", params.pane_run(window_id=None, pane_id=1, command="x"), 600_000),
    Deadline("exec", params.pane_exec(window_id=None, pane_id=1, argv=["x"]), 600_000),
    Deadline("wait", params.pane_wait(window_id=None, pane_id=1, state="idle"), 600_000),
    Deadline("start", agent_params.agent_start(name="a", kind="claude"), 60_000),
    Deadline("orchestrate", params.runtime_orchestrate({"steps": []}), 300_000),
    Deadline("orchestrate-file", params.runtime_orchestrate({"timeout_ms": 5}), 5),
    Deadline("orchestrate-option", params.runtime_orchestrate({"timeout_ms": 5}, 7), 7),
)


@pytest.mark.parametrize("case", DEADLINES, ids=[c.id for c in DEADLINES])
def test_a_waiting_method_s_client_deadline_is_its_timeout_plus_the_margin(case: Deadline) -> None:
    """The client waits the method's own timeout (the model's default) plus WAIT_MARGIN_S."""
    assert case.request.timeout_s == case.timeout_ms / 1000 + params.WAIT_MARGIN_S


def builders() -> dict[str, Callable[..., Request]]:
    """Every builder, by name, from both builder modules."""
    found: dict[str, Callable[..., Request]] = {}
    for module in (params, agent_params):
        for name, func in inspect.getmembers(module, inspect.isfunction):
            if func.__module__ == module.__name__ and inspect.signature(func).return_annotation in (
                "Request",
                Request,
            ):
                found[name] = func
    return found


def test_the_cli_has_one_builder_per_protocol_method() -> None:
    """R8.3: the ctl verbs cover the whole protocol, each method once (agent.hook is the
    `pebrel hook` command's own, built by hand so that no input can fail; the collab.* methods
    have one builder, `pebrel collab`'s, checked verb by verb in test_collab_cli.py)."""
    methods = {
        name.replace("_", ".", 1)
        for name in builders()
        if not name.endswith("_after") and name != "prune"
    }
    terminal = {name for name in load_schema()["methods"] if not name.startswith("collab.")}
    assert methods == terminal - {"agent.hook"}


class Limit(NamedTuple):
    id: str
    value: int
    method: str
    field: str
    bound: str


LIMITS = (
    Limit("read-lines", model.READ_MAX_LINES, "pane.read", "lines", "maximum"),
    Limit("cols-min", model.MIN_TAB_COLS, "tab.new", "cols", "minimum"),
    Limit("cols", model.MAX_TAB_COLS, "tab.new", "cols", "maximum"),
    Limit("rows", model.MAX_TAB_ROWS, "window.create", "rows", "maximum"),
    Limit("repeat", model.MAX_KEY_REPEAT, "pane.send_key", "repeat", "maximum"),
    Limit("exec-output", model.EXEC_MAX_OUTPUT_BYTES, "pane.exec", "max_output_bytes", "maximum"),
    Limit("ready", model.MAX_READY_TIMEOUT_MS, "agent.start", "ready_timeout_ms", "maximum"),
    Limit("fork-ready", model.MAX_READY_TIMEOUT_MS, "agent.fork", "ready_timeout_ms", "maximum"),
    Limit(
        "orchestrate",
        model.ORCHESTRATE_MAX_TIMEOUT_MS,
        "runtime.orchestrate",
        "timeout_ms",
        "maximum",
    ),
)


@pytest.mark.parametrize("limit", LIMITS, ids=[lim.id for lim in LIMITS])
def test_the_model_s_limits_are_the_schema_s(limit: Limit) -> None:
    """The CLI's option ranges come from pebrel.model; the schema holds the same bounds."""
    field = load_schema()["methods"][limit.method]["params"]["properties"][limit.field]
    assert field[limit.bound] == limit.value


def test_the_cli_s_choices_are_the_model_s() -> None:
    """The help lists wait states and split directions in its own order, but the same words."""
    assert set(options.WAIT_STATES.choices) == set(model.WAIT_TARGETS)
    assert set(options.DIRECTION_WORDS.choices) == set(model.DIRECTIONS)


def test_from_file_dash_is_a_file_named_dash(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R4.2: `--from-file -` reads the file named "-" (stdin is `--stdin`); `--content -`
    and a policy `--file -` keep reading stdin."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-").write_text("from the file", encoding="utf-8")
    assert options.read_paste_text(None, False, "-") == "from the file"
