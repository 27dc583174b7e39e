#!/usr/bin/env python3
"""A reference consumer of Pebrel's durable event stream (docs/integration.md, "Events").

It runs `pebrel collab --principal ID events subscribe --consumer NAME --jsonl`, stores every
event it reads in its own SQLite inbox (keyed by `event_id`, committed durably), and only then
ACKs the cursor of the stored contiguous prefix with `pebrel collab --principal ID events ack`.
So an event is in the inbox before Pebrel forgets it, and an event Pebrel sends again (after
a reconnect, un-ACKed events repeat with the same ids) is recognised and skipped: every event
ends up in the inbox exactly once, in sequence order.

What your business logic then does with the inbox (send a chat message, open a ticket) is
yours: read it in `sequence` order and keep your own "done" marks. An ACK only means "stored".

    export PEBREL_INTEGRATION_CREDENTIAL_FILE=~/.config/pebrel/report-bridge.json
    python3 integration_consumer.py --principal report-bridge --consumer bridge-main \
        --inbox bridge-inbox.db

The subscribe command reconnects by itself (with backoff) when the connection or the service
is lost; if it is killed, this script starts it again. A terminal error (revoked identity,
retention gap, ...) ends this script with status 1 and the error line on stderr. SIGTERM or
Ctrl-C stops it. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from typing import Any

#: Events stored per transaction at most (one fsync per batch, not per event).
BATCH = 500
#: ACK after this many newly stored events, or as soon as no more lines are waiting.
ACK_EVERY = 500
#: Seconds to wait for more lines before storing what was read and ACKing it.
IDLE_S = 0.05
#: Seconds before an ACK that was refused or unanswered is tried again.
RETRY_S = 0.5

SCHEMA = """
CREATE TABLE IF NOT EXISTS inbox (
    event_id TEXT PRIMARY KEY,
    sequence INTEGER NOT NULL UNIQUE,
    group_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    cursor TEXT NOT NULL,
    event TEXT NOT NULL,
    stored_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS acked (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    sequence INTEGER NOT NULL,
    cursor TEXT NOT NULL
);
"""


class Broken(Exception):
    """The stream broke a promise (a gap, an id changed): stop, never store past it."""


def log(message: str) -> None:
    print(f"integration_consumer: {message}", file=sys.stderr, flush=True)


class Inbox:
    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(SCHEMA)

    def last(self) -> tuple[int, str] | None:
        """The newest stored event's sequence and cursor (the stored prefix ends there)."""
        row = self.db.execute(
            "SELECT sequence, cursor FROM inbox ORDER BY sequence DESC LIMIT 1"
        ).fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    def acked(self) -> int:
        row = self.db.execute("SELECT sequence FROM acked WHERE id = 1").fetchone()
        return 0 if row is None else int(row[0])

    def store(self, events: list[dict[str, Any]]) -> int:
        """Store new events in one durable transaction; returns how many were new."""
        new = 0
        self.db.execute("BEGIN IMMEDIATE")
        try:
            last = self.last()
            for event in events:
                sequence = int(event["sequence"])
                seen = self.db.execute(
                    "SELECT event_id FROM inbox WHERE sequence = ?", (sequence,)
                ).fetchone()
                if seen is not None:
                    if seen[0] != event["event_id"]:
                        raise Broken(f"sequence {sequence} came back with another event id")
                    continue  # sent again after a reconnect: already stored
                if last is not None and sequence != last[0] + 1:
                    raise Broken(f"sequence {sequence} follows {last[0]}: a gap")
                self.db.execute(
                    "INSERT INTO inbox VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        event["event_id"],
                        sequence,
                        event["group_id"],
                        event["kind"],
                        event["cursor"],
                        json.dumps(event, ensure_ascii=False, separators=(",", ":")),
                        time.time_ns() // 1_000_000,
                    ),
                )
                last = (sequence, event["cursor"])
                new += 1
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return new

    def mark_acked(self, sequence: int, cursor: str) -> None:
        self.db.execute(
            "INSERT INTO acked (id, sequence, cursor) VALUES (1, ?, ?)"
            " ON CONFLICT(id) DO UPDATE SET sequence = excluded.sequence,"
            " cursor = excluded.cursor",
            (sequence, cursor),
        )


class Consumer:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.inbox = Inbox(args.inbox)
        self.lines: queue.Queue[dict[str, Any] | int] = queue.Queue()
        self.child: subprocess.Popen[bytes] | None = None
        self.stopping = False
        self.unacked = 0
        self.retry_at = 0.0

    def base(self) -> list[str]:
        return [self.args.pebrel, "collab", "--principal", self.args.principal, "events"]

    # -- the subscribe process ------------------------------------------------------------------
    def start(self) -> None:
        argv = [*self.base(), "subscribe", "--consumer", self.args.consumer, "--jsonl"]
        self.child = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        threading.Thread(target=self.read, args=(self.child,), daemon=True).start()

    def read(self, child: subprocess.Popen[bytes]) -> None:
        assert child.stdout is not None
        for raw in child.stdout:
            try:
                self.lines.put(json.loads(raw))
            except ValueError:
                log(f"not a JSON line: {raw[:200]!r}")
        self.lines.put(child.wait())  # its exit status: the stream ended

    def stop(self, *_: Any) -> None:
        self.stopping = True
        if self.child is not None and self.child.poll() is None:
            self.child.terminate()

    # -- storing and acknowledging ----------------------------------------------------------------
    def ack(self) -> None:
        """ACK the cursor of the stored contiguous prefix, if it moved."""
        last = self.inbox.last()
        if last is None or last[0] <= self.inbox.acked() or time.monotonic() < self.retry_at:
            return
        sequence, cursor = last
        argv = [*self.base(), "ack", cursor, "--consumer", self.args.consumer]
        done = subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL)
        try:
            answer = json.loads(done.stdout)
        except ValueError:
            log(f"ack gave no answer (exit {done.returncode}); will ACK again later")
            self.retry_at = time.monotonic() + RETRY_S
            return
        if answer.get("ok"):
            self.inbox.mark_acked(sequence, cursor)
            self.unacked = 0
            return
        self.retry_at = time.monotonic() + RETRY_S
        if answer.get("code") in ("EVENT_ACK_NOT_SENT", "INVALID_EVENT_CURSOR"):
            # Not sent by the newest stream yet (it replays from the last ACK), or behind an
            # ACK that went through although its answer was lost: ACK again later.
            pass
        else:
            log(f"ack refused: {answer.get('code')}: {answer.get('error')}")

    def run(self) -> int:
        backoff = 0.2
        self.start()
        while True:
            try:
                first = self.lines.get(timeout=IDLE_S if self.unacked else 1.0)
            except queue.Empty:
                if self.unacked:
                    self.ack()
                continue
            batch: list[dict[str, Any]] = []
            ended: int | None = None
            item: dict[str, Any] | int = first
            while True:
                if isinstance(item, int):
                    ended = item
                    break
                if item.get("type") == "event":
                    batch.append(item)
                elif item.get("type") == "error":
                    log(f"stream error: {item.get('code')}: {item.get('error')}")
                if len(batch) >= BATCH:
                    break
                try:
                    item = self.lines.get_nowait()
                except queue.Empty:
                    break
            if batch:
                self.unacked += self.inbox.store(batch)
                backoff = 0.2
            if self.unacked >= ACK_EVERY or (self.unacked and self.lines.empty()):
                self.ack()
            if ended is None:
                continue
            if self.stopping:
                return 0
            if ended == 1:  # a terminal error: fix the cause before starting again
                return 1
            log(f"the subscribe command ended (status {ended}); starting it again")
            time.sleep(backoff)
            backoff = min(backoff * 2, 10.0)
            self.start()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--principal", required=True, help="the integration identity's id")
    parser.add_argument("--consumer", required=True, help="the consumer name (1-64 chars)")
    parser.add_argument("--inbox", required=True, help="the SQLite inbox file")
    parser.add_argument("--pebrel", default=os.environ.get("PEBREL", "pebrel"), help="CLI path")
    consumer = Consumer(parser.parse_args())
    signal.signal(signal.SIGTERM, consumer.stop)
    signal.signal(signal.SIGINT, consumer.stop)
    try:
        return consumer.run()
    except Broken as exc:
        log(f"stopped: {exc}")
        consumer.stop()
        return 2


if __name__ == "__main__":
    sys.exit(main())
