"""Params a hostile client may send: non-finite numbers, integers beyond 64 bits, and reads of
a pane whose worker died (R1.5, R2.2, R2.3, R3.5, R4.4).

Every request goes through a raw socket, as the JSON a client would write by hand.
"""

from __future__ import annotations

import json
import signal
from typing import Any

import pytest

from tests.conftest import Runtime, at_prompt, prompt_read, wait_for
from tests.e2e.test_robustness import kill_worker, worker_of
from tests.e2e.test_transport import Wire, _authenticated

pytestmark = pytest.mark.timeout(60)


def _strict(constant: str) -> Any:
    raise AssertionError(f"{constant} in an answer: not JSON")


def strict_json(line: bytes) -> dict[str, Any]:
    """An answer line parsed as a strict client would: NaN or Infinity fail the test."""
    loaded: dict[str, Any] = json.loads(line, parse_constant=_strict)
    return loaded


def raw_line(wire: Wire, method: str, params_json: str, request_id: str) -> bytes:
    """A request line whose params are written as given (``NaN`` is no JSON a library
    writes unless asked)."""
    head = wire.request_line(method, {}, request_id)
    return head.replace(b'"params": {}', b'"params": ' + params_json.encode())


def snapshot_line(wire: Wire) -> bytes:
    wire.send("runtime.snapshot", {}, "snap")
    return wire.read_line()


NON_FINITE = ["NaN", "Infinity", "-Infinity"]
#: Numeric params of methods that change nothing or change layout, each with a non-finite value.
NUMERIC = [
    ("pane.resize", '{"pane_id": 1, "ratio": %s}'),
    ("pane.read", '{"pane_id": 1, "lines": %s}'),
    ("pane.wait", '{"pane_id": 1, "state": "running", "timeout_ms": %s}'),
    ("runtime.snapshot", '{"window_id": %s}'),
]


def test_non_finite_numbers_are_refused_and_change_nothing(runtime: Runtime) -> None:
    """R2.3, R3.5: NaN, Infinity and -Infinity anywhere in params are refused when the line is
    parsed (invalid_request); the layout is unchanged and every later snapshot stays strict
    JSON; split and zoom of that tab still work."""
    runtime.ok("pane.split", {"pane_id": 1, "direction": "right"})
    with _authenticated(runtime) as wire:
        before = snapshot_line(wire)
        strict_json(before)
        for method, params in NUMERIC:
            for constant in NON_FINITE:
                request_id = f"{method}-{constant}"
                wire.send_raw(raw_line(wire, method, params % constant, request_id))
                answer = strict_json(wire.read_line())
                assert answer["id"] == request_id, answer
                assert answer["ok"] is False, answer
                assert answer["error"]["code"] == "invalid_request", answer
                assert constant.lstrip("-") in answer["error"]["message"], answer
        assert snapshot_line(wire) == before  # same revision, same layout, strict JSON
    split = runtime.ok("pane.split", {"pane_id": 1, "direction": "down"})
    zoomed = runtime.ok("pane.zoom", {"pane_id": split["pane_id"], "zoomed": True})
    assert zoomed["zoomed"] is True
    resized = runtime.ok("pane.resize", {"pane_id": 2, "ratio": 0.3})
    assert resized["ratio"] == 0.3
    with _authenticated(runtime) as wire:
        strict_json(snapshot_line(wire))


def test_non_finite_number_refused_before_authentication_is_answered(runtime: Runtime) -> None:
    """R2.2: a first line with the right token and a NaN is answered (it authenticates), and
    the connection stays usable."""
    with Wire(runtime) as wire:
        wire.send_raw(raw_line(wire, "pane.resize", '{"pane_id": 1, "ratio": NaN}', "first"))
        answer = strict_json(wire.read_line())
        assert answer["error"]["code"] == "invalid_request" and answer["id"] == "first"
        assert wire.call("runtime.describe", request_id="after")["ok"] is True


@pytest.mark.parametrize(
    ("value", "needle"),
    [(2**64, f"<= {2**64 - 1}"), (2**70, f"<= {2**64 - 1}"), (-(2**70), ">= 1")],
)
def test_an_id_out_of_range_is_named_with_its_range(
    runtime: Runtime, value: int, needle: str
) -> None:
    """R2.3: an integer the runtime cannot carry is invalid_params naming the field and the
    range it must be in (details.field), not a vague "value out of range"."""
    with _authenticated(runtime) as wire:
        answer = wire.call("pane.read", {"pane_id": value}, "big")
        assert answer["id"] == "big" and answer["ok"] is False, answer
        error = answer["error"]
        assert error["code"] == "invalid_params", error
        assert error["details"]["field"] == "pane_id", error
        assert error["message"].startswith("params.pane_id: must be"), error
        assert needle in error["message"], error
        nested = wire.call("pane.resize", {"pane_id": 1, "ratio": 0.5, "window_id": value}, 2)
        assert nested["error"]["details"]["field"] == "window_id", nested


def test_a_dead_workers_pane_is_readable_for_any_lines(runtime: Runtime) -> None:
    """R1.5, R4.4: after its worker is SIGKILLed, a pane answers reads of any `lines` from the
    last screen the runtime kept (a read of 200 lines, asked of the worker, is larger than the
    published screen): the last `lines` of it, never invalid_state."""
    runtime.run(1, "for i in $(seq 1 30); do echo row-$i; done")
    at_prompt(runtime)
    worker = worker_of(runtime, 1)
    before = prompt_read(runtime, 1, lines=200)
    kept = before["returned_lines"]
    assert 30 < kept < 200 and any("row-30" in x for x in before["lines"])
    worker.send_signal(signal.SIGKILL)
    wait_for(lambda: runtime.pane(1)["exited"], 15, "pane 1 marked exited")
    after = runtime.pane(1)
    assert after["exited"] is True and "worker" in after["exit_reason"]
    for lines in (1, 5, kept - 1, kept, kept + 1, 200, 2000):
        read = runtime.ok("pane.read", {"pane_id": 1, "lines": lines})
        assert read["exited"] is True, read
        assert read["lines"] == before["lines"][-lines:], (lines, read)
        assert read["returned_lines"] == min(lines, kept)
        assert read["requested_lines"] == lines
        assert read["truncated"] is (lines < kept or before["truncated"])


def test_a_dead_workers_pane_answers_reads_whatever_was_kept(runtime: Runtime) -> None:
    """R1.5: a pane whose worker died after its screen changed answers every read ok, with
    what was kept of it (nothing if no read followed the change), and says it exited."""
    split = runtime.ok("pane.split", {"pane_id": 1, "direction": "right"})
    pane_id = split["pane_id"]
    wait_for(lambda: runtime.pane(pane_id)["pid"], 15, "the new pane's shell")
    runtime.run(pane_id, "echo drawn")
    runtime.run(pane_id, "clear")  # the screen changed after the run's own reads
    kill_worker(runtime, pane_id)
    for lines in (1, 50):
        read = runtime.ok("pane.read", {"pane_id": pane_id, "lines": lines})
        assert read["exited"] is True
        assert read["returned_lines"] == len(read["lines"]) <= lines
