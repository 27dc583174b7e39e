"""The collab service's domain entry: one request in, one answer out (FEATURES I1-I4, #16).

`collab/app.py` (the process) owns the router link; it hands every `CollabRequest` to
`Service.handle` and every `SnapshotChanged` to `Service.on_snapshot`. `handle` resolves who
the request acts as (collab/rights.py), then calls the method's handler from the merged
tables below (grepping a method name finds its handler). A handler returns its result or
raises `CollabError`; it never formats text for humans.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import pebrel
from pebrel.collab import (
    events,
    groups,
    integration_admin,
    messages_api,
    policy,
    replies,
    rights,
    session_launch,
    session_restore,
    sessions,
    stream,
    task_records,
    task_reports,
    tasks,
)
from pebrel.collab.deliverer import Deliverer
from pebrel.collab.handler import Ctx, Deliveries, Handler, Sink
from pebrel.collab.store import IN_REQUEST, Request, Store
from pebrel.collab.terminal import Terminal
from pebrel.errors import CollabCode, CollabError

logger = logging.getLogger(__name__)

INTEGRATION_PROTOCOL: Final = 1


#: What this service can do, as `capabilities` says it (I1.7). The admin CLI refuses to
#: configure what is false here. `startup_input_conditions`: the first delivery of a launch
#: waits for its profile's startupInput screen (collab/startup.py, #18).
FEATURES: Final = {
    "groups": True,
    "sessions": True,
    "tasks": True,
    "messages": True,
    "journal": True,
    "principals": True,
    "events_stream": True,
    "integration_policy_update": True,
    "startup_input_conditions": True,
}


async def capabilities(ctx: Ctx, params: dict[str, Any]) -> dict[str, Any]:
    """What this service speaks and who is asking (I1.7); a principal also reads back its
    group, granted permissions and launch profiles (never their executables or argv)."""
    answer: dict[str, Any] = {
        "server_version": pebrel.__version__,
        "integration_protocol": INTEGRATION_PROTOCOL,
        "local_only": True,
        "permissions": list(policy.PERMISSIONS),
        "caller": rights.caller_wire(ctx.caller, ctx.actor),
        "features": dict(FEATURES),
    }
    if ctx.actor.kind == "principal":
        found = rights.principal_of(ctx.store, ctx.caller)
        answer["principal"] = {
            "id": found.id,
            "group_id": found.group_id,
            "permissions": [p for p in policy.PERMISSIONS if p in found.permissions],
            "launch_profiles": [policy.public_profile(p) for p in found.launch_profiles],
        }
    return answer


HANDLERS: Final[dict[str, Handler]] = {
    "collab.capabilities": capabilities,
    **groups.HANDLERS,
    **sessions.HANDLERS,
    **session_launch.HANDLERS,
    **session_restore.HANDLERS,
    **tasks.HANDLERS,
    **task_reports.HANDLERS,
    **task_records.HANDLERS,
    **replies.HANDLERS,
    **events.HANDLERS,
    **messages_api.HANDLERS,
    **integration_admin.HANDLERS,
}


class SeenTerminal:
    """The terminal as handlers see it: its calls, and the newest snapshot the service saw."""

    def __init__(self, service: Service) -> None:
        self.service = service

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await self.service.terminal.call(method, params)

    def snapshot(self) -> dict[str, Any] | None:
        return self.service.latest_snapshot()


class Service:
    """The collab domain. With no ``deliveries`` given it runs the delivery engine
    (collab/deliverer.py, which also tracks sessions from the snapshots)."""

    def __init__(
        self, store: Store, terminal: Terminal, deliveries: Deliveries | None = None
    ) -> None:
        self.store = store
        self.terminal = terminal
        self.handlers: dict[str, Handler] = dict(HANDLERS)
        self.seen = SeenTerminal(self)
        self.snapshot: dict[str, Any] | None = None
        self.engine: Deliverer | None = None
        if deliveries is None:
            self.engine = Deliverer(store, self.seen)
            deliveries = self.engine
        self.deliveries: Deliveries = deliveries
        self.hub = stream.Hub(store)
        self.handlers["collab.events.ack"] = self.hub.ack

    def latest_snapshot(self) -> dict[str, Any] | None:
        return self.snapshot if self.snapshot is not None else self.terminal.snapshot()

    async def handle(
        self, method: str, params: dict[str, Any], caller: dict[str, Any]
    ) -> dict[str, Any]:
        """Answer one `collab.*` request as ``caller``; raises `CollabError`."""
        handler = self.handlers.get(method)
        if handler is None:
            if rights.is_principal(caller):
                rights.principal_of(self.store, caller)  # a revoked identity hears that first
            raise CollabError(
                CollabCode.INVALID_ARGUMENT, f"no collab method {method!r}", {"method": method}
            )
        request = Request()
        token = IN_REQUEST.set(request)
        try:
            actor = rights.resolve(self.store, self.latest_snapshot(), caller, method, params)
            ctx = Ctx(self.store, self.seen, self.deliveries, caller, actor)
            result = await handler(ctx, params)
        except Exception:
            # A refusal may rest on what it read in the open batch, too.
            await self.store.settled(request.batches)
            raise
        finally:
            IN_REQUEST.reset(token)
        # What it read may be in an open batch (group commit): answer once that is durable.
        await self.store.settled(request.batches)
        if method == "collab.integration.revoke":
            self.revoked(str(result["principal"]["principal_id"]))
        elif method == "collab.integration.update":
            record = result["principal"]
            self.hub.updated(str(record["principal_id"]), frozenset(record["permissions"]))
        return result

    # -- the event stream (#17; collab/stream.py) ---------------------------------------------
    async def subscribe(
        self, caller: dict[str, Any], params: dict[str, Any], sink: Sink
    ) -> dict[str, Any]:
        """`events.subscribe` on the integration socket: the answer's result; the stream then
        pushes events to ``sink`` (from the loop's next turn: send the answer first)."""
        method = "collab.events.subscribe"
        actor = rights.resolve(self.store, self.latest_snapshot(), caller, method, params)
        return self.hub.subscribe(actor, params, sink)

    def disconnected(self, sink: Sink) -> None:
        """An integration connection closed: forget its stream, if any."""
        self.hub.disconnected(sink)

    def revoked(self, principal_id: str) -> None:
        """A principal was revoked: end its open streams with INTEGRATION_REVOKED (I1.4)."""
        self.hub.revoked(principal_id)

    def on_snapshot(self, snapshot: dict[str, Any]) -> None:
        """The runtime's snapshot changed: track sessions, look at waiting deliveries."""
        self.snapshot = snapshot
        if self.engine is not None:
            self.engine.on_snapshot(snapshot)

    async def start(self) -> None:
        """Recover deliveries a stopped service left `writing`, then deliver what is queued."""
        if self.engine is not None:
            await self.engine.start()
        logger.info("collab service started")

    async def close(self) -> None:
        await self.hub.close()
        if self.engine is not None:
            self.engine.close()
            await self.engine.wait_closed()
        logger.info("collab service closed")
