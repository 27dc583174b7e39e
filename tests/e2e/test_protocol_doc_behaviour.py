"""What docs/protocol.md says about four corners of the protocol, checked against a runtime.

- `pane.close` of a busy pane (R3.4): `confirmation_required` with the pane's `task_state`,
  nothing closed; `confirm: true` closes it and ends what ran there.
- Resolution errors of the input methods (R2.8, R4.1-R4.3, R6.2): `target_not_found` and
  `ambiguous_target` are answered before anything is written, and carry no `details.submitted`.
- The legacy `ATTACH` line (R1.4): a failure answers `ERROR <code>` on one line; the connection
  stays open.
- `window.focus` with neither id (R3.1): `invalid_params`, focus unchanged; a `pane_id` alone is
  resolved across windows.
"""

from __future__ import annotations

from typing import Any

import pytest

from pebrel import __version__
from tests.conftest import Runtime, at_prompt, wait_for
from tests.e2e.test_transport import Wire

pytestmark = pytest.mark.timeout(120)


def pane_ids(rt: Runtime) -> list[tuple[int, int]]:
    return sorted(
        (p["window_id"], p["pane_id"])
        for w in rt.snapshot()["windows"]
        for t in w["tabs"]
        for p in t["panes"]
    )


def test_pane_close_of_a_busy_pane(runtime: Runtime) -> None:
    """R3.4: a busy pane is refused with its task_state, then closed with confirm."""
    runtime.ok("pane.split", {"window_id": 1, "direction": "right"})
    at_prompt(runtime, 2)
    runtime.ok("pane.prompt", {"window_id": 1, "pane_id": 2, "text": "sleep 30"})
    runtime.ok("pane.wait", {"window_id": 1, "pane_id": 2, "state": "running", "timeout_ms": 5000})
    before = pane_ids(runtime)
    error = runtime.error("pane.close", {"window_id": 1, "pane_id": 2})
    assert error["code"] == "confirmation_required"
    assert error["details"] == {"window_id": 1, "pane_id": 2, "task_state": "running"}
    assert pane_ids(runtime) == before

    closed = runtime.ok("pane.close", {"window_id": 1, "pane_id": 2, "confirm": True})
    assert closed == {"window_id": 1, "pane_id": 2, "tab_closed": False, "window_closed": False}
    assert pane_ids(runtime) == [(1, 1)]


INPUTS: list[tuple[str, dict[str, Any]]] = [
    ("pane.prompt", {"text": "echo hi"}),
    ("pane.paste", {"text": "echo hi"}),
    ("pane.send_key", {"key": "enter"}),
    ("pane.run", {"command": "echo hi"}),
]


def test_resolution_errors_carry_no_submitted(runtime: Runtime) -> None:
    """R2.8: an input to a pane that cannot be resolved writes nothing and has no
    details.submitted; pane 1 of either window is untouched."""
    runtime.ok("window.create")
    at_prompt(runtime, 1, 1)
    at_prompt(runtime, 1, 2)
    seqs = [runtime.pane(1, w)["state_change_seq"] for w in (1, 2)]
    for method, params in INPUTS:
        missing = runtime.error(method, {"window_id": 1, "pane_id": 9, **params})
        assert missing["code"] == "target_not_found", (method, missing)
        assert "submitted" not in missing["details"], (method, missing)
        ambiguous = runtime.error(method, {"pane_id": 1, **params})
        assert ambiguous["code"] == "ambiguous_target", (method, ambiguous)
        assert ambiguous["details"] == {"pane_id": 1, "window_ids": [1, 2]}, (method, ambiguous)
    assert [runtime.pane(1, w)["state_change_seq"] for w in (1, 2)] == seqs
    missing_agent = runtime.error("agent.prompt", {"agent": "nobody", "text": "hi"})
    assert "submitted" not in missing_agent["details"], missing_agent


def test_attach_failure_answers_error_code(runtime: Runtime) -> None:
    """R1.4: with no window left, ATTACH with a cwd that is no directory answers
    `ERROR invalid_params`, creates nothing, and the connection stays usable."""
    runtime.ok("window.close", {"window_id": 1})
    assert runtime.snapshot()["windows"] == []
    with Wire(runtime) as wire:
        wire.send_raw(f"ATTACH {wire.token} relative/dir\n".encode())
        assert wire.read_line(timeout_s=15) == b"ERROR invalid_params\n"
        wire.send_raw(f"PING {wire.token}\n".encode())
        assert wire.read_line() == f"PONG pebrel {__version__}\n".encode()
    assert runtime.snapshot()["windows"] == []


def test_window_focus_without_ids(runtime: Runtime) -> None:
    """R3.1: window.focus {} is invalid_params and moves nothing; pane_id alone is resolved
    across windows (ambiguous when it exists in several, else that pane's window)."""
    assert runtime.ok("window.create")["window_id"] == 2
    before = runtime.snapshot()
    error = runtime.error("window.focus", {})
    assert error["code"] == "invalid_params"
    after = runtime.snapshot()
    assert after["focused_window_id"] == before["focused_window_id"] == 2
    assert after["revision"] == before["revision"]
    ambiguous = runtime.error("window.focus", {"pane_id": 1})
    assert ambiguous["code"] == "ambiguous_target"
    assert ambiguous["details"]["window_ids"] == [1, 2]
    runtime.ok("pane.split", {"window_id": 1, "direction": "down"})
    focused = runtime.ok("window.focus", {"pane_id": 2})
    assert focused == {"window_id": 1, "tab_index": 0, "pane_id": 2}
    wait_for(lambda: runtime.snapshot()["focused_window_id"] == 1, 5, "window 1 focused")
