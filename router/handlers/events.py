"""events.subscribe (R2.7): the ack; `router.app` then streams snapshots to the connection."""

from __future__ import annotations

from collections.abc import Mapping

from pebrel.method_params import EventsSubscribeParams
from pebrel.router.handlers import Handler, Result
from pebrel.router.runtime import Runtime


def needs_current_snapshot(rt: Runtime, params: Mapping[str, object]) -> bool:
    """A subscriber behind the current revision, or from another runtime life, gets it at once."""
    since = params.get("since_revision")
    if since is None:
        return True
    if params.get("runtime_id") not in (None, rt.state.runtime_id):
        return True
    return bool(since != rt.state.revision)


async def subscribe(rt: Runtime, params: EventsSubscribeParams) -> Result:
    return {
        "subscribed": True,
        "runtime_id": rt.state.runtime_id,
        "revision": rt.state.revision,
        "screens": bool(params.get("screens", False)),
    }


METHODS: Mapping[str, Handler] = {"events.subscribe": subscribe}
