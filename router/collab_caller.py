"""Who sent a `collab.*` request: the local user, a pane, or a process we cannot place (#16).

The frontend adapter stamps each `collab.*` request with its client's TCP source port. The
router finds the processes holding that connection's client socket
(`pebrel.proctree.tcp_peer_pids`) and walks each one's ancestors:

- it meets a pane's shell or pane worker: ``{"kind": "pane", "window_id": W, "pane_id": P}``;
- it reaches the top of the process tree without meeting the router: ``{"kind": "user"}``;
- anything else is ``{"kind": "unknown"}``: the connection is gone (the client raced away),
  no process can be seen holding it, its holders are in different places, or an ancestor is
  the router itself (a process that left its pane's shell, e.g. `setsid`, is re-parented to
  the router, a child subreaper). The collab service treats an unknown caller as a pane
  caller without a bound session: never as the user.

Environment variables (PEBREL_PANE_ID) are not trusted here: any process can set them.
The answer is cached per client connection by router/collab_link.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import psutil

from pebrel import proctree

USER: dict[str, Any] = {"kind": "user"}
UNKNOWN: dict[str, Any] = {"kind": "unknown"}


def pane_caller(window_id: int, pane_id: int) -> dict[str, Any]:
    return {"kind": "pane", "window_id": window_id, "pane_id": pane_id}


def place(pid: int, panes: Mapping[int, tuple[int, int]], router_pid: int) -> dict[str, Any]:
    """Where one process is: the pane whose shell or worker is it or an ancestor of it."""
    try:
        chain = [pid, *(parent.pid for parent in psutil.Process(pid).parents())]
    except psutil.Error:
        return UNKNOWN
    for ancestor in chain:
        if ancestor in panes:
            return pane_caller(*panes[ancestor])
        if ancestor == router_pid:
            return UNKNOWN
    return USER


def resolve(
    peer_port: int, server_port: int, panes: Mapping[int, tuple[int, int]], router_pid: int
) -> dict[str, Any]:
    """The caller of the connection 127.0.0.1:`peer_port` -> 127.0.0.1:`server_port`.

    ``panes``: each pane's shell and worker pid -> (window_id, pane_id). Blocking (/proc):
    run it off the event loop.
    """
    if not peer_port or not server_port:
        return UNKNOWN
    places = [
        place(pid, panes, router_pid)
        for pid in sorted(proctree.tcp_peer_pids(peer_port, server_port))
    ]
    if not places or any(found != places[0] for found in places):
        return UNKNOWN
    return places[0]
