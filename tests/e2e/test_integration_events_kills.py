"""Exactly-once storage through kills and cut connections (#17 item 7; I2.3, I2.6).

The reference consumer (docs/examples/integration_consumer.py: a SQLite inbox keyed by
`event_id`, ACKing the stored contiguous prefix) runs against 10,000 task events written as
the user, while the collab service is SIGKILLed three times and the consumer's subscribe
process is killed five times. It must end with every event exactly once in its inbox, in
sequence order, with the journal's ids.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import psutil
import pytest

from tests.collab_fixtures import kill_collab, serving
from tests.conftest import PEBREL, Runtime, wait_for
from tests.stream_fixtures import bridge, journal, make_tasks

pytestmark = pytest.mark.timeout(900)

CONSUMER = Path(__file__).resolve().parents[2] / "docs" / "examples" / "integration_consumer.py"
EVENTS = 10_000
CHUNK = 500
#: After how many produced events the collab service is killed.
SERVICE_KILLS = (2_000, 5_000, 8_000)
#: After how many stored events the consumer's subscribe process is killed.
CUTS = (500, 2_500, 4_500, 6_500, 8_500)


def count(inbox: Path) -> int:
    if not inbox.exists():
        return 0
    db = sqlite3.connect(inbox, timeout=30)
    try:
        return int(db.execute("SELECT count(*) FROM inbox").fetchone()[0])
    except sqlite3.OperationalError:
        return 0  # the consumer has not made its table yet
    finally:
        db.close()


def acked(rt: Runtime, consumer: str) -> int:
    db = sqlite3.connect(rt.data_dir / "collab" / "collab.db", timeout=30)
    try:
        row = db.execute("SELECT acked_sequence FROM consumers WHERE name = ?", (consumer,))
        found = row.fetchone()
        return 0 if found is None else int(found[0])
    finally:
        db.close()


def subscribe_child(consumer: subprocess.Popen[bytes]) -> psutil.Process | None:
    """The consumer's running `pebrel ... events subscribe` process."""
    for child in psutil.Process(consumer.pid).children():
        try:
            if "subscribe" in child.cmdline() and child.status() != psutil.STATUS_ZOMBIE:
                return child
        except psutil.Error:
            continue
    return None


def test_the_reference_consumer_stores_every_event_once_through_kills(
    runtime: Runtime, tmp_path: Path
) -> None:
    b = bridge(runtime, tmp_path)
    inbox = tmp_path / "inbox.db"
    log = (tmp_path / "consumer.log").open("wb")
    consumer = subprocess.Popen(
        [sys.executable, str(CONSUMER), "--principal", b.principal, "--consumer", "inbox",
         "--inbox", str(inbox), "--pebrel", PEBREL],
        env=b.env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    produced = [0]
    failure: list[BaseException] = []

    def produce() -> None:
        try:
            for start in range(0, EVENTS, CHUNK):
                make_tasks(runtime, b.group_id, start, CHUNK)
                produced[0] = start + CHUNK
        except BaseException as exc:  # reported by the test thread
            failure.append(exc)

    producer = threading.Thread(target=produce)
    try:
        wait_for(lambda: subscribe_child(consumer), 30, "the consumer's subscribe process")
        producer.start()
        kills, cuts = list(SERVICE_KILLS), list(CUTS)
        while kills or cuts:
            assert not failure, failure
            assert consumer.poll() is None, (tmp_path / "consumer.log").read_text()
            if kills and produced[0] >= kills[0]:
                kills.pop(0)
                kill_collab(runtime)
                wait_for(lambda: serving(runtime), 60, "the restarted collab service")
            elif cuts and count(inbox) >= cuts[0]:
                child = wait_for(lambda: subscribe_child(consumer), 30, "a subscribe process")
                cuts.pop(0)
                child.send_signal(signal.SIGKILL)
            else:
                wait_for(
                    lambda: (
                        failure
                        or (kills and produced[0] >= kills[0])
                        or (cuts and count(inbox) >= cuts[0])
                    ),
                    300,
                    f"the next kill ({kills[:1]} produced, {cuts[:1]} stored)",
                )
        producer.join(300)
        assert not producer.is_alive() and not failure, failure
        wait_for(lambda: count(inbox) >= EVENTS, 300, f"{EVENTS} events in the inbox")
        wait_for(lambda: acked(runtime, "inbox") == EVENTS, 60, "the last event ACKed")
    finally:
        consumer.send_signal(signal.SIGTERM)
        code = consumer.wait(30)
        log.close()
    text = (tmp_path / "consumer.log").read_text()
    assert code == 0, text
    assert text.count("starting it again") >= len(CUTS), text
    kept = journal(runtime, b.group_id)
    assert len(kept) == EVENTS and kept[0]["sequence"] == 1
    db = sqlite3.connect(inbox)
    try:
        stored = db.execute("SELECT sequence, event_id FROM inbox ORDER BY rowid").fetchall()
    finally:
        db.close()
    assert [s for s, _ in stored] == list(range(1, EVENTS + 1)), "once each, in order"
    assert [e for _, e in stored] == [e["event_id"] for e in kept], "ids unchanged"
