"""The collab service's one SQLite database: the schema, transactions and the journal (I2, I3).

Everything the collaboration layer knows lives in `<data_dir>/collab/collab.db` (stdlib
`sqlite3`, WAL, `synchronous=FULL`; directory 0700, file 0600). A write is acknowledged to its
caller only after its transaction committed, and a source fact (a task event, a message, a
delivery stage, a session change) commits **in the same transaction** as its journal event.

Facts are append-only. Every fact table that produces an event carries the same seven event
columns (`EVENT_COLUMNS`): the event's id, its group, its group `sequence`, its kind, its time,
its references and its payload. The journal is therefore a projection: if its table is missing
or damaged it is refilled from the fact tables (`rebuild_journal`) with the same ids and
sequences, above the stored retention floor so a rebuild never brings trimmed events back.

This module is the only one that opens the database; a later server-backed store would be a
second implementation of `Store`, not a rewrite of the domain modules.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import sqlite3
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pebrel.errors import CollabCode, CollabError

DB_DIR: Final = "collab"
DB_FILE: Final = "collab.db"
SCHEMA_VERSION: Final = 1
#: Retention (I2.4): the newest events kept per group, and the journal's payload bytes in all.
RETAIN_EVENTS_PER_GROUP: Final = 10_000
RETAIN_BYTES: Final = 64 * 1024 * 1024

#: The columns every event-producing fact table has, in this order.
EVENT_COLUMNS: Final = (
    "event_id",
    "group_id",
    "sequence",
    "kind",
    "created_at",
    "refs",
    "payload",
)
_EVENT_DDL: Final = """
    event_id TEXT NOT NULL UNIQUE,
    group_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    kind TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    refs TEXT NOT NULL,
    payload TEXT NOT NULL"""

#: The fact tables that produce journal events (each has `EVENT_COLUMNS`).
FACT_TABLES: Final = ("task_events", "artifacts", "messages", "delivery_stages", "session_events")

#: Times are Unix milliseconds (integers) everywhere.
SCHEMA: Final = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS groups (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    last_sequence INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    group_id TEXT REFERENCES groups(id),
    agent_id TEXT NOT NULL,
    agent_name TEXT,
    generation INTEGER NOT NULL,
    agent_kind TEXT NOT NULL,
    native_session_id TEXT,
    state TEXT NOT NULL,
    error_code TEXT,
    terminal_binding TEXT NOT NULL,
    launch_profile_id TEXT,
    principal_id TEXT,
    cwd TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS session_events ({_EVENT_DDL},
    session_id TEXT NOT NULL REFERENCES sessions(id)
);
CREATE TABLE IF NOT EXISTS launch_snapshots (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id),
    executable TEXT NOT NULL,
    argv TEXT NOT NULL,
    cwd TEXT NOT NULL,
    resume_argv TEXT NOT NULL,
    startup_input TEXT
);
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    group_id TEXT NOT NULL REFERENCES groups(id),
    title TEXT NOT NULL,
    content TEXT NOT NULL,
    status TEXT NOT NULL,
    revision INTEGER NOT NULL,
    current_attempt_id TEXT,
    plan_state TEXT,
    accepted_artifact_id TEXT,
    source TEXT NOT NULL,
    origin TEXT,
    external_actor TEXT,
    metadata TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS attempts (
    id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks(id),
    number INTEGER NOT NULL,
    assignee_session TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    last_report TEXT
);
CREATE TABLE IF NOT EXISTS task_events ({_EVENT_DDL},
    task_id TEXT NOT NULL REFERENCES tasks(id),
    attempt_id TEXT,
    actor TEXT NOT NULL,
    body TEXT NOT NULL,
    reply_to_event_id TEXT
);
CREATE TABLE IF NOT EXISTS artifacts ({_EVENT_DDL},
    id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks(id),
    attempt_id TEXT NOT NULL,
    content TEXT NOT NULL,
    summary TEXT,
    evidence TEXT
);
CREATE TABLE IF NOT EXISTS decisions (
    id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks(id),
    attempt_id TEXT NOT NULL,
    question_event_id TEXT NOT NULL,
    question TEXT NOT NULL,
    answer TEXT,
    answer_event_id TEXT,
    answered_by TEXT,
    answered_at INTEGER
);
CREATE TABLE IF NOT EXISTS messages ({_EVENT_DDL},
    id TEXT PRIMARY KEY,
    to_session TEXT NOT NULL,
    from_actor TEXT NOT NULL,
    thread_id TEXT,
    reply_to TEXT,
    task_id TEXT,
    attempt_id TEXT,
    reply_to_event_id TEXT,
    content TEXT NOT NULL,
    metadata TEXT
);
CREATE TABLE IF NOT EXISTS delivery_stages ({_EVENT_DDL},
    delivery_id TEXT NOT NULL,
    message_id TEXT NOT NULL REFERENCES messages(id),
    stage TEXT NOT NULL,
    reason TEXT,
    try INTEGER NOT NULL,
    at INTEGER NOT NULL,
    code TEXT,
    written INTEGER,
    submitted INTEGER
);
CREATE INDEX IF NOT EXISTS delivery_stages_message ON delivery_stages(message_id);
CREATE INDEX IF NOT EXISTS task_events_task ON task_events(task_id);
CREATE INDEX IF NOT EXISTS messages_to ON messages(to_session);
CREATE INDEX IF NOT EXISTS messages_task ON messages(task_id);
CREATE TABLE IF NOT EXISTS journal_floor (
    group_id TEXT PRIMARY KEY,
    floor INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS idempotency (
    scope TEXT NOT NULL,
    key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    response TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
);
"""
JOURNAL_DDL: Final = """
CREATE TABLE IF NOT EXISTS journal (
    group_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    event_id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    refs TEXT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (group_id, sequence)
) WITHOUT ROWID;
"""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def new_id(prefix: str) -> str:
    """A fresh public id: ``prefix`` + ``_`` + 20 hex digits (80 random bits)."""
    return f"{prefix}_{secrets.token_hex(10)}"


def dumps(value: Any) -> str:
    """The one JSON encoding of stored values (compact, strict: NaN refused)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def request_hash(method: str, params: Mapping[str, Any]) -> str:
    """What an idempotency key is bound to: the method and its params (the key itself left out)."""
    kept = {k: v for k, v in params.items() if k != "idempotency_key"}
    return hashlib.sha256(dumps([method, kept]).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Event:
    """A journal event as appended: its id and its place in its group's order."""

    event_id: str
    group_id: str
    sequence: int
    kind: str
    created_at: int
    refs: dict[str, Any]
    payload: dict[str, Any]

    def columns(self) -> dict[str, Any]:
        """The seven event columns of a fact row, as stored."""
        return {
            "event_id": self.event_id,
            "group_id": self.group_id,
            "sequence": self.sequence,
            "kind": self.kind,
            "created_at": self.created_at,
            "refs": dumps(self.refs),
            "payload": dumps(self.payload),
        }


class Tx:
    """One write transaction (BEGIN IMMEDIATE ... COMMIT). Domain modules write through it."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.now = now_ms()

    def execute(self, sql: str, args: Mapping[str, Any] | tuple[Any, ...] = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, args)

    def insert(self, table: str, row: Mapping[str, Any]) -> None:
        names = ", ".join(row)
        marks = ", ".join(f":{name}" for name in row)
        self.conn.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", dict(row))

    def event(
        self,
        group_id: str,
        kind: str,
        payload: dict[str, Any],
        refs: dict[str, Any] | None = None,
        event_id: str | None = None,
    ) -> Event:
        """Take the group's next sequence and append the event to the journal.

        The caller stores the same event in its fact row (``Event.columns()``) in this
        transaction, so the journal can be rebuilt from the facts.
        """
        row = self.conn.execute(
            "UPDATE groups SET last_sequence = last_sequence + 1 WHERE id = ?"
            " RETURNING last_sequence",
            (group_id,),
        ).fetchone()
        if row is None:
            raise CollabError(CollabCode.GROUP_NOT_FOUND, f"no group {group_id}")
        kept_refs = {k: v for k, v in (refs or {}).items() if v is not None}
        ev = Event(
            event_id=event_id or new_id("evt"),
            group_id=group_id,
            sequence=int(row[0]),
            kind=kind,
            created_at=self.now,
            refs=kept_refs,
            payload=payload,
        )
        cols = ev.columns()
        self.insert("journal", {k: cols[k] for k in EVENT_COLUMNS})
        return ev

    def fact(self, table: str, ev: Event, row: Mapping[str, Any]) -> None:
        """Insert a fact row carrying event ``ev``."""
        self.insert(table, {**ev.columns(), **row})

    # -- idempotency (I3.1) -------------------------------------------------------------------
    def replay(self, scope: str, key: str, method: str, params: Mapping[str, Any]) -> Any:
        """The stored answer to an earlier request with this key, or None for a new key.

        Same key, other params: IDEMPOTENCY_CONFLICT.
        """
        row = self.conn.execute(
            "SELECT request_hash, response FROM idempotency WHERE scope = ? AND key = ?",
            (scope, key),
        ).fetchone()
        if row is None:
            return None
        if row[0] != request_hash(method, params):
            raise CollabError(
                CollabCode.IDEMPOTENCY_CONFLICT,
                "this idempotency key was used with other parameters",
                {"idempotency_key": key},
            )
        return json.loads(row[1])

    def remember(
        self, scope: str, key: str, method: str, params: Mapping[str, Any], response: Any
    ) -> None:
        self.insert(
            "idempotency",
            {
                "scope": scope,
                "key": key,
                "request_hash": request_hash(method, params),
                "response": dumps(response),
                "created_at": self.now,
            },
        )


class Store:
    """The open database. One connection, used from the collab service's loop thread only."""

    def __init__(self, data_dir: Path) -> None:
        self.dir = data_dir / DB_DIR
        self.path = self.dir / DB_FILE
        self.dir.mkdir(mode=0o700, exist_ok=True)
        os.chmod(self.dir, 0o700)
        if not self.path.exists():
            fd = os.open(self.path, os.O_CREAT | os.O_WRONLY | os.O_NOFOLLOW, 0o600)
            os.close(fd)
        os.chmod(self.path, 0o600)
        self.conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=FULL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        self.conn.execute("PRAGMA busy_timeout=5000")
        self.conn.executescript(SCHEMA)
        self.conn.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)",
            (str(SCHEMA_VERSION),),
        )
        self.rebuilt = self.ensure_journal()

    def close(self) -> None:
        self.conn.close()

    @contextlib.contextmanager
    def write(self) -> Iterator[Tx]:
        """A write transaction; committed (durably: synchronous=FULL) when the block ends."""
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise storage_error(exc) from exc
        try:
            yield Tx(self.conn)
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        try:
            self.conn.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("ROLLBACK")
            raise storage_error(exc) from exc

    def read(self, sql: str, args: Mapping[str, Any] | tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        cur = self.conn.execute(sql, args)
        cur.row_factory = sqlite3.Row
        return list(cur.fetchall())

    # -- the journal as a projection (I2.6) ---------------------------------------------------
    def ensure_journal(self) -> int:
        """Create the journal if missing and refill what the facts hold above each floor.

        Returns how many events were put back (0 on a healthy start).
        """
        try:
            self.conn.execute("SELECT count(*) FROM journal").fetchone()
            healthy = True
        except sqlite3.DatabaseError:
            healthy = False
        if not healthy:
            with contextlib.suppress(sqlite3.DatabaseError):
                self.conn.execute("DROP TABLE IF EXISTS journal")
        self.conn.executescript(JOURNAL_DDL)
        return self.rebuild_journal()

    def rebuild_journal(self) -> int:
        """Insert every fact's event that the journal lacks, above its group's floor."""
        cols = ", ".join(EVENT_COLUMNS)
        union = " UNION ALL ".join(f"SELECT {cols} FROM {t}" for t in FACT_TABLES)
        with self.write() as tx:
            cur = tx.execute(
                f"INSERT OR IGNORE INTO journal ({cols}) SELECT {cols} FROM ({union}) AS f"
                " WHERE f.sequence > coalesce("
                "(SELECT floor FROM journal_floor WHERE group_id = f.group_id), 0)"
                " AND f.event_id NOT IN (SELECT event_id FROM journal)"
            )
            return max(cur.rowcount, 0)

    def trim_journal(self, group_id: str) -> None:
        """Retention (I2.4): keep the newest events of the group, and the bytes bound overall.

        The floor (the highest trimmed sequence) is stored so a rebuild never brings trimmed
        events back.
        """
        with self.write() as tx:
            row = tx.execute(
                "SELECT max(sequence) FROM journal WHERE group_id = ?", (group_id,)
            ).fetchone()
            if row is None or row[0] is None:
                return
            floor = int(row[0]) - RETAIN_EVENTS_PER_GROUP
            total = tx.execute("SELECT coalesce(sum(length(payload)), 0) FROM journal").fetchone()
            if int(total[0]) > RETAIN_BYTES:
                # Drop the oldest events of the group until the total fits (bounded per trim).
                acc = 0
                for seq, size in tx.execute(
                    "SELECT sequence, length(payload) FROM journal WHERE group_id = ?"
                    " ORDER BY sequence",
                    (group_id,),
                ):
                    acc += int(size)
                    floor = max(floor, int(seq))
                    if int(total[0]) - acc <= RETAIN_BYTES:
                        break
            if floor <= 0:
                return
            tx.execute(
                "INSERT INTO journal_floor (group_id, floor) VALUES (?, ?)"
                " ON CONFLICT(group_id) DO UPDATE SET floor = max(floor, excluded.floor)",
                (group_id, floor),
            )
            tx.execute(
                "DELETE FROM journal WHERE group_id = ? AND sequence <= ?", (group_id, floor)
            )

    def floor(self, group_id: str) -> int:
        row = self.conn.execute(
            "SELECT floor FROM journal_floor WHERE group_id = ?", (group_id,)
        ).fetchone()
        return int(row[0]) if row else 0


def storage_error(exc: sqlite3.Error) -> CollabError:
    return CollabError(
        CollabCode.COLLAB_STORAGE_UNAVAILABLE,
        f"the collab database could not commit: {exc.__class__.__name__}",
    )


def event_record(row: Mapping[str, Any]) -> dict[str, Any]:
    """A journal row as the public event envelope (I2.2), without the cursor."""
    refs = json.loads(row["refs"])
    return {
        "type": "event",
        "event_id": row["event_id"],
        "group_id": row["group_id"],
        "sequence": row["sequence"],
        "kind": row["kind"],
        "created_at": row["created_at"],
        "payload": json.loads(row["payload"]),
        **refs,
    }
