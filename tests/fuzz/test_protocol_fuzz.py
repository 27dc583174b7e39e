"""Schema-driven fuzzing of the control protocol (R1.5, R2.2, R2.3).

Params drawn from the shipped schema, valid and mutated (tests/fuzz/schema_strategies.py), go
pipelined over one authenticated socket to a real runtime whose two panes run `cat` (their
shells replaced it with `exec`, so typed text only echoes). Only methods that create, close or
run nothing are drawn. Every request must get exactly one well-formed envelope whose error code
is one of the schema's for its method (or `common_errors`); the router, the frontend and the
fork server keep their pids; the revision never goes back; every answer is strict JSON.

Budget: the `ci` profile (tests/fuzz/conftest.py) keeps this module well under a minute;
`PEBREL_FUZZ_PROFILE=long` runs many more examples.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pebrel import entrypoints
from tests.conftest import Runtime, at_prompt, base_env, started_runtime, wait_for
from tests.e2e.test_robustness import router_children
from tests.e2e.test_transport import _authenticated
from tests.fuzz.envelopes import check, parse
from tests.fuzz.schema_strategies import SHORT_WAIT, bounded, mutated_params, valid_params

#: The ci budget takes well under a minute; the long one (1,500 examples) up to half an hour.
pytestmark = pytest.mark.timeout(1800 if settings.get_current_profile_name() == "long" else 300)

#: Methods drawn, with the fields whose drawn values are bounded (only harmless methods: none
#: of them creates, closes or runs anything; input goes to the `cat` panes).
METHODS: dict[str, dict[str, Any]] = {
    "runtime.describe": {},
    "runtime.snapshot": {},
    "window.focus": {},
    "pane.read": {},
    "pane.procs": {},
    "pane.wait": {"timeout_ms": SHORT_WAIT},
    "pane.zoom": {},
    "pane.resize": {},
    "tab.rename": {},
    "tab.move": {},
    "pane.prompt": {},
    "pane.paste": {},
    "pane.send_key": {},
    "agents.list": {},
    "agent.get": {},
    "agent.read": {},
    # The collab service (#16): no agent runs here, so nothing it queues is ever typed.
    "collab.capabilities": {},
    "collab.group.create": {},
    "collab.group.list": {},
    "collab.group.show": {},
    "collab.session.list": {},
    "collab.session.get": {},
    "collab.task.create": {},
    "collab.task.get": {},
    "collab.task.list": {},
    "collab.task.comment": {},
    "collab.task.report": {},
    "collab.task.accept": {},
    "collab.message.get": {},
    "collab.reply": {},
    "collab.events.list": {},
}
ANSWER_DEADLINE_S = 10.0


def request() -> st.SearchStrategy[tuple[str, Any]]:
    return st.sampled_from(sorted(METHODS)).flatmap(
        lambda method: st.tuples(
            st.just(method),
            st.one_of(
                valid_params(method, METHODS[method]), mutated_params(method, METHODS[method])
            ),
        )
    )


class Fuzzed:
    """The runtime under fuzzing, its one connection and what must not change."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.wire = _authenticated(rt)
        self.pids = self.core_pids()
        self.revision = 0
        self.next_id = 0

    def core_pids(self) -> dict[str, int]:
        pids = {"router": self.rt.pid}
        for module in (entrypoints.ADAPTER, entrypoints.FORKSERVER, entrypoints.COLLAB):
            # The collab service starts after the adapter: wait for it the first time.
            (child,) = wait_for(functools.partial(router_children, self.rt, module), 20, module)
            pids[module] = child.pid
        return pids

    def exchange(self, requests: list[tuple[str, Any]]) -> None:
        """:meth:`exchange_on` the connection; a failed example leaves the next one a fresh
        connection (no answer of its own left unread on the wire)."""
        try:
            self.exchange_on(requests)
        except BaseException:
            self.wire.close()
            self.wire = _authenticated(self.rt)
            raise

    def exchange_on(self, requests: list[tuple[str, Any]]) -> None:
        """Send every request and a snapshot behind them, pipelined; check every answer."""
        pending: dict[int, str] = {}
        lines = b""
        for method, params in requests:
            self.next_id += 1
            pending[self.next_id] = method
            lines += self.wire.request_line(method, bounded(method, params), self.next_id)
        self.next_id += 1
        snapshot_id = self.next_id
        pending[snapshot_id] = "runtime.snapshot"
        self.wire.send_raw(lines + self.wire.request_line("runtime.snapshot", {}, snapshot_id))
        while pending:
            line = self.wire.read_line(ANSWER_DEADLINE_S)
            assert line.endswith(b"\n"), f"connection closed; waiting for {pending}"
            answer = parse(line)
            check(answer, pending)
            if answer["id"] == snapshot_id:
                revision = answer["result"]["revision"]
                assert revision >= self.revision, "the revision went back"
                self.revision = revision
        assert self.core_pids() == self.pids, "a core process of the runtime was replaced"
        for pid in self.pids.values():
            assert psutil.Process(pid).status() != psutil.STATUS_ZOMBIE


def runs_cat(shell: psutil.Process) -> bool:
    return bool(shell.name() == "cat")


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzzed]:
    env = base_env(Path(tmp_path_factory.mktemp("fuzz")))
    with started_runtime(env) as rt:
        split = rt.ok("pane.split", {"pane_id": 1, "direction": "right"})
        for pane_id in (1, split["pane_id"]):
            at_prompt(rt, pane_id)
            shell = psutil.Process(rt.pane(pane_id)["pid"])
            rt.ok("pane.prompt", {"pane_id": pane_id, "text": "exec cat"})
            wait_for(functools.partial(runs_cat, shell), 10, f"pane {pane_id} running cat")
        fuzz = Fuzzed(rt)
        try:
            yield fuzz
        finally:
            fuzz.wire.close()


@given(requests=st.lists(request(), min_size=1, max_size=6))
@example(
    requests=[
        ("pane.resize", {"pane_id": 1, "ratio": math.nan}),
        ("pane.zoom", {"pane_id": 2, "zoomed": True}),
    ]
)
@example(requests=[("pane.resize", {"pane_id": 2, "ratio": -math.inf})])
@example(requests=[("pane.resize", {"pane_id": 1, "ratio": 2**64})])
@example(requests=[("pane.read", {"pane_id": 2**64, "window_id": -(2**70)})])
@example(requests=[("pane.prompt", {"pane_id": 1, "text": "\ud800"})])
@example(requests=[("tab.rename", {"tab_index": 0, "name": "a\x00b"})])
@example(requests=[("pane.read", [1, 2])])
def test_every_request_gets_one_answer_the_schema_allows(
    fuzzed: Fuzzed, requests: list[tuple[str, Any]]
) -> None:
    fuzzed.exchange(requests)
