"""One write request: its transaction, its idempotency key, and the delivery kick (I3.1).

Every collab write runs its body as one write of the store's group commit (`Store.joined`:
a savepoint of the batch shared by the loop's turn) and is answered once the batch committed
(`Store.settled`). With an
`idempotency_key` the stored answer of an earlier request with the same key (scoped to the
actor) is returned instead, or IDEMPOTENCY_CONFLICT for other params; the new answer is stored
in the same transaction as the facts, so an acknowledged write and its key never part. After
the commit, if the body queued a message, the delivery engine is kicked.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pebrel.collab.delivery import Queued
from pebrel.collab.handler import Ctx
from pebrel.collab.refs import SESSION_IS_TARGET
from pebrel.collab.store import Tx, request_hash, storage_error
from pebrel.errors import CollabCode, CollabError


@dataclass(slots=True)
class Write:
    """What a write body gets: the open transaction, the request's context, and a place to
    note the messages it queued."""

    tx: Tx
    ctx: Ctx
    queued: list[Queued] = field(default_factory=list)


Body = Callable[[Write], dict[str, Any]]


#: The schema's collab_idempotency_key: 1-128 printable ASCII characters, no space. Checked
#: here too: a principal's request (the integration socket) reaches the service directly.
IDEMPOTENCY_KEY: Final = re.compile(r"[!-~]{1,128}")


def idempotency_key(params: Mapping[str, Any]) -> str | None:
    key = params.get("idempotency_key")
    if key is None:
        return None
    if not isinstance(key, str) or not IDEMPOTENCY_KEY.fullmatch(key):
        raise CollabError(
            CollabCode.INVALID_ARGUMENT,
            "idempotency_key must be 1-128 printable ASCII characters without spaces",
            {"param": "idempotency_key"},
        )
    return key


def keyed(method: str, params: Mapping[str, Any]) -> str:
    """What a key is bound to (`request_hash`): the method and its params without the acting
    `session` (the key's scope is already the actor, so `--session S` given or defaulted is
    the same request)."""
    if method not in SESSION_IS_TARGET:
        params = {k: v for k, v in params.items() if k != "session"}
    return request_hash(method, params)


def replayed(ctx: Ctx, method: str, params: Mapping[str, Any]) -> dict[str, Any] | None:
    """The remembered answer for this request's key, if any (for a handler that must call the
    runtime before its transaction: a retry is answered without calling it again)."""
    key = idempotency_key(params)
    if key is None:
        return None
    with ctx.store.write() as tx:
        earlier = tx.replay(ctx.actor.scope, key, keyed(method, params))
    return None if earlier is None else dict(earlier)


async def perform(ctx: Ctx, method: str, params: Mapping[str, Any], body: Body) -> dict[str, Any]:
    """Run ``body`` as one durable write; its answer (or the remembered one), once committed."""
    key = idempotency_key(params)
    # The key's row: its scope, the key and what it is bound to (hashed once per write).
    row = None if key is None else (ctx.actor.scope, key, keyed(method, params))
    queued = False
    try:
        with ctx.store.joined() as tx:
            batch = tx.batch
            earlier = None if row is None else tx.replay(*row)
            if earlier is not None:
                result = dict(earlier)
            else:
                write = Write(tx, ctx)
                result = body(write)
                queued = bool(write.queued)
                if row is not None:
                    tx.remember(*row, result)
    except sqlite3.OperationalError as exc:
        # Disk full, I/O error, busy past its timeout: nothing was committed; retryable.
        raise storage_error(exc) from exc
    await ctx.store.settled([] if batch is None else [batch])
    if queued:
        ctx.deliveries.kick()
    return result
