"""The durable event stream over the integration socket (FEATURES I2.1-I2.5; #17 item 6).

A real runtime in a temp data dir, a principal with its credential file, and the real CLI
(`pebrel collab --principal P events subscribe|ack`) or raw JSON Lines: a new consumer gets
every retained event then live ones, a reconnect replays from the durable ACK, ACKs are
checked (cursor, direction, send window), heartbeats come, a second subscribe takes over, a
slow receiver is cut without stalling the others, a consumer behind retention is refused,
revoke ends a stream at once, and 64 subscribers each get every event.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from pebrel.collab import cursor
from tests.collab_fixtures import kill_collab, serving
from tests.conftest import Runtime, base_env, inject_env, started_runtime, wait_for
from tests.stream_fixtures import (
    bridge,
    journal,
    make_tasks,
    read_events,
    subscribe_line,
    subscriber,
)

pytestmark = pytest.mark.timeout(180)


def sequences(lines: list[dict[str, object]]) -> list[object]:
    return [line["sequence"] for line in lines]


def test_a_new_consumer_gets_every_event_then_replays_from_its_ack(
    runtime: Runtime, tmp_path: Path
) -> None:
    b = bridge(runtime, tmp_path)
    make_tasks(runtime, b.group_id, 0, 3)
    with subscriber(b, "main") as sub:
        sub.subscribed()
        sub.wait("3 events", lambda s: len(s.events()) == 3)
        make_tasks(runtime, b.group_id, 3, 2)  # live, after the replay
        sub.wait("5 events", lambda s: len(s.events()) == 5)
        got = sub.events()
        assert sequences(got) == [1, 2, 3, 4, 5]
        kept = journal(runtime, b.group_id)
        assert [{k: v for k, v in e.items() if k != "cursor"} for e in got] == kept
        assert all(cursor.decode(e["cursor"]) == (b.group_id, e["sequence"]) for e in got)
        code, answer = b.ack("main", got[2]["cursor"])
        assert code == 0 and answer["ok"] is True, answer
        assert answer["result"]["acked_sequence"] == 3
    with subscriber(b, "main", "--timeout", "20s") as again:
        again.subscribed()
        first = again.of("connection")[0]
        assert first["created"] is False and first["start_sequence"] == 4
        again.wait("the events after the ACK", lambda s: len(s.events()) == 2)
        assert [e["event_id"] for e in again.events()] == [e["event_id"] for e in got[3:]]


def test_timeout_ends_the_stream_with_status_0_and_heartbeats_come(tmp_path: Path) -> None:
    env = {**base_env(tmp_path), **inject_env("stream_quick_heartbeats")}
    with started_runtime(env) as rt:
        b = bridge(rt, tmp_path)
        started = time.monotonic()
        with subscriber(b, "main", "--timeout", "2s") as sub:
            assert sub.exit() == 0
            took = time.monotonic() - started
            beats = sub.of("heartbeat")
        assert 2 <= took < 15, took
        assert len(beats) >= 3, sub.lines
        assert all(isinstance(beat["at"], int) for beat in beats)


def test_acks_are_checked_and_durable(runtime: Runtime, tmp_path: Path) -> None:
    b = bridge(runtime, tmp_path)
    make_tasks(runtime, b.group_id, 0, 4)
    conn, _ = subscribe_line(b, "main")
    with conn:
        got = read_events(conn, 4)
    code, answer = b.ack("main", got[2]["cursor"])
    assert code == 0 and answer["result"]["acked_sequence"] == 3
    refused = {
        "garbage": b.ack("main", "not-a-cursor"),
        "other group": b.ack("main", cursor.encode("grp_other", 1)),
        "behind": b.ack("main", got[1]["cursor"]),
        "not sent": b.ack("main", cursor.encode(b.group_id, 5)),
        "no such consumer": b.ack("nobody", got[0]["cursor"]),
    }
    codes = {what: (code, line["code"]) for what, (code, line) in refused.items()}
    assert codes == {
        "garbage": (1, "INVALID_EVENT_CURSOR"),
        "other group": (1, "INVALID_EVENT_CURSOR"),
        "behind": (1, "INVALID_EVENT_CURSOR"),
        "not sent": (1, "EVENT_ACK_NOT_SENT"),
        "no such consumer": (1, "EVENT_ACK_NOT_SENT"),
    }
    assert refused["behind"][1]["details"]["reason"] == "behind"
    assert all(line["retryable"] is False for _, line in refused.values())
    assert b.ack("main", got[2]["cursor"])[0] == 0, "the current ACK again is ok"
    kill_collab(runtime)  # the send window is in memory; the ACK is durable
    wait_for(lambda: serving(runtime), 30, "the restarted collab service")
    code, line = b.ack("main", got[3]["cursor"])
    assert (code, line["code"]) == (1, "EVENT_ACK_NOT_SENT"), line
    conn, result = subscribe_line(b, "main")
    with conn:
        assert result["acked_sequence"] == 3
        assert read_events(conn, 1)[0]["event_id"] == got[3]["event_id"]
    assert b.ack("main", got[3]["cursor"])[1]["result"]["acked_sequence"] == 4


def test_acks_and_subscribe_need_a_principal_with_events_read(
    runtime: Runtime, tmp_path: Path
) -> None:
    b = bridge(runtime, tmp_path)
    done = runtime.cli("collab", "events", "subscribe", "--consumer", "main", "--jsonl")
    assert done.code == 2 and "--principal" in done.stderr
    done = runtime.cli("collab", "events", "ack", "x", "--consumer", "main")
    assert done.code == 2 and "--principal" in done.stderr
    for bad in ("a b", "-x", "x" * 65):
        with subscriber(b, bad) as sub:
            assert sub.exit() == 1
            (error,) = sub.of("error")
            assert error["code"] == "INVALID_ARGUMENT", error


def test_a_second_subscribe_takes_the_consumer_over(runtime: Runtime, tmp_path: Path) -> None:
    b = bridge(runtime, tmp_path)
    make_tasks(runtime, b.group_id, 0, 2)
    old, _ = subscribe_line(b, "main")
    with old:
        sent = read_events(old, 2)
        new, _ = subscribe_line(b, "main")
        with new:
            ended = old.read()
            assert ended["type"] == "error" and "id" not in ended
            assert ended["code"] == "EVENT_CONSUMER_REPLACED" and ended["retryable"] is True
            assert old.closed()
            again = read_events(new, 2)
            assert [e["event_id"] for e in again] == [e["event_id"] for e in sent]
            assert b.ack("main", again[1]["cursor"])[0] == 0


def test_a_slow_receiver_is_cut_and_stalls_no_one(tmp_path: Path) -> None:
    env = {**base_env(tmp_path), **inject_env("stream_slow_consumers")}
    with started_runtime(env) as rt:
        b = bridge(rt, tmp_path)
        stuck, _ = subscribe_line(b, "stuck")  # never read until the end
        with stuck, subscriber(b, "quick") as quick:
            quick.subscribed()
            began = time.monotonic()
            make_tasks(rt, b.group_id, 0, 600, content="x" * 4000)  # ~2.5 MiB of events
            wrote = time.monotonic() - began
            quick.wait("every event", lambda s: len(s.events()) == 600, 60)
            assert sequences(quick.events()) == list(range(1, 601))
            assert not quick.of("error")
            # Read the stuck receiver only once the service has cut it: read earlier, within
            # the grace time, it would drain and never be slow.
            log = rt.data_dir / "runtime.log"
            wait_for(lambda: "code='EVENT_CONSUMER_SLOW'" in log.read_text(), 30, "the cut")
            lines = []
            while True:
                line = stuck.read()
                lines.append(line)
                if line["type"] == "error":
                    break
            assert line["code"] == "EVENT_CONSUMER_SLOW" and line["retryable"] is True
            assert stuck.closed()
            assert 0 < len([x for x in lines if x["type"] == "event"]) < 600
        assert wrote < 60, wrote


def test_a_consumer_behind_retention_is_refused_never_skipped(tmp_path: Path) -> None:
    env = {**base_env(tmp_path), **inject_env("small_retention")}
    with started_runtime(env) as rt:
        b = bridge(rt, tmp_path)
        make_tasks(rt, b.group_id, 0, 3)
        conn, _ = subscribe_line(b, "main")
        with conn:
            got = read_events(conn, 3)
        assert b.ack("main", got[2]["cursor"])[0] == 0
        make_tasks(rt, b.group_id, 3, 100)
        floor = journal(rt, b.group_id)[0]["sequence"] - 1
        assert floor > 3
        with subscriber(b, "main") as sub:
            assert sub.exit() == 1
            (error,) = sub.of("error")
            assert not sub.events()
        assert error["code"] == "EVENT_RETENTION_GAP" and error["retryable"] is False
        assert error["details"]["acked_sequence"] == 3
        assert error["details"]["oldest_retained_sequence"] == floor + 1
        with subscriber(b, "main-2", "--timeout", "30s") as fresh:
            fresh.subscribed()
            assert fresh.of("connection")[0]["start_sequence"] == floor + 1
            fresh.wait("the retained events", lambda s: len(s.events()) == 103 - floor)


def test_a_stream_overtaken_by_retention_names_the_consumers_ack(tmp_path: Path) -> None:
    """A live stream whose receiver reads too slowly while retention trims past what it sent
    ends with EVENT_RETENTION_GAP naming the durable ACK (what a reconnect resumes from)."""
    env = {**base_env(tmp_path), **inject_env("small_retention")}
    with started_runtime(env) as rt:
        b = bridge(rt, tmp_path)
        make_tasks(rt, b.group_id, 0, 3)
        conn, _ = subscribe_line(b, "main")
        with conn:
            got = read_events(conn, 3)
            assert b.ack("main", got[2]["cursor"])[0] == 0
            make_tasks(rt, b.group_id, 3, 400, content="x" * 8000)  # > 1 MiB unread
            lines: list[dict[str, Any]] = []
            while not lines or lines[-1]["type"] != "error":
                lines.append(conn.read(30))
        error = lines[-1]
        assert error["code"] == "EVENT_RETENTION_GAP", error
        sent = [x["sequence"] for x in lines if x["type"] == "event"]
        assert sent == list(range(4, 4 + len(sent)))
        assert error["details"]["acked_sequence"] == 3
        assert error["details"]["sent_sequence"] == sent[-1]
        assert error["details"]["oldest_retained_sequence"] > sent[-1] + 1


def test_revoke_ends_a_stream_at_once(runtime: Runtime, tmp_path: Path) -> None:
    b = bridge(runtime, tmp_path)
    with subscriber(b, "main") as sub:
        sub.subscribed()
        began = time.monotonic()
        done = runtime.cli("integration", "revoke", b.principal)
        assert done.code == 0, done
        assert sub.exit(10) == 1
        took = time.monotonic() - began
        error = sub.lines[-1]
    assert error["type"] == "error" and error["code"] == "INTEGRATION_REVOKED", error
    assert took < 5, took


def test_an_update_that_takes_events_read_away_ends_the_stream(
    runtime: Runtime, tmp_path: Path
) -> None:
    b = bridge(runtime, tmp_path)
    policy = tmp_path / "policy.json"
    with subscriber(b, "main") as sub:
        sub.subscribed()
        body = {"id": b.principal, "groupId": b.group_id, "permissions": ["task.read"]}
        policy.write_text(json.dumps({**body, "launchProfiles": []}))
        done = runtime.cli("integration", "update", "--file", str(policy))
        assert done.code == 0, done
        assert sub.exit(10) == 1
        error = sub.lines[-1]
        make_tasks(runtime, b.group_id, 0, 1)  # after the update: never sent to it
        assert not sub.events()
    assert error["type"] == "error" and error["code"] == "INTEGRATION_PERMISSION_DENIED", error
    assert error["details"]["missing"] == ["events.read"]
    status, again = b.cli("events", "subscribe", "--consumer", "main")
    assert status == 1 and again["code"] == "INTEGRATION_PERMISSION_DENIED", again


def test_64_subscribers_of_one_group_each_get_every_event(runtime: Runtime, tmp_path: Path) -> None:
    b = bridge(runtime, tmp_path)
    make_tasks(runtime, b.group_id, 0, 50)
    streams = [subscribe_line(b, f"c{i}")[0] for i in range(64)]
    try:
        make_tasks(runtime, b.group_id, 50, 250)
        ids = [e["event_id"] for e in journal(runtime, b.group_id)]
        assert len(ids) == 300
        for conn in streams:
            assert [e["event_id"] for e in read_events(conn, 300)] == ids
    finally:
        for conn in streams:
            conn.close()


def test_the_cli_reconnects_after_a_service_kill_and_replays_from_the_ack(
    runtime: Runtime, tmp_path: Path
) -> None:
    b = bridge(runtime, tmp_path)
    make_tasks(runtime, b.group_id, 0, 4)
    with subscriber(b, "main") as sub:
        sub.subscribed()
        sub.wait("4 events", lambda s: len(s.events()) == 4)
        first = sub.events()
        assert b.ack("main", first[1]["cursor"])[0] == 0
        kill_collab(runtime)
        sub.wait("a reconnecting line", lambda s: s.of("connection")[-1]["state"] != "subscribed")
        sub.subscribed(2)
        sub.wait("the un-ACKed events again", lambda s: len(s.events()) == 6)
        make_tasks(runtime, b.group_id, 4, 1)
        sub.wait("the next live event", lambda s: len(s.events()) == 7)
        got = sub.events()
        assert [e["event_id"] for e in got[4:6]] == [e["event_id"] for e in first[2:]]
        assert got[4:6] == first[2:], "replayed with the same ids and cursors"
        assert sequences(got) == [1, 2, 3, 4, 3, 4, 5]
        states = [x["state"] for x in sub.of("connection")]
        assert states[0] == "subscribed" and states[-1] == "subscribed"
        assert "reconnecting" in states and sub.proc.poll() is None


def test_a_cli_taken_over_reconnects_after_its_retryable_error(
    runtime: Runtime, tmp_path: Path
) -> None:
    b = bridge(runtime, tmp_path)
    with subscriber(b, "main") as sub:
        sub.subscribed()
        other, _ = subscribe_line(b, "main")
        with other:
            sub.wait("the takeover", lambda s: s.of("error"))
            (error,) = sub.of("error")
            assert error["code"] == "EVENT_CONSUMER_REPLACED" and error["retryable"] is True
            sub.subscribed(2)  # it takes the consumer back after its backoff
            ended = other.read()
            assert ended["code"] == "EVENT_CONSUMER_REPLACED"
        assert sub.proc.poll() is None
        after = sub.lines[sub.lines.index(error) + 1]
        assert after["type"] == "connection" and after["state"] == "reconnecting"
