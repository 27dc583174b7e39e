"""The durable event stream: subscribe, replay, live push, heartbeats and ACK (I2.1-I2.5; #17).

`events.subscribe {consumer}` on the integration socket (collab/integration_server.py) opens a
**stream** for one consumer (collab/consumers.py) on that connection (one stream per
connection). The `Hub`, owned by the `Service`, keeps the open streams:

- **One pump per stream.** Each stream reads its group's journal in sequence order, in
  batches after the last sequence it sent, from the consumer's durable ACK (or the group's
  oldest retained event for a new consumer). When it has caught up it waits for a wake-up:
  `Store` calls `Hub.committed` after every commit that appended events. Replay and live push
  are the same loop, so an event is never skipped or sent twice by one stream, whatever the
  timing of commits. The newest committed events are also kept in a small cache per group, so
  live streams rarely touch the database.
- **Heartbeats** `{"type":"heartbeat","at":<unix ms>}` every `HEARTBEAT_S` seconds.
- **Send window.** Per consumer, in memory: `(acked, sent]` of its newest stream. An
  `events.ack` must fall in it (`EVENT_ACK_NOT_SENT` otherwise: after a service restart the
  window is empty until the consumer subscribes again), never go back (`INVALID_EVENT_CURSOR`),
  and is committed before it is answered. ACKing the current ACK again answers ok.
- **One logical receiver per consumer.** A subscribe for a consumer that has an open stream
  takes over: the older stream ends with `EVENT_CONSUMER_REPLACED` (retryable), and the
  window restarts with the new stream.
- **Slow consumers.** A stream stops pumping while its connection holds more than
  `SLOW_BYTES` unsent; if the connection does not drain within `SLOW_GRACE_S` the stream ends
  with `EVENT_CONSUMER_SLOW` (retryable). Nothing else waits for it.
- **Retention.** A stream whose next event was trimmed ends with `EVENT_RETENTION_GAP`.
- **Revoke** ends every stream of the principal at once with `INTEGRATION_REVOKED`.

The limits are module attributes read when they apply, so a test injection (tests/inject/)
can shorten them.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import sqlite3
from dataclasses import dataclass
from typing import Any, Final

from pebrel import integration_wire as wire
from pebrel.collab import consumers, cursor, principals
from pebrel.collab.consumers import Consumer
from pebrel.collab.handler import Actor, Ctx, Sink
from pebrel.collab.journal import event_record
from pebrel.collab.store import Event, Store, now_ms
from pebrel.errors import CollabCode, CollabError

logger = logging.getLogger(__name__)

#: Seconds between two heartbeats of a stream.
HEARTBEAT_S = 15.0
#: Unsent bytes on a connection past which its stream stops pumping.
SLOW_BYTES = 1024 * 1024
#: Seconds a connection may stay past SLOW_BYTES before its stream ends as slow.
SLOW_GRACE_S = 10.0
#: Seconds between two looks at a connection that is over SLOW_BYTES but takes more.
SLOW_POLL_S = 0.05
#: Events read from the journal at a time.
BATCH = 256
#: Newest committed events kept in memory per group for live streams (between this and
#: twice this many).
CACHE_EVENTS = 2048

SUBSCRIBE_PARAMS: Final = frozenset({"consumer"})
ACK_PARAMS: Final = frozenset({"consumer", "cursor"})


def line(row: Any) -> dict[str, Any]:
    """An event as the stream sends it: the journal's envelope plus its cursor (encoded once
    for all the streams that send it)."""
    record = wire.Shared(event_record(row))
    record["cursor"] = cursor.encode(record["group_id"], record["sequence"])
    return record


@dataclass(slots=True)
class Window:
    """What the newest stream of a consumer sent: ACKs must fall in ``(acked, sent]``."""

    stream: Stream
    acked: int
    sent: int


class Stream:
    def __init__(self, hub: Hub, consumer: Consumer, sink: Sink) -> None:
        self.hub = hub
        self.consumer = consumer
        self.sink = sink
        self.group_id = consumer.group_id
        self.sent = consumer.acked_sequence
        self.wake = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.ended = False

    def start(self) -> None:
        # Its own context: a stream reads only committed events (collab/store.py).
        self.task = asyncio.get_running_loop().create_task(
            self.run(), context=contextvars.Context()
        )

    async def run(self) -> None:
        try:
            await self.pump()
        except CollabError as exc:
            self.hub.end(self, exc)
        except sqlite3.Error as exc:
            logger.warning("an event stream could not read the journal", exc_info=True)
            self.hub.end(
                self, CollabError(CollabCode.COLLAB_STORAGE_UNAVAILABLE, f"journal read: {exc}")
            )
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("an event stream failed")
            self.hub.end(self, None)

    async def pump(self) -> None:
        loop = asyncio.get_running_loop()
        next_beat = loop.time() + HEARTBEAT_S
        timer = loop.call_at(next_beat, self.wake.set)  # wakes the pump for its heartbeat
        try:
            while not self.ended:
                if self.sink.closed:
                    self.hub.forget(self)
                    return
                if self.sink.buffered() > SLOW_BYTES:
                    await self.drained()
                    continue
                self.wake.clear()  # before reading: a commit from now on wakes us again
                batch = self.hub.after(self)
                sent_before = self.sent
                for record in batch:
                    self.sink.send(record)
                    self.sent = int(record["sequence"])
                    if self.sink.buffered() > SLOW_BYTES:
                        break  # the rest waits until the connection drained
                window = self.hub.windows.get(self.consumer.key)
                if window is not None and window.stream is self:
                    window.sent = self.sent
                now = loop.time()
                if now >= next_beat:
                    self.sink.send({"type": "heartbeat", "at": now_ms()})
                    next_beat = now + HEARTBEAT_S
                    timer.cancel()
                    timer = loop.call_at(next_beat, self.wake.set)
                if (
                    self.sent < sent_before + len(batch)
                    or len(batch) == BATCH
                    or self.sink.buffered() > SLOW_BYTES
                ):  # more to send, or a receiver to watch drain: let the others run first
                    await asyncio.sleep(0)
                    continue
                await self.wake.wait()  # caught up (a commit since the read set it again)
        finally:
            timer.cancel()

    async def drained(self) -> None:
        """Wait until the connection holds at most SLOW_BYTES; EVENT_CONSUMER_SLOW if that
        takes longer than SLOW_GRACE_S. (The connection's own drained() may return while it
        still holds more than our bound: it is then looked at again every SLOW_POLL_S.)"""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SLOW_GRACE_S
        while self.sink.buffered() > SLOW_BYTES and not self.sink.closed:
            left = deadline - loop.time()
            if left <= 0:
                raise CollabError(
                    CollabCode.EVENT_CONSUMER_SLOW,
                    f"consumer {self.consumer.name!r} left more than {SLOW_BYTES} bytes unread"
                    f" for {SLOW_GRACE_S:g} s; reconnect to resume from its ACK",
                    {"consumer": self.consumer.name, "sent_sequence": self.sent},
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.sink.drained(), left)
            if self.sink.buffered() > SLOW_BYTES:
                await asyncio.sleep(min(SLOW_POLL_S, max(deadline - loop.time(), 0)))


class Hub:
    """The open streams of the service, by connection, by consumer and by group."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.by_sink: dict[int, Stream] = {}
        self.by_consumer: dict[tuple[str, str], Stream] = {}
        self.by_group: dict[str, set[Stream]] = {}
        self.windows: dict[tuple[str, str], Window] = {}
        self.cache: dict[str, list[dict[str, Any]]] = {}
        store.committed.append(self.committed)

    # -- subscribe, ack -----------------------------------------------------------------------
    def subscribe(self, actor: Actor, params: dict[str, Any], sink: Sink) -> dict[str, Any]:
        """Open (or take over) the consumer's stream on ``sink``; the answer's result.

        Synchronous on purpose: nothing else runs between the checks and the registration.
        The pump starts on the loop's next turn, after the caller sent the answer line.
        """
        consumers.only(params, SUBSCRIBE_PARAMS)
        name = consumers.name_of(params)
        principal = consumers.principal_of(actor)
        if id(sink) in self.by_sink:
            raise CollabError(
                CollabCode.INVALID_ARGUMENT,
                "this connection already carries an event stream; open another connection",
                {"consumer": name},
            )
        consumer = consumers.open_consumer(self.store, principal, name)
        older = self.by_consumer.get(consumer.key)
        if older is not None:
            self.end(
                older,
                CollabError(
                    CollabCode.EVENT_CONSUMER_REPLACED,
                    f"consumer {name!r} was subscribed again on another connection;"
                    " one receiver per consumer",
                    {"consumer": name},
                ),
            )
        stream = Stream(self, consumer, sink)
        self.by_sink[id(sink)] = stream
        self.by_consumer[consumer.key] = stream
        self.by_group.setdefault(consumer.group_id, set()).add(stream)
        acked = consumer.acked_sequence
        self.windows[consumer.key] = Window(stream, acked, acked)
        stream.start()
        last = self.store.read(
            "SELECT last_sequence FROM groups WHERE id = ?", (consumer.group_id,)
        )
        return {
            "consumer": name,
            "group_id": consumer.group_id,
            "created": consumer.created,
            "acked_sequence": acked,
            "start_sequence": acked + 1,
            "last_sequence": int(last[0][0]) if last else 0,
            "heartbeat_s": HEARTBEAT_S,
        }

    async def ack(self, ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
        """`collab.events.ack {consumer, cursor}`: move the consumer's durable ACK forward."""
        consumers.only(params, ACK_PARAMS)
        name = consumers.name_of(params)
        principal = consumers.principal_of(ctx.actor)
        text = params.get("cursor")
        sequence = consumers.check_cursor(principal, text)
        row = consumers.find(self.store, principal.id, name)
        window = self.windows.get((principal.id, name))
        acked = int(row["acked_sequence"]) if row is not None else 0
        if row is not None and sequence < acked:
            raise consumers.behind(name, text, sequence, acked, principal.group_id)
        if row is not None and sequence == acked:
            return {"consumer": name, "acked_sequence": acked, "cursor": text}
        if row is None or window is None or sequence > window.sent:
            raise CollabError(
                CollabCode.EVENT_ACK_NOT_SENT,
                f"sequence {sequence} was not sent to consumer {name!r} by its newest stream;"
                " subscribe (again), then ACK what it sent",
                {
                    "consumer": name,
                    "sequence": sequence,
                    "sent_sequence": None if window is None else window.sent,
                },
            )
        consumers.store_ack(self.store, principal.id, name, sequence)
        window.acked = sequence
        return {"consumer": name, "acked_sequence": sequence, "cursor": text}

    # -- reading the journal ------------------------------------------------------------------
    def after(self, stream: Stream) -> list[dict[str, Any]]:
        """The next events a stream sends (at most BATCH); EVENT_RETENTION_GAP if trimmed."""
        floor = self.store.floor(stream.group_id)
        if stream.sent < floor:
            raise self.overtaken(stream, floor)
        wanted = stream.sent + 1
        cached = self.cache.get(stream.group_id)
        if cached and cached[0]["sequence"] <= wanted:
            start = wanted - int(cached[0]["sequence"])
            return cached[start : start + BATCH]
        rows = self.store.read(
            "SELECT * FROM journal WHERE group_id = ? AND sequence > ? ORDER BY sequence LIMIT ?",
            (stream.group_id, stream.sent, BATCH),
        )
        if rows and int(rows[0]["sequence"]) != wanted:
            raise self.overtaken(stream, int(rows[0]["sequence"]) - 1)
        return [line(row) for row in rows]

    def overtaken(self, stream: Stream, floor: int) -> CollabError:
        """EVENT_RETENTION_GAP for a stream retention overtook: it names the consumer's
        durable ACK (where a reconnect would resume) and what the stream had sent."""
        consumer = stream.consumer
        row = consumers.find(self.store, consumer.principal_id, consumer.name)
        acked = consumer.acked_sequence if row is None else int(row["acked_sequence"])
        return consumers.gap(consumer.name, acked, floor, sent=stream.sent)

    def committed(self, events: list[Event]) -> None:
        """After a commit (collab/store.py): cache the new events, wake their groups' streams."""
        groups: set[str] = set()
        for ev in events:
            if ev.group_id not in self.by_group:
                # No live stream in the group: nothing to wake, nothing worth encoding (a
                # stream that starts later reads the journal, then caches from there).
                self.cache.pop(ev.group_id, None)
                continue
            groups.add(ev.group_id)
            cached = self.cache.setdefault(ev.group_id, [])
            if cached and int(cached[-1]["sequence"]) + 1 != ev.sequence:
                cached.clear()  # keep the cache one gapless run
            elif len(cached) >= 2 * CACHE_EVENTS:
                del cached[:CACHE_EVENTS]
            cached.append(line(ev.columns()))
        for group_id in groups:
            for stream in self.by_group.get(group_id, ()):
                stream.wake.set()

    # -- ending streams -----------------------------------------------------------------------
    def forget(self, stream: Stream) -> None:
        """Drop a stream from the tables (its consumer's window stays for later ACKs)."""
        stream.ended = True
        if self.by_sink.get(id(stream.sink)) is stream:
            del self.by_sink[id(stream.sink)]
        if self.by_consumer.get(stream.consumer.key) is stream:
            del self.by_consumer[stream.consumer.key]
        members = self.by_group.get(stream.group_id)
        if members is not None:
            members.discard(stream)
            if not members:
                del self.by_group[stream.group_id]
        task = stream.task
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    def end(self, stream: Stream, error: CollabError | None) -> None:
        """End a stream: its error line (if any) goes out, then its connection closes."""
        if stream.ended:
            return
        self.forget(stream)
        if error is not None:
            logger.info(
                "event stream ended",
                extra={
                    "principal": stream.consumer.principal_id,
                    "consumer": stream.consumer.name,
                    "code": str(error.code),
                },
            )
        stream.sink.end(error)

    def disconnected(self, sink: Sink) -> None:
        stream = self.by_sink.get(id(sink))
        if stream is not None:
            self.forget(stream)

    def revoked(self, principal_id: str) -> None:
        self.end_principal(principal_id, principals.revoked(principal_id))

    def updated(self, principal_id: str, permissions: frozenset[str]) -> None:
        """A principal's policy was replaced: without `events.read` its streams end at once
        with INTEGRATION_PERMISSION_DENIED (they would go on pushing its group's events), and
        the send windows go (an ACK is refused by its permission check anyway)."""
        if "events.read" in permissions:
            return
        self.end_principal(
            principal_id,
            CollabError(
                CollabCode.INTEGRATION_PERMISSION_DENIED,
                f"integration identity {principal_id!r} no longer has events.read;"
                " its event streams end",
                {"principal": principal_id, "missing": ["events.read"]},
            ),
        )

    def end_principal(self, principal_id: str, error: CollabError) -> None:
        """Forget the principal's send windows and end each of its streams with ``error``."""
        for key in [k for k in self.windows if k[0] == principal_id]:
            del self.windows[key]
        for stream in [s for s in self.by_sink.values() if s.consumer.principal_id == principal_id]:
            self.end(stream, error)

    async def close(self) -> None:
        tasks = [s.task for s in self.by_sink.values() if s.task is not None]
        for stream in list(self.by_sink.values()):
            self.forget(stream)
        await asyncio.gather(*tasks, return_exceptions=True)
