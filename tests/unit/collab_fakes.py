"""Stand-ins for the collab service's unit tests (#16): a runtime you script, and rows.

`FakeTerminal` implements `collab.terminal.Terminal`: its snapshot is whatever the test set,
`agent.get` answers from that snapshot, and every other call is recorded and answered from a
per-method script (a result, an exception to raise, or a coroutine function run in the call).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from pebrel.collab import delivery
from pebrel.collab.online import find_agent
from pebrel.collab.store import Store, dumps
from pebrel.errors import ErrorCode, PebrelError

RUNTIME_ID = "rt_test"
GROUP = "grp_test"
Step = dict[str, Any] | BaseException | Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


def agent(
    agent_id: str,
    pane_id: int,
    *,
    generation: int = 1,
    state: str = "idle",
    ready: bool = True,
    session_id: str | None = "native-1",
) -> dict[str, Any]:
    """A pane's `agent` record as the runtime snapshot has it."""
    return {
        "agent_id": agent_id,
        "name": None,
        "kind": "claude",
        "display_name": "Claude Code",
        "session_id": session_id,
        "generation": generation,
        "state": state,
        "ready": ready,
        "state_source": "hook",
        "state_rule": None,
    }


def snapshot(
    *agents: dict[str, Any], runtime_id: str = RUNTIME_ID, panes: int = 0, revision: int = 1
) -> dict[str, Any]:
    """A snapshot of window 1: one pane per agent (pane ids from 1), plus ``panes`` bare ones."""
    records = []
    for index in range(max(len(agents), panes)):
        record: dict[str, Any] = {
            "window_id": 1,
            "tab_index": 0,
            "pane_id": index + 1,
            "exited": False,
        }
        if index < len(agents):
            record["agent"] = agents[index]
        records.append(record)
    tabs = [{"tab_index": 0, "panes": records}]
    return {
        "runtime_id": runtime_id,
        "revision": revision,
        "focused_window_id": 1,
        "windows": [{"window_id": 1, "focused": True, "tabs": tabs}],
    }


class FakeTerminal:
    def __init__(self, snap: dict[str, Any] | None = None) -> None:
        self.snap = snap
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.script: dict[str, list[Step]] = {}
        self.in_flight = 0
        self.most_in_flight = 0

    def snapshot(self) -> dict[str, Any] | None:
        return self.snap

    def then(self, method: str, *steps: Step) -> None:
        self.script.setdefault(method, []).extend(steps)

    def written(self, method: str | None = None) -> list[dict[str, Any]]:
        """The params of every input call (agent.prompt / agent.paste) so far."""
        names = (method,) if method else ("agent.prompt", "agent.paste")
        return [params for name, params in self.calls if name in names]

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "agent.get":
            return self.agent_record(params["agent"])
        self.calls.append((method, params))
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            steps = self.script.get(method)
            step: Step = steps.pop(0) if steps else {}
            if isinstance(step, BaseException):
                raise step
            if callable(step):
                return await step(method, params)
            await asyncio.sleep(0)
            return {"agent_id": params.get("agent"), "written": True, "submitted": True, **step}
        finally:
            self.in_flight -= 1

    def agent_record(self, agent_id: str) -> dict[str, Any]:
        found = find_agent(self.snap, agent_id) if self.snap is not None else None
        if found is None:
            raise PebrelError(ErrorCode.TARGET_NOT_FOUND, f"no agent {agent_id!r}")
        pane, record = found
        return {**record, "status": "active", "window_id": 1, "pane_id": pane["pane_id"]}


def refused(code: ErrorCode, written: bool = False) -> PebrelError:
    return PebrelError(code, f"refused: {code}", {"written": written, "submitted": False})


def add_group(store: Store, group_id: str = GROUP) -> None:
    with store.write() as tx:
        tx.insert("groups", {"id": group_id, "name": group_id, "created_at": tx.now})


def add_session(
    store: Store,
    session_id: str,
    agent_id: str,
    pane_id: int,
    *,
    state: str = "ready",
    native: str | None = "native-1",
    generation: int = 1,
    group_id: str | None = GROUP,
) -> None:
    bound = {
        "runtime_id": RUNTIME_ID,
        "window_id": 1,
        "tab_index": 0,
        "pane_id": pane_id,
        "shell_pid": 100 + pane_id,
        "agent_pid": 200 + pane_id,
    }
    with store.write() as tx:
        tx.insert(
            "sessions",
            {
                "id": session_id,
                "group_id": group_id,
                "agent_id": agent_id,
                "agent_name": None,
                "generation": generation,
                "agent_kind": "claude",
                "native_session_id": native,
                "state": state,
                "error_code": None,
                "terminal_binding": dumps(bound),
                "created_at": tx.now,
                "updated_at": tx.now,
            },
        )


def queue(
    store: Store,
    to_session: str,
    content: str,
    *,
    sender: str | None = None,
    task_id: str | None = None,
) -> delivery.Queued:
    actor = {"kind": "session", "session_id": sender} if sender else {"kind": "user"}
    with store.write() as tx:
        return delivery.queue_message(
            tx,
            group_id=GROUP,
            to_session=to_session,
            from_actor=actor,
            content=content,
            task_id=task_id,
        )


def stages(store: Store, message_id: str) -> list[tuple[str, int]]:
    return [(row["stage"], row["try"]) for row in delivery.stage_rows(store, message_id)]
