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

**Group commit.** A request's write (`Store.joined`, used by collab/writes.py) runs in a
SAVEPOINT of one transaction shared by every write of the loop's turn; that transaction commits
(one fsync) on the loop's next turn, and each write is answered only after it (`Store.settled`).
A commit that fails rolls the whole batch back and fails each of its writes as retryable. Until
it commits, nothing outside a request sees the batch: `Store.read` and `Store.write` from
anything but a request (the delivery engine, the event streams, retention) commit the open
batch first, and a request's answer waits for the batches its reads and writes were in
(`Request`, collab/service.py), and fails only if one of those did not commit.

This module is the only one that opens the database; a later server-backed store would be a
second implementation of `Store`, not a rewrite of the domain modules.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import json
import logging
import os
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pebrel.collab import journal
from pebrel.collab.ddl import ADDED_COLUMNS, EVENT_COLUMNS, FACT_TABLES, JOURNAL_DDL, SCHEMA
from pebrel.errors import CollabCode, CollabError

logger = logging.getLogger(__name__)

DB_DIR: Final = "collab"
DB_FILE: Final = "collab.db"
SCHEMA_VERSION: Final = 1


#: Set (by collab/service.py) while a request is being handled: its reads may see the open
#: batch, because its answer waits for that batch's commit. Anything else commits it first.
IN_REQUEST: Final[contextvars.ContextVar[Request | None]] = contextvars.ContextVar(
    "collab_in_request", default=None
)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def new_id(prefix: str) -> str:
    """A fresh public id: ``prefix`` + ``_`` + 20 hex digits (80 random bits)."""
    return f"{prefix}_{secrets.token_hex(10)}"


def dumps(value: Any) -> str:
    """The one JSON encoding of stored values (compact, strict: NaN refused)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def request_hash(method: str, params: Mapping[str, Any]) -> str:
    """What an idempotency key is bound to: the method and its params (the key itself left
    out), whatever order the client wrote the params' keys in."""
    kept = {k: v for k, v in params.items() if k != "idempotency_key"}
    canonical = json.dumps([method, kept], separators=(",", ":"), sort_keys=True, allow_nan=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


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
    #: ``refs`` and ``payload`` as stored, encoded once (the journal row, the fact row and
    #: retention's byte count all use them).
    refs_json: str
    payload_json: str

    def columns(self) -> dict[str, Any]:
        """The seven event columns of a fact row, as stored."""
        return {
            "event_id": self.event_id,
            "group_id": self.group_id,
            "sequence": self.sequence,
            "kind": self.kind,
            "created_at": self.created_at,
            "refs": self.refs_json,
            "payload": self.payload_json,
        }


def read_rows(
    conn: sqlite3.Connection, sql: str, args: Mapping[str, Any] | tuple[Any, ...]
) -> list[sqlite3.Row]:
    """Every row of a query, as `sqlite3.Row` (looked up by column name)."""
    cur = conn.execute(sql, args)
    cur.row_factory = sqlite3.Row
    return list(cur.fetchall())


class Tx:
    """One write transaction (BEGIN IMMEDIATE ... COMMIT). Domain modules write through it."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.now = now_ms()
        #: The events this transaction appended (retention looks at them after the commit).
        self.events: list[Event] = []
        #: The group-commit batch it is a write of (`Store.joined`); None for `Store.write`.
        self.batch: Batch | None = None

    def execute(self, sql: str, args: Mapping[str, Any] | tuple[Any, ...] = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, args)

    def read(self, sql: str, args: Mapping[str, Any] | tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        """As `Store.read`, inside this transaction."""
        return read_rows(self.conn, sql, args)

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
            refs_json=dumps(kept_refs),
            payload_json=dumps(payload),
        )
        self.insert("journal", ev.columns())
        self.events.append(ev)
        return ev

    def fact(self, table: str, ev: Event, row: Mapping[str, Any]) -> None:
        """Insert a fact row carrying event ``ev``."""
        self.insert(table, {**ev.columns(), **row})

    # -- idempotency (I3.1) -------------------------------------------------------------------
    def replay(self, scope: str, key: str, digest: str) -> Any:
        """The stored answer to an earlier request with this key, or None for a new key.

        ``digest`` is the request's `request_hash`. Same key, other params:
        IDEMPOTENCY_CONFLICT.
        """
        row = self.conn.execute(
            "SELECT request_hash, response FROM idempotency WHERE scope = ? AND key = ?",
            (scope, key),
        ).fetchone()
        if row is None:
            return None
        if row[0] != digest:
            raise CollabError(
                CollabCode.IDEMPOTENCY_CONFLICT,
                "this idempotency key was used with other parameters",
                {"idempotency_key": key},
            )
        return json.loads(row[1])

    def remember(self, scope: str, key: str, digest: str, response: Any) -> None:
        self.insert(
            "idempotency",
            {
                "scope": scope,
                "key": key,
                "request_hash": digest,
                "response": dumps(response),
                "created_at": self.now,
            },
        )


class Batch:
    """The open shared transaction: the events its writes appended, and its outcome."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.events: list[Event] = []
        #: True once committed, False once rolled back (every write in it failed).
        self.outcome: bool | None = None
        #: Set to the outcome, for the writers waiting in its loop.
        self.done: asyncio.Future[bool] = loop.create_future()

    def tell(self, committed: bool) -> None:
        """Wake its writers. A loop already closed (stopped with writers still waiting) has
        no one left to wake: the outcome stands in the database either way."""
        if self.outcome is None:
            self.outcome = committed
        if not self.done.done() and not self.loop.is_closed():
            self.done.set_result(committed)


class Request:
    """One request's view of the group commit: the batches it read or wrote in. Its answer
    waits for each of them (`Store.settled`); a batch it never saw cannot fail it."""

    def __init__(self) -> None:
        self.batches: list[Batch] = []

    def saw(self, batch: Batch) -> None:
        if batch not in self.batches:
            self.batches.append(batch)


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
        self.add_columns()
        self.conn.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)",
            (str(SCHEMA_VERSION),),
        )
        self.floors: dict[str, int] = {}
        #: The open group-commit batch, if any; a `joined` block running.
        self.batch: Batch | None = None
        self.in_write = False
        #: Values derived from rows and kept between requests by the modules that own the
        #: rows (collab/principals.py); their writers drop them, and so does a failed batch.
        #: Looked up with `recall` (a kept value may come from the open batch).
        self.memo: dict[tuple[str, str], Any] = {}
        #: Called with a transaction's events after it committed (collab/stream.py wakes the
        #: event streams of their groups); a failing hook is logged, never the write's failure.
        self.committed: list[Callable[[list[Event]], None]] = []
        self.rebuilt = self.ensure_journal()
        #: The journal's payload bytes (kept in memory: this process is the only writer).
        self.journal_bytes = int(
            self.conn.execute(
                "SELECT coalesce(sum(length(CAST(payload AS BLOB))), 0) FROM journal"
            ).fetchone()[0]
        )

    def close(self) -> None:
        self.flush()
        self.conn.close()

    def add_columns(self) -> None:
        """Give a database made by an earlier version the columns added since."""
        for table, column, kind in ADDED_COLUMNS:
            have = {row[1] for row in self.conn.execute(f"PRAGMA table_info({table})")}
            if column not in have:
                self.conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")

    @contextlib.contextmanager
    def write(self) -> Iterator[Tx]:
        """A write transaction; committed (durably: synchronous=FULL) when the block ends.

        An open batch is committed first, so this transaction is alone and durable at once
        (the delivery engine commits `writing` before it types: I3)."""
        if self.in_write:
            raise RuntimeError("a write inside a write")
        self.flush()
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise storage_error(exc) from exc
        tx = Tx(self.conn)
        try:
            yield tx
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        try:
            self.conn.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("ROLLBACK")
            raise storage_error(exc) from exc
        if tx.events:
            self.retain(tx.events)
            self.announce(tx.events)

    def announce(self, events: list[Event]) -> None:
        for hook in self.committed:
            try:
                hook(events)
            except Exception:
                logger.exception("a post-commit hook failed")

    def read(self, sql: str, args: Mapping[str, Any] | tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        """Rows as committed; a request (`IN_REQUEST`) also sees the open batch."""
        self.reading()
        return read_rows(self.conn, sql, args)

    def reading(self) -> None:
        """Before a read of the open batch's connection: from a request, note that it saw the
        open batch (its answer waits for it); from anything else, commit that batch first."""
        batch = self.batch
        if batch is None or self.in_write:
            return
        request = IN_REQUEST.get()
        if request is None:
            self.flush()
        else:
            request.saw(batch)

    def recall(self, key: tuple[str, str]) -> Any:
        """A value kept in `memo` (None: none), under the rule of `read`: it may have been
        read from the open batch, so outside a request that batch is committed first (if
        it fails, the memo is emptied and None comes back)."""
        self.reading()
        return self.memo.get(key)

    # -- group commit -------------------------------------------------------------------------
    @contextlib.contextmanager
    def joined(self) -> Iterator[Tx]:
        """One write in the open batch (opened if none): a SAVEPOINT, undone alone if the
        block raises. Durable only once `settled` returns."""
        if self.in_write:
            raise RuntimeError("a write inside a write")
        loop = asyncio.get_running_loop()
        if self.batch is not None and self.batch.loop is not loop:
            self.flush()  # left open by a loop that ended before its commit ran
        if self.batch is not None and not self.conn.in_transaction:
            # SQLite rolled the whole transaction back under an earlier write (it may, on an
            # I/O error, a full disk or no memory): its writes are gone. A savepoint now
            # would run outside any transaction, each RELEASE committing on its own.
            self.failed(self.batch)
        batch = self.batch
        if batch is None:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise storage_error(exc) from exc
            batch = self.batch = Batch(loop)
            loop.call_soon(self.flush, batch)
        request = IN_REQUEST.get()
        if request is not None:
            request.saw(batch)
        tx = Tx(self.conn)
        tx.batch = batch
        self.conn.execute("SAVEPOINT w")
        self.in_write = True
        try:
            yield tx
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK TO w")
                self.conn.execute("RELEASE w")
            else:
                self.failed(batch)  # SQLite rolled back the whole transaction (see above)
            raise
        else:
            self.conn.execute("RELEASE w")
            batch.events.extend(tx.events)
        finally:
            self.in_write = False

    def flush(self, batch: Batch | None = None) -> None:
        """Commit the open batch (if it is ``batch``, when given) and tell its writers."""
        open_batch = self.batch
        if open_batch is None or (batch is not None and batch is not open_batch):
            return
        self.batch = None
        try:
            self.conn.execute("COMMIT")
        except sqlite3.Error:
            logger.warning("a batch of collab writes could not commit", exc_info=True)
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("ROLLBACK")
            self.failed(open_batch)
            return
        open_batch.tell(True)
        if open_batch.events:
            self.retain(open_batch.events)
            self.announce(open_batch.events)

    def failed(self, batch: Batch) -> None:
        """The batch is rolled back: each of its writes fails (`settled`), nothing kept from
        it stays (`memo`), and the next write opens a new batch."""
        if self.batch is batch:
            self.batch = None
            logger.warning("a batch of collab writes was rolled back by the database")
        self.memo.clear()
        batch.tell(False)

    async def settled(self, batches: Iterable[Batch]) -> None:
        """Return once each of ``batches`` (what a request read or wrote in) committed.

        If one did not, what the request saw or wrote may never have been stored: it fails
        as retryable. A batch it never saw (one opened later, say) cannot fail it."""
        for batch in list(batches):
            if batch.outcome is None:
                if batch.loop is not asyncio.get_running_loop():
                    self.flush(batch)  # left open by a loop that ended before its commit ran
                else:
                    await asyncio.shield(batch.done)
            if not batch.outcome:
                raise CollabError(
                    CollabCode.COLLAB_STORAGE_UNAVAILABLE,
                    "the collab database could not commit this request's batch",
                )

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
        if healthy and self.journal_complete():
            return 0  # the usual start: no walk through every fact table
        return self.rebuild_journal()

    def journal_complete(self) -> bool:
        """Whether the journal holds every sequence above each group's floor.

        A group's sequences run gaplessly from 1 to its `last_sequence` (each taken in the
        transaction that appends its event) and retention removes exactly those up to the
        floor; (group, sequence) is the journal's key, so no group can hold more. Equal
        totals therefore mean nothing is missing."""
        expected = self.conn.execute(
            "SELECT coalesce(sum(g.last_sequence - coalesce(f.floor, 0)), 0) FROM groups AS g"
            " LEFT JOIN journal_floor AS f ON f.group_id = g.id"
        ).fetchone()[0]
        held = self.conn.execute("SELECT count(*) FROM journal").fetchone()[0]
        return bool(int(expected) == int(held))

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

    def floor(self, group_id: str) -> int:
        """The highest sequence retention removed from the group's journal (0: none)."""
        found = self.floors.get(group_id)
        if found is None:
            row = self.conn.execute(
                "SELECT floor FROM journal_floor WHERE group_id = ?", (group_id,)
            ).fetchone()
            found = self.floors[group_id] = int(row[0]) if row else 0
        return found

    def retain(self, events: list[Event]) -> None:
        """After a commit: trim what retention no longer keeps (collab/journal.py).

        The write is already committed and acknowledged: a trim that fails is logged and
        tried again after a later write, never reported as the write's failure.
        """
        try:
            self._retain(events)
        except (sqlite3.Error, CollabError):
            logger.warning("journal retention could not trim; will try again", exc_info=True)

    def _retain(self, events: list[Event]) -> None:
        self.journal_bytes += sum(len(ev.payload_json.encode()) for ev in events)
        last: dict[str, int] = {}
        for ev in events:
            last[ev.group_id] = max(last.get(ev.group_id, 0), ev.sequence)
        for group_id, sequence in last.items():
            if sequence - self.floor(group_id) > journal.RETAIN_EVENTS_PER_GROUP + journal.SLACK:
                with self.write() as tx:
                    self.floors[group_id] = journal.trim_group(tx, group_id, sequence)
        if self.journal_bytes > journal.RETAIN_BYTES:
            with self.write() as tx:
                excess = self.journal_bytes - journal.RETAIN_BYTES
                floors, removed = journal.trim_bytes(tx, excess)
            self.floors.update(floors)
            self.journal_bytes -= removed


def storage_error(exc: sqlite3.Error) -> CollabError:
    return CollabError(
        CollabCode.COLLAB_STORAGE_UNAVAILABLE,
        f"the collab database could not commit: {exc.__class__.__name__}",
    )
