"""A hypothesis rule-based state machine that drives one real runtime (R1.5, R2.2, R3).

Every pane runs `cat`: the runtime starts with ``default_shell = "cat"`` (a settings.toml
profile), and the `shell` a creating request may name is one of the profiles ``cat``,
``false`` (exits at once), ``gone`` (no such program) or an unknown id. No shell ever takes a
fuzzed line; pane.exec runs only ``true``, ``false`` or ``printf``.

Each example starts from one fresh window (the previous example's windows were closed in its
teardown) and re-syncs its :class:`Model` from a snapshot; its steps are requests, valid or
mutated (tests/fuzz/schema_strategies.py), sent one at a time on one authenticated
connection, and kills of a pane's `cat`. After every step (see :meth:`RuntimeMachine.step` and
:meth:`RuntimeMachine.after_every_step`):

- the request got exactly one well-formed, strict-JSON envelope whose error code the schema
  lists for its method (tests/fuzz/envelopes.py), never `internal_error`;
- `revision` never went back; after a refused request the snapshot's :func:`stable` view is
  as before, and the revision too when nothing else changed;
- the windows, tabs, panes, custom names and zoom are the model's;
- the router, the frontend and the fork server keep their pids; the fork server's children
  are the model's pane workers plus one spare; every pane's `cat` runs under its worker until
  the pane is reported exited; an exited pane never comes back; a `cat` that died is reported
  exited.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from pebrel import entrypoints
from pebrel.schema import load_schema
from tests.conftest import Runtime, base_env, poll_until, started_runtime, wait_for
from tests.e2e.test_robustness import router_children
from tests.e2e.test_transport import Wire, _authenticated
from tests.fuzz.envelopes import check, parse
from tests.fuzz.schema_strategies import SHORT_WAIT, bounded, mutated_params, valid_params
from tests.fuzz.stateful_model import Model, panes_of, stable, structure, without_revision

SETTINGS_TOML = """\
default_shell = "cat"

[profiles.cat]
argv = ["cat", "-"]

[profiles.false]
argv = ["false", "-"]

[profiles.gone]
argv = ["/nonexistent/pebrel-fuzz-program"]
"""
SHELLS = {"enum": ["cat", "false", "gone", "no-such-shell"]}
CWDS = {"enum": ["/", "/nonexistent/pebrel-fuzz", "relative/dir"]}
CREATE = {"shell": SHELLS, "cwd": CWDS}
SHORT_RUN = {"type": "integer", "minimum": 1, "maximum": 2000}
#: What each rule draws from, with the fields whose drawn values are replaced (harmless
#: programs, short waits, `cat` profiles).
CREATING: dict[str, dict[str, Any]] = {
    "window.create": CREATE,
    "tab.new": CREATE,
    "pane.split": CREATE,
}
NEW_WINDOW = {"window.create": CREATE}
CLOSING: dict[str, dict[str, Any]] = {"pane.close": {}, "tab.close": {}, "window.close": {}}
LAYOUT: dict[str, dict[str, Any]] = {
    "pane.zoom": {},
    "pane.resize": {},
    "window.focus": {},
    "tab.rename": {},
    "tab.move": {},
}
INPUT: dict[str, dict[str, Any]] = {
    "pane.prompt": {},
    "pane.paste": {},
    "pane.send_key": {},
    "pane.run": {"timeout_ms": SHORT_RUN},
}
EXEC: dict[str, dict[str, Any]] = {
    "pane.exec": {
        "argv": {"enum": [["true"], ["false"], ["printf", "%s\\n", "x", "y"]]},
        "timeout_ms": SHORT_RUN,
    }
}
OBSERVING: dict[str, dict[str, Any]] = {
    "runtime.describe": {},
    "runtime.snapshot": {},
    "pane.read": {},
    "pane.procs": {},
    "pane.wait": {"timeout_ms": SHORT_WAIT},
    "agents.list": {},
    "agent.get": {},
    "agent.read": {},
    "agent.wait": {"timeout_ms": SHORT_WAIT},
    "agent.hook": {},
    "agent.prompt": {},
    "agent.paste": {},
}
#: Requests that may still run when a close of their pane arrives.
RACING: dict[str, dict[str, Any]] = {
    "pane.wait": {"timeout_ms": SHORT_WAIT, "after_seq": {"const": 1}},
    "pane.exec": {"argv": {"enum": [["sleep", "0.2"], ["printf", "x"]]}, "timeout_ms": SHORT_RUN},
    "pane.prompt": {},
    "pane.read": {},
    "pane.procs": {},
}
OVERRIDES = {**CREATING, **CLOSING, **LAYOUT, **INPUT, **EXEC, **OBSERVING}
#: More panes than this and the creating rule rests (each pane is a worker and a `cat`).
MAX_PANES = 10
ANSWER_DEADLINE_S = 15.0
SETTLE_S = 10.0
TARGET_KEYS = ("window_id", "tab_index", "pane_id")


@contextlib.contextmanager
def cat_runtime(tmp: Path) -> Iterator[Runtime]:
    """A runtime whose every pane runs `cat` (see the module doc), stopped and checked after."""
    env = base_env(tmp)
    (Path(env["PEBREL_DATA_DIR"]) / "settings.toml").write_text(SETTINGS_TOML)
    with started_runtime(env) as rt:
        yield rt


class Harness:
    """The runtime shared by every example, and what must hold across examples."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.core = self.core_pids()
        self.revision = 0
        #: How many answers of each (method, outcome) the run saw (for the run's summary).
        self.outcomes: Counter[str] = Counter()

    def core_pids(self) -> dict[str, int]:
        pids = {"router": self.rt.pid}
        for module in (entrypoints.ADAPTER, entrypoints.FORKSERVER):
            (child,) = router_children(self.rt, module)
            pids[module] = child.pid
        return pids


def _properties(method: str) -> dict[str, Any]:
    props: dict[str, Any] = load_schema()["methods"][method]["params"].get("properties", {})
    return props


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class RuntimeMachine(RuleBasedStateMachine):
    """One example: steps against the shared runtime, checked against a :class:`Model`."""

    harness: Harness  # set by the test before the machine runs

    def __init__(self) -> None:
        super().__init__()
        self.rt = self.harness.rt
        self.wire: Wire = _authenticated(self.rt)
        self.next_id = 0
        self.last = self.snapshot()
        if not self.last["windows"]:
            self.expect_ok("window.create", {})
            self.last = self.snapshot()
        self.model = Model.from_snapshot(self.last)
        self.learn(self.last)

    # -- the wire ------------------------------------------------------------------------------
    def request(self, method: str, params: Any) -> dict[str, Any]:
        """Send one request; its answer must be one well-formed envelope."""
        (answer,) = self.pipelined([(method, params)])
        return answer

    def pipelined(self, requests: list[tuple[str, Any]]) -> list[dict[str, Any]]:
        """Send requests in one write; each must get exactly one well-formed envelope (in
        any order). Returns the answers in the requests' order."""
        pending: dict[Any, str] = {}
        ids = []
        lines = b""
        for method, params in requests:
            self.next_id += 1
            ids.append(self.next_id)
            pending[self.next_id] = method
            lines += self.wire.request_line(method, params, self.next_id)
        self.wire.send_raw(lines)
        answers: dict[Any, dict[str, Any]] = {}
        while pending:
            line = self.wire.read_line(ANSWER_DEADLINE_S)
            assert line.endswith(b"\n"), f"connection closed; waiting for {pending}"
            answer = parse(line)
            check(answer, pending)
            answers[answer["id"]] = answer
        return [answers[request_id] for request_id in ids]

    def expect_ok(self, method: str, params: Any) -> dict[str, Any]:
        answer = self.request(method, params)
        assert answer["ok"], answer
        result: dict[str, Any] = answer["result"]
        return result

    def snapshot(self) -> dict[str, Any]:
        snapshot = self.expect_ok("runtime.snapshot", {})
        assert snapshot["revision"] >= self.harness.revision, "the revision went back"
        self.harness.revision = snapshot["revision"]
        return snapshot

    # -- one step ------------------------------------------------------------------------------
    def step(self, method: str, params: Any) -> dict[str, Any]:
        """Send a request; follow it in the model if accepted, else check nothing changed."""
        (answer,) = self.steps([(method, params)])
        return answer

    def steps(self, requests: list[tuple[str, Any]]) -> list[dict[str, Any]]:
        """:meth:`step` for requests pipelined on the connection (at most one of them may
        change what the model follows: which ran first is not known)."""
        before = self.last
        answers = self.pipelined(requests)
        after = self.snapshot()
        for (method, params), answer in zip(requests, answers, strict=True):
            outcome = "ok" if answer["ok"] else answer["error"]["code"]
            self.harness.outcomes[f"{method}: {outcome}"] += 1
            if answer["ok"]:
                self.model.apply(method, params, answer["result"])
        if not any(answer["ok"] for answer in answers):
            refused = [method for method, _ in requests]
            assert stable(after) == stable(before), f"refused {refused} changed the state"
            if without_revision(after) == without_revision(before):
                assert after["revision"] == before["revision"], "revision moved for nothing"
        self.last = after
        self.learn(after)
        return answers

    def learn(self, snapshot: dict[str, Any]) -> None:
        """Note the shell and worker of panes seen for the first time; check that a pane's
        shell pid never changes and that an exited pane stays exited."""
        for key, pane in panes_of(snapshot).items():
            known = self.model.shells.setdefault(key, pane["pid"])
            assert known == pane["pid"], (key, known, pane)
            if key in self.model.exited:
                assert pane["exited"], f"pane {key} came back: {pane}"
            if pane["exited"]:
                self.model.exited.add(key)
            elif key not in self.model.workers:
                with contextlib.suppress(psutil.NoSuchProcess):
                    self.model.workers[key] = psutil.Process(pane["pid"]).ppid()

    # -- drawing requests ----------------------------------------------------------------------
    def draw_params(self, data: st.DataObject, method: str) -> Any:
        overrides = OVERRIDES[method]
        # The simplest draws (hypothesis starts from them) are valid and aimed at a real pane:
        # not the same refused request step after step.
        if data.draw(st.integers(0, 4), label="mutated") == 4:
            return bounded(method, data.draw(mutated_params(method, overrides), label="params"))
        params = data.draw(valid_params(method, overrides), label="params")
        panes = self.model.panes()
        if panes and data.draw(st.integers(0, 3), label="stray target") < 3:
            target = dict(zip(TARGET_KEYS, data.draw(st.sampled_from(panes)), strict=True))
            props = _properties(method)
            for key, value in target.items():
                if key in props and (key in params or not data.draw(st.booleans(), label=key)):
                    params[key] = value
        return bounded(method, params)

    def draw_and_step(self, data: st.DataObject, methods: dict[str, dict[str, Any]]) -> None:
        method = data.draw(st.sampled_from(sorted(methods)), label="method")
        self.step(method, self.draw_params(data, method))

    # -- rules ---------------------------------------------------------------------------------
    # Hypothesis orders rules by name, the first being its simplest choice: creating comes
    # first, and the others wait for a pane to work on.
    @precondition(lambda self: len(self.model.panes()) < MAX_PANES)
    @rule(data=st.data())
    def add_panes(self, data: st.DataObject) -> None:
        self.draw_and_step(data, CREATING if self.model.windows else NEW_WINDOW)

    @precondition(lambda self: self.model.windows)
    @rule(data=st.data())
    def close(self, data: st.DataObject) -> None:
        self.draw_and_step(data, CLOSING)

    @precondition(lambda self: self.model.windows)
    @rule(data=st.data())
    def layout(self, data: st.DataObject) -> None:
        self.draw_and_step(data, LAYOUT)

    @precondition(lambda self: self.model.windows)
    @rule(data=st.data())
    def input(self, data: st.DataObject) -> None:
        self.draw_and_step(data, INPUT)

    @precondition(lambda self: self.model.windows)
    @rule(data=st.data())
    def exec(self, data: st.DataObject) -> None:
        self.draw_and_step(data, EXEC)

    @precondition(lambda self: self.model.windows)
    @rule(data=st.data())
    def observe(self, data: st.DataObject) -> None:
        self.draw_and_step(data, OBSERVING)

    @precondition(lambda self: self.model.windows)
    @rule(data=st.data())
    def busy_close(self, data: st.DataObject) -> None:
        """A request to a pane pipelined with the close of that pane (or its tab or window):
        each answers once, whatever ran first."""
        window_id, tab_index, pane_id = data.draw(st.sampled_from(self.model.panes()))
        method = data.draw(st.sampled_from(sorted(RACING)), label="method")
        params = data.draw(valid_params(method, RACING[method]), label="params")
        params.update(window_id=window_id, pane_id=pane_id)
        close = data.draw(
            st.sampled_from(
                [
                    ("pane.close", {"window_id": window_id, "pane_id": pane_id}),
                    ("tab.close", {"window_id": window_id, "tab_index": tab_index}),
                    ("window.close", {"window_id": window_id}),
                ]
            ),
            label="close",
        )
        close[1]["confirm"] = data.draw(st.booleans(), label="confirm")
        self.steps([(method, bounded(method, params)), close])

    @precondition(lambda self: self.live_panes())
    @rule(data=st.data())
    def kill_program(self, data: st.DataObject) -> None:
        """SIGKILL a pane's `cat`: the pane is reported exited, its worker lives on."""
        key = data.draw(st.sampled_from(self.live_panes()), label="pane")
        pid = self.model.shells[key]
        shell = psutil.Process(pid)
        assert shell.ppid() == self.model.workers[key] and shell.name() == "cat", shell
        os.kill(pid, signal.SIGKILL)
        self.await_exited(key)
        reason = panes_of(self.last)[key]["exit_reason"]
        assert reason in ("shell killed by signal 9", "shell exited with status 0"), reason

    def live_panes(self) -> list[tuple[int, int]]:
        panes = panes_of(self.last)
        return sorted(
            k
            for k in self.model.pane_keys()
            if k in self.model.workers
            and k in panes
            and not panes[k]["exited"]
            and _alive(self.model.shells[k])
        )

    def await_exited(self, key: tuple[int, int]) -> None:
        def exited() -> bool:
            self.last = self.snapshot()
            return bool(panes_of(self.last)[key]["exited"])

        wait_for(exited, SETTLE_S, f"pane {key} reported exited after its program died")
        self.learn(self.last)

    # -- invariants ----------------------------------------------------------------------------
    @invariant()
    def after_every_step(self) -> None:
        assert structure(self.last) == self.model.structure(), "the runtime's panes differ"
        assert self.harness.core_pids() == self.harness.core, "a core process was replaced"
        for pid in self.harness.core.values():
            assert _alive(pid), pid
        panes = panes_of(self.last)
        for key in sorted(self.model.pane_keys()):
            if not panes[key]["exited"] and not _alive(self.model.shells[key]):
                self.await_exited(key)  # its program ended on input sent to it
        self.check_workers()

    def check_workers(self) -> None:
        """The fork server's children are the panes' workers plus one spare (a new spare is
        forked a moment after one is taken, a closed pane's worker exits a moment after its
        close is answered: both are waited for)."""
        forkserver = psutil.Process(self.harness.core[entrypoints.FORKSERVER])
        keys = self.model.pane_keys()
        known = {self.model.workers[k] for k in keys if k in self.model.workers}
        unknown = len([k for k in keys if k not in self.model.workers])
        seen: list[object] = []

        def settled() -> bool:
            children = {c.pid for c in forkserver.children() if _alive(c.pid)}
            seen[:] = [sorted(children), sorted(known), unknown]
            return known <= children and len(children - known) == unknown + 1

        if not poll_until(settled, SETTLE_S):
            pytest.fail(f"fork server children, pane workers, unknown workers: {seen}")
        for key in sorted(keys):
            if key in self.model.workers and key not in self.model.exited:
                pid = self.model.shells[key]
                if _alive(pid):
                    assert psutil.Process(pid).ppid() == self.model.workers[key], key

    def teardown(self) -> None:
        """Close every window (the next example starts from a fresh one)."""
        self.wire.close()  # a fresh connection: a failed step may have left this one unread
        for win in self.rt.snapshot()["windows"]:
            self.rt.ok("window.close", {"window_id": win["window_id"], "confirm": True})
