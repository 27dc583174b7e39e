"""A request whose handler cannot even be started is still answered (R2.2 `internal_error`).

Python 3.12's `create_task` once refused the router's start path and every request simply
vanished. tests/inject/request_start_fails.py makes the router unable to start `pane.read`'s
handler; the request must be answered `internal_error` with an incident id, the same
connection must go on working, and nothing in the runtime may change.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pebrel.client import Client
from tests.conftest import base_env, inject_env, started_runtime

pytestmark = pytest.mark.timeout(90)


def test_request_whose_handler_cannot_start_answers_internal_error(tmp_path: Path) -> None:
    env = {**base_env(tmp_path), **inject_env("request_start_fails")}
    with started_runtime(env) as rt:
        before = rt.snapshot()
        with Client(rt.data_dir, timeout_s=20) as client:
            failed = client.call("pane.read", {"pane_id": 1})
            assert failed["ok"] is False, failed
            error = failed["error"]
            assert error["code"] == "internal_error", error
            assert error["details"].get("incident"), error
            assert "Traceback" not in error["message"]
            # The same connection goes on answering, in order.
            after = client.call("runtime.snapshot", {})
            assert after["ok"] is True, after
        assert after["result"]["revision"] == before["revision"]
        assert rt.snapshot()["windows"] == before["windows"]
        # The CLI reports it as an answered error (exit 1), not a timeout.
        cli = rt.cli("pane", "read", "1", timeout=30)
        assert cli.code == 1, cli
        assert cli.json["error"]["code"] == "internal_error"
        log = (rt.data_dir / "runtime.log").read_text()
        assert "request could not be started" in log
        # The answer says to look its incident up in runtime.log: it is there.
        assert f"incident='{error['details']['incident']}'" in log
