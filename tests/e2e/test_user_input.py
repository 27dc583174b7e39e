"""pane.user_input: the local user's own input channel, as `pebrel attach` uses it (#21).

Bytes as typed, no submit barrier, no running edge; refused to a caller inside a pane. The
test process is the local user (it runs outside every pane).
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Runtime, at_prompt, prompt_read

pytestmark = pytest.mark.timeout(60)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def typed(rt: Runtime, data: bytes, pane_id: int = 1) -> dict[str, Any]:
    return rt.call("pane.user_input", {"pane_id": pane_id, "data_b64": b64(data)})


def test_typing_writes_the_bytes_and_leaves_the_task_state_alone(runtime: Runtime) -> None:
    at_prompt(runtime)
    before = runtime.pane(1)
    answer = typed(runtime, b"echo user-typed-\x1b[D\x1b[C1")  # arrow keys as a terminal sends
    assert answer["ok"], answer
    assert answer["result"] == {"window_id": 1, "pane_id": 1, "written_bytes": 23}
    runtime.wait_text(1, "echo user-typed-1")
    after = runtime.pane(1)
    assert (after["task_state"], after["state_change_seq"]) == (
        before["task_state"],
        before["state_change_seq"],
    )
    assert typed(runtime, b"\r")["ok"]  # the user's Enter: the shell's marks tell the rest
    runtime.wait_text(1, "\nuser-typed-1")
    waited = runtime.ok(
        "pane.wait",
        {"pane_id": 1, "state": "settled", "after_seq": before["state_change_seq"]},
    )
    assert waited["state"] == "completed", waited


def test_no_submit_barrier_holds_the_user_back(runtime: Runtime) -> None:
    at_prompt(runtime)
    runtime.ok("pane.prompt", {"pane_id": 1, "text": "cat"})
    # Right after a submission pane.send_key may answer input_in_progress; the user never is.
    answer = typed(runtime, b"typed-into-cat\r")
    assert answer["ok"], answer
    runtime.wait_text(1, "typed-into-cat\ntyped-into-cat")
    seq = runtime.pane(1)["state_change_seq"]
    assert typed(runtime, b"more")["ok"]
    runtime.wait_text(1, "more")
    assert runtime.pane(1)["state_change_seq"] == seq
    runtime.ok("pane.send_key", {"pane_id": 1, "key": "c", "modifiers": {"control": True}})


@pytest.mark.parametrize(
    ("data_b64", "why"),
    [("not base64!", "not base64"), (b64(b"x" * 4097), "4097 bytes"), ("", "0 bytes")],
)
def test_bad_bytes_are_refused_and_nothing_is_written(
    runtime: Runtime, data_b64: str, why: str
) -> None:
    at_prompt(runtime)
    before = prompt_read(runtime)["text"]
    envelope = runtime.call("pane.user_input", {"pane_id": 1, "data_b64": data_b64})
    assert envelope["ok"] is False
    error = envelope["error"]
    assert error["code"] == "invalid_params" and why in error["message"], error
    assert error["details"]["written"] is False
    assert prompt_read(runtime)["text"] == before


def test_unknown_and_exited_panes(runtime: Runtime) -> None:
    at_prompt(runtime)
    assert typed(runtime, b"x", pane_id=9)["error"]["code"] == "target_not_found"
    split = runtime.ok("pane.split", {"pane_id": 1, "direction": "right"})
    pane_id = split["pane_id"]
    at_prompt(runtime, pane_id)
    runtime.ok("pane.prompt", {"pane_id": pane_id, "text": "exit"})
    runtime.ok("pane.wait", {"pane_id": pane_id, "state": "settled", "timeout_ms": 10_000})
    error = typed(runtime, b"x", pane_id=pane_id)["error"]
    assert error["code"] == "invalid_state" and error["details"]["exited"] is True


def test_a_caller_inside_a_pane_is_refused(runtime: Runtime, tmp_path: Path) -> None:
    at_prompt(runtime)
    split = runtime.ok("pane.split", {"pane_id": 1, "direction": "right"})
    pane_id = split["pane_id"]
    at_prompt(runtime, pane_id)
    before = prompt_read(runtime)["text"]
    out = tmp_path / "answer.json"
    script = (
        "import json; from pathlib import Path; from pebrel.client import Client; "
        f"e = Client(Path({str(runtime.data_dir)!r})).call('pane.user_input', "
        f"{{'pane_id': 1, 'data_b64': {b64(b'echo from-a-pane')!r}}}); "
        f"Path({str(out)!r}).write_text(json.dumps(e))"
    )
    ran = runtime.run(pane_id, f"{sys.executable} -c {json.dumps(script)}")
    assert ran["exit_code"] == 0, runtime.read_text(pane_id)
    envelope = json.loads(out.read_text())
    assert envelope["ok"] is False
    error = envelope["error"]
    assert error["code"] == "caller_not_user", error
    assert error["details"]["caller"] == {"kind": "pane", "window_id": 1, "pane_id": pane_id}
    assert error["details"]["written"] is False
    assert prompt_read(runtime)["text"] == before
