"""`pebrel collab --principal P events subscribe`'s reconnect loop and `--timeout` (I2.5; #17).

The connection is faked (`integration_client.connect` patched) and so is the clock, so the
backoff sequence is read exactly: 0.2 s doubling to 10 s, back to 0.2 s after a subscribe,
growing across takeovers in a row; a terminal error line ends with status 1, the timeout with 0.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import click
import pytest

from pebrel import integration_client
from pebrel.cli import collab_events_cmd as cmd
from pebrel.errors import CollabCode, CollabError

pytestmark = pytest.mark.timeout(30)

CRED = integration_client.Credential("bot", "secret")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 3))
        self.now += seconds


class FakeConnection:
    """Answers the subscribe with ``answer``, then gives ``lines`` (then EOF)."""

    def __init__(self, answer: dict[str, Any], lines: list[dict[str, Any]]) -> None:
        self.answer = answer
        self.lines = list(lines)

    def __enter__(self) -> FakeConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def call(self, method: str, params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        assert method == "events.subscribe" and params == {"consumer": "main"}
        return self.answer

    def read_line(self, timeout_s: float) -> dict[str, Any]:
        if not self.lines:
            raise integration_client.IntegrationUnavailable("the service closed the connection")
        return self.lines.pop(0)


def error_line(code: CollabCode) -> dict[str, Any]:
    retryable = CollabError(code, "x").details["retryable"]
    return {"type": "error", "ok": False, "code": str(code), "retryable": retryable}


OK = {"type": "result", "id": 1, "ok": True, "result": {"consumer": "main", "heartbeat_s": 15}}
EVENT = {"type": "event", "sequence": 1, "event_id": "evt_1", "cursor": "c"}


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    found = Clock()
    monkeypatch.setattr(cmd, "time", found)
    monkeypatch.setattr(cmd, "data_dir_name", lambda: "/nowhere")
    return found


def connections(monkeypatch: pytest.MonkeyPatch, steps: list[Any]) -> None:
    """Each connect takes the next step: a FakeConnection, or an exception to raise."""
    queue: Iterator[Any] = iter(steps)

    def connect(data_dir: str, credential: Any, timeout_s: float) -> Any:
        step = next(queue)
        if isinstance(step, BaseException):
            raise step
        return step

    monkeypatch.setattr(integration_client, "connect", connect)


def printed(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_backoff_doubles_to_10_s_until_the_timeout(
    clock: Clock, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    down = integration_client.IntegrationUnavailable("no socket")
    connections(monkeypatch, [down] * 50)
    assert cmd.Subscriber(CRED, "main", 60.0).run() == 0
    assert clock.slept[:9] == [0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 10.0, 10.0, 10.0]
    assert sum(clock.slept) == pytest.approx(60.0)
    lines = printed(capsys)
    assert {(x["type"], x["state"]) for x in lines} == {("connection", "reconnecting")}
    assert lines[0]["retry_in_ms"] == 200


def test_a_subscribe_resets_the_backoff_and_a_terminal_error_ends_with_1(
    clock: Clock, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    down = integration_client.IntegrationUnavailable("no socket")
    slow = error_line(CollabCode.EVENT_CONSUMER_SLOW)
    revoked = error_line(CollabCode.INTEGRATION_REVOKED)
    connections(
        monkeypatch,
        [down, down, FakeConnection(OK, [EVENT, slow]), FakeConnection(revoked, [])],
    )
    assert cmd.Subscriber(CRED, "main", None).run() == 1
    assert clock.slept == [0.2, 0.4, 0.2]
    kinds = [(x["type"], x.get("state") or x.get("code")) for x in printed(capsys)]
    assert kinds == [
        ("connection", "reconnecting"),
        ("connection", "reconnecting"),
        ("connection", "subscribed"),
        ("event", None),
        ("error", "EVENT_CONSUMER_SLOW"),
        ("connection", "reconnecting"),
        ("error", "INTEGRATION_REVOKED"),
    ]


def test_a_lost_connection_reconnects_and_a_refused_hello_is_terminal(
    clock: Clock, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    refused = integration_client.IntegrationRefused(error_line(CollabCode.INTEGRATION_UNAUTHORIZED))
    connections(monkeypatch, [FakeConnection(OK, [EVENT]), refused])
    assert cmd.Subscriber(CRED, "main", None).run() == 1
    lines = printed(capsys)
    assert lines[-2]["state"] == "reconnecting" and "connection lost" in lines[-2]["reason"]
    assert lines[-1]["code"] == "INTEGRATION_UNAUTHORIZED"


def test_takeovers_in_a_row_keep_backing_off(
    clock: Clock, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    replaced = error_line(CollabCode.EVENT_CONSUMER_REPLACED)
    steps: list[Any] = [FakeConnection(OK, [replaced]) for _ in range(4)]
    steps += [FakeConnection(OK, [EVENT, replaced]), FakeConnection(OK, [])]
    steps += [integration_client.IntegrationRefused(error_line(CollabCode.INTEGRATION_REVOKED))]
    connections(monkeypatch, steps)
    assert cmd.Subscriber(CRED, "main", None).run() == 1
    # 4 takeovers in a row: 0.2, 0.4, 0.8, 1.6; an event resets; the lost one after: 0.2 doubled
    assert clock.slept == [0.2, 0.4, 0.8, 1.6, 0.2, 0.4]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("60s", 60.0), ("500ms", 0.5), ("5m", 300.0), ("1h", 3600.0), ("2", 2.0), ("1.5s", 1.5)],
)
def test_durations(text: str, seconds: float) -> None:
    assert cmd.duration(click.Context(click.Command("x")), click.Option(["--t"]), text) == seconds


@pytest.mark.parametrize("text", ["0s", "-1s", "abc", "5 d", "", "1e3"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(click.BadParameter):
        cmd.duration(click.Context(click.Command("x")), click.Option(["--t"]), text)
