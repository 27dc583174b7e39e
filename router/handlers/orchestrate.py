"""runtime.orchestrate: a workflow of typed steps run inside the runtime (R10.1-R10.5).

Every op reuses its method's handler (split: pane.split, new_tab: tab.new, prompt: pane.prompt,
run: pane.run, focus: window.focus, zoom: pane.zoom, resize: pane.resize, rename_tab: tab.rename,
agent_launch: agent.start's pieces, then agent.prompt).

1. The router checked params against the schema (unknown ops or fields: invalid_params). The
   whole workflow is then checked before anything happens: duplicate step ids or agent names are
   `invalid_params`; a reference to a missing or not-earlier step, without `field`, to a field
   the op does not produce, or to one the slot cannot use is `invalid_reference`.
2. Steps run in order. A reference to a step that failed (or was skipped) fails the step with
   `invalid_reference`. `on_error: "stop"` (default) skips every later step after the first
   failure; `"continue"` goes on. Nothing is rolled back.
3. agent_launch only types the start command and leaves the launch pending. The launch phase
   (all pending agents awaited ready in parallel, then each `initial_prompt` delivered through
   agent.prompt) runs at the end of the workflow, or earlier when a later step needs it: a
   reference to a pending launch's `agent_id`/`generation`, or a prompt/run step into the pane
   of a pending launch. Launches already typed are completed even when the workflow stops.
4. `timeout_ms` (default 300000) bounds the workflow: a step running at the deadline fails with
   `runtime_timeout` (it finishes on its own: cutting a pane creation halfway would corrupt the
   layout; readiness waits are abandoned); steps never started are `skipped` with that error.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from pebrel.errors import ErrorCode, PebrelError, internal_error
from pebrel.inputs import check_prompt_text
from pebrel.model import ORCHESTRATE_DEFAULT_TIMEOUT_MS, READY_DEFAULT_TIMEOUT_MS
from pebrel.router.agents import NamedAgent
from pebrel.router.handlers import Handler, Params, Result, layout_ops, pane_io, tab, window
from pebrel.router.handlers import agent as agent_handlers
from pebrel.router.handlers import pane as pane_handlers
from pebrel.router.handlers.input_common import pane_ids, require_live
from pebrel.router.runtime import Runtime
from pebrel.router.state import Pane

logger = logging.getLogger(__name__)

#: An initial prompt refused by the submit barrier is retried for this long.
BARRIER_RETRY_S = 3.0
BARRIER_POLL_S = 0.05

_PANE = frozenset({"window_id", "tab_index", "pane_id"})
_PANE_OPS = ("split", "agent_launch", "prompt", "run", "focus", "zoom", "resize")
#: What each op produces, known before anything runs (references are checked against it).
OUTPUTS: Mapping[str, frozenset[str]] = {
    **dict.fromkeys(("split", "new_tab", "focus", "zoom", "resize"), _PANE),
    "agent_launch": frozenset({"window_id", "pane_id", "agent_id", "generation"}),
    "prompt": frozenset({"window_id", "pane_id"}),
    "run": frozenset({"window_id", "pane_id"}),
    "rename_tab": frozenset({"window_id", "tab_index"}),
}
#: Fields of a pending agent_launch that are known before the agent is ready.
LAUNCH_KNOWN = frozenset({"window_id", "pane_id"})
#: The slots of each op that may hold a reference, and the kind of target each names.
SLOTS: Mapping[str, Mapping[str, str]] = {
    **{op: {"target": "pane"} for op in _PANE_OPS},
    "new_tab": {"window": "window"},
    "rename_tab": {"window": "window", "tab_index": "tab"},
}
#: Reference fields usable in each kind of slot.
SLOT_FIELDS: Mapping[str, frozenset[str]] = {
    "pane": frozenset({"pane_id", "window_id"}),
    "window": frozenset({"window_id"}),
    "tab": frozenset({"tab_index"}),
}


def is_ref(value: Any) -> TypeGuard[Params]:
    return isinstance(value, dict) and "step" in value


def validate(steps: list[Params]) -> None:
    """Everything that can be known before acting; raises and changes nothing (R10.2)."""
    index: dict[str, int] = {}
    for i, step in enumerate(steps):
        if step["id"] in index:
            raise PebrelError(
                ErrorCode.INVALID_PARAMS,
                f"step id {step['id']!r} is used twice",
                {"step": step["id"], "index": i, "first_index": index[step["id"]]},
            )
        index[step["id"]] = i
    names: dict[str, str] = {}
    for i, step in enumerate(steps):
        name = step.get("name") if step["op"] == "agent_launch" else None
        if name in names:
            raise PebrelError(
                ErrorCode.INVALID_PARAMS,
                f"two agent_launch steps name an agent {name!r}",
                {"step": step["id"], "other_step": names[name], "name": name},
            )
        if name is not None:
            names[name] = step["id"]
        check_text(step)
        for slot, kind in SLOTS[step["op"]].items():
            ref = step.get(slot)
            if is_ref(ref):
                check_reference(steps, index, i, slot, kind, ref)


#: Text fields typed into a pane, checked like pane.prompt before anything happens.
TEXT_FIELDS = {"prompt": "text", "run": "command", "agent_launch": "initial_prompt"}


def check_text(step: Params) -> None:
    field = TEXT_FIELDS.get(step["op"])
    if field is None or not isinstance(step.get(field), str):
        return
    try:
        check_prompt_text(step[field], field)
    except PebrelError as exc:
        exc.details["step"] = step["id"]
        raise


def check_reference(
    steps: list[Params], index: dict[str, int], i: int, slot: str, kind: str, ref: Params
) -> None:
    details: dict[str, Any] = {"step": steps[i]["id"], "slot": slot, "reference": ref}

    def refuse(reason: str, message: str, **extra: Any) -> PebrelError:
        return PebrelError(
            ErrorCode.INVALID_REFERENCE, message, {**details, "reason": reason, **extra}
        )

    target = index.get(ref["step"])
    if target is None:
        raise refuse("missing_step", f"step {ref['step']!r} does not exist")
    if target >= i:
        raise refuse("future_step", f"step {ref['step']!r} does not come before this step")
    if not ref.get("field"):
        raise refuse("missing_field", f"the reference to step {ref['step']!r} names no field")
    produced = OUTPUTS[steps[target]["op"]]
    if ref["field"] not in produced:
        raise refuse(
            "unknown_field",
            f"op {steps[target]['op']} does not produce {ref['field']!r}",
            available_fields=sorted(produced),
        )
    if ref["field"] not in SLOT_FIELDS[kind]:
        raise refuse(
            "field_not_usable",
            f"{ref['field']!r} cannot name the {kind} of {slot!r}",
            usable_fields=sorted(SLOT_FIELDS[kind] & produced),
        )


@dataclass
class Outcome:
    id: str
    op: str
    status: str = "pending"  # pending | running | launched | ok | failed | skipped
    result: Result | None = None
    error: dict[str, Any] | None = None

    def receipt(self) -> Result:
        status = self.status if self.status in ("ok", "failed", "skipped") else "failed"
        out: Result = {"id": self.id, "op": self.op, "status": status}
        extra = {"result": self.result if status == "ok" else None, "error": self.error}
        return {**out, **{k: v for k, v in extra.items() if v is not None}}


@dataclass
class Launch:
    """An agent_launch whose start command is typed; readiness and prompt are pending."""

    outcome: Outcome
    agent: NamedAgent
    pane: Pane
    ready_deadline: float
    initial_prompt: str | None
    state: str | None = None


@dataclass
class Workflow:
    rt: Runtime
    steps: list[Params]
    deadline: float
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    pending: list[Launch] = field(default_factory=list)

    # -- references --------------------------------------------------------------------------
    async def value(self, ref: Params) -> Result:
        """The referenced step's result; fails with invalid_reference if that step failed."""
        outcome = self.outcomes[ref["step"]]
        if outcome.status == "launched" and ref["field"] not in LAUNCH_KNOWN:
            await self.flush()
        if outcome.status not in ("ok", "launched") or outcome.result is None:
            raise PebrelError(
                ErrorCode.INVALID_REFERENCE,
                f"step {ref['step']!r} did not succeed ({outcome.status})",
                {"reference": ref, "reason": "step_failed", "referenced_status": outcome.status},
            )
        return outcome.result

    async def pane(self, value: Any) -> Pane:
        """Resolve a pane slot: absent -> the focused pane; literal ids; or a reference."""
        if value is None:
            return self.rt.state.pane(None, None)
        if is_ref(value):
            found = await self.value(value)
            pane_id = found["pane_id"] if value["field"] == "pane_id" else None
            return self.rt.state.pane(found["window_id"], pane_id)
        return self.rt.state.pane(value.get("window_id"), value.get("pane_id"))

    async def number(self, value: Any) -> int | None:
        if is_ref(value):
            found: int = (await self.value(value))[value["field"]]
            return found
        return value if isinstance(value, int) else None

    # -- ops ---------------------------------------------------------------------------------
    async def run_op(self, step: Params, outcome: Outcome) -> Result:
        op, rt = step["op"], self.rt
        opts: Params = {k: step[k] for k in ("cwd", "shell", "cols", "rows") if k in step}
        if op == "new_tab":
            window_id = await self.number(step.get("window"))
            where = {} if window_id is None else {"window_id": window_id}
            return await tab.new(rt, {**opts, **where})
        if op == "rename_tab":
            return await self.rename_tab(step)
        target = await self.pane(step.get("target"))
        ids = pane_ids(target)
        if op in ("prompt", "run") and any(p.pane is target for p in self.pending):
            await self.flush()
        if op == "split":
            return await pane_handlers.split(rt, {**ids, **opts, "direction": step["direction"]})
        if op == "agent_launch":
            await self.launch(step, target, outcome)
            return {**ids}
        if op == "prompt":
            params = {**ids, "text": step["text"], "submit": step.get("submit", True)}
            sent = await pane_io.prompt(rt, params)
            return {k: sent[k] for k in ("window_id", "pane_id", "submitted", "state_change_seq")}
        if op == "run":
            extra: Params = {k: step[k] for k in ("wait", "timeout_ms") if k in step}
            return await pane_io.run(rt, {**ids, "command": step["command"], **extra})
        if op == "focus":
            named = step["target"]
            if named.get("field") == "window_id" if is_ref(named) else "pane_id" not in named:
                return await window.focus(rt, {"window_id": target.window_id})
            return await window.focus(rt, ids)
        if op == "zoom":
            return await layout_ops.zoom(rt, {**ids, "zoomed": step.get("zoomed", True)})
        if op == "resize":
            return await layout_ops.resize(rt, {**ids, "ratio": step["ratio"]})
        raise AssertionError(f"op {op} passed the schema but has no implementation")

    async def rename_tab(self, step: Params) -> Result:
        window_id = await self.number(step.get("window"))
        tab_value = step.get("tab_index")
        tab_index = await self.number(tab_value)
        if is_ref(tab_value) and window_id is None:
            window_id = (await self.value(tab_value))["window_id"]
        win = self.rt.state.window(window_id)
        if tab_index is None:
            tab_index = win.active_tab
        params = {"window_id": win.window_id, "tab_index": tab_index, "name": step["name"]}
        return await layout_ops.rename(self.rt, params)

    async def launch(self, step: Params, pane: Pane, outcome: Outcome) -> None:
        """agent.start's first half: register the agent and type its start command."""
        rt, name = self.rt, step["name"]
        argv = agent_handlers.start_argv(step["kind"], None)
        if rt.state.registry.active_named(name) is not None:
            message = f"an active agent is already named {name!r}"
            raise PebrelError(ErrorCode.AGENT_NAME_CONFLICT, message, {"name": name})
        cwd = rt.check_cwd(step.get("cwd"))
        require_live(pane)
        limit = time.monotonic() + pane_io.FIRST_PROMPT_TIMEOUT_S
        while (
            not pane.tracker.at_prompt
            and not pane.tracker.busy
            and pane.agents.session is None
            and not pane.exited
            and time.monotonic() < limit
        ):  # a pane split a moment ago: its shell has not drawn its first prompt yet
            await rt.next_change(pane, limit - time.monotonic())
        line = agent_handlers.start_line(pane, argv, cwd)
        agent = rt.state.registry.register(
            name, step["kind"], pane.window_id, pane.pane_id, managed=True
        )
        if pane.agents.bound is not None and pane.agents.bound.status in ("starting", "active"):
            pane.agents.bound.status = "replaced"
        pane.agents.bound = agent
        rt.commit()
        await pane_io.prompt(rt, {**pane_ids(pane), "text": line})
        timeout_ms = step.get("ready_timeout_ms", READY_DEFAULT_TIMEOUT_MS)
        ready_by = time.monotonic() + timeout_ms / 1000
        self.pending.append(Launch(outcome, agent, pane, ready_by, step.get("initial_prompt")))

    # -- the launch phase --------------------------------------------------------------------
    async def flush(self) -> None:
        """Await every pending launch ready in parallel, then deliver each initial prompt."""
        launches, self.pending = self.pending, []
        if not launches:
            return
        task = asyncio.ensure_future(self._phase(launches))
        done, _ = await asyncio.wait({task}, timeout=max(self.deadline - time.monotonic(), 0))
        if not done:
            task.cancel()
            for launch in launches:
                if launch.outcome.status == "launched":
                    fail(launch.outcome, timeout_error(launch.outcome, started=True))
        else:
            task.result()

    async def _phase(self, launches: list[Launch]) -> None:
        await asyncio.gather(*(self._ready(launch) for launch in launches))
        ready = [launch for launch in launches if launch.outcome.status == "launched"]
        await asyncio.gather(*(self._deliver(launch) for launch in ready))

    async def _ready(self, launch: Launch) -> None:
        try:
            remaining = max(launch.ready_deadline - time.monotonic(), 0)
            await agent_handlers.wait_ready(self.rt, launch.agent, launch.pane, remaining)
            launch.state = launch.pane.tracker.state
        except Exception as exc:
            fail(launch.outcome, wire(exc))

    async def _deliver(self, launch: Launch) -> None:
        agent, outcome, text = launch.agent, launch.outcome, launch.initial_prompt
        params = {"agent": agent.agent_id, "generation": agent.generation, "text": text}
        try:
            if text is not None:
                await retry_barrier(self.rt, launch.pane, agent_handlers.prompt, params)
        except Exception as exc:
            fail(outcome, wire(exc))
            return
        outcome.status = "ok"
        outcome.result = {
            **pane_ids(launch.pane),
            "agent_id": agent.agent_id,
            "generation": agent.generation,
            "ready": True,
            "state": launch.state,
            "submitted": text is not None,
        }


async def retry_barrier(rt: Runtime, pane: Pane, send: Handler, params: Params) -> Result:
    """Send; while the submit barrier of the start command refuses it, wait and send again."""
    limit = time.monotonic() + BARRIER_RETRY_S
    while True:
        try:
            return await send(rt, params)
        except PebrelError as exc:
            if exc.code != ErrorCode.INPUT_IN_PROGRESS or time.monotonic() >= limit:
                raise
        await rt.next_change(pane, BARRIER_POLL_S)


def wire(exc: BaseException | None) -> dict[str, Any]:
    """A step's failure as an error object; anything unexpected is an internal_error."""
    if isinstance(exc, PebrelError):
        return exc.to_wire()
    failure = internal_error()
    logger.error("orchestrate step failed", exc_info=exc, extra=failure.details)
    return failure.to_wire()


def fail(outcome: Outcome, error: dict[str, Any]) -> None:
    outcome.status, outcome.error = "failed", error


def timeout_error(outcome: Outcome, started: bool) -> dict[str, Any]:
    return PebrelError(
        ErrorCode.RUNTIME_TIMEOUT,
        f"the workflow's deadline passed before step {outcome.id!r} finished",
        {"step": outcome.id, "started": started},
    ).to_wire()


def retrieve(task: asyncio.Future[Any]) -> None:
    """A step left to finish after the deadline: log its failure instead of losing it."""
    if not task.cancelled() and task.exception() is not None:
        logger.warning("a step finished after the workflow deadline: %s", task.exception())


async def orchestrate(rt: Runtime, params: Params) -> Result:
    steps: list[Params] = params["steps"]
    validate(steps)
    stop = params.get("on_error", "stop") == "stop"
    timeout_s = params.get("timeout_ms", ORCHESTRATE_DEFAULT_TIMEOUT_MS) / 1000
    flow = Workflow(rt, steps, time.monotonic() + timeout_s)
    flow.outcomes = {s["id"]: Outcome(s["id"], s["op"]) for s in steps}
    logger.info("orchestrate: %d steps", len(steps), extra={"on_error": params.get("on_error")})
    halted = False
    for step in steps:
        outcome = flow.outcomes[step["id"]]
        if time.monotonic() >= flow.deadline:
            outcome.status, outcome.error = "skipped", timeout_error(outcome, started=False)
            continue
        if halted:
            outcome.status = "skipped"
            continue
        outcome.status = "running"
        task = asyncio.ensure_future(flow.run_op(step, outcome))
        done, _ = await asyncio.wait({task}, timeout=max(flow.deadline - time.monotonic(), 0))
        if not done:
            task.add_done_callback(retrieve)
            rt.keep(task)
            fail(outcome, timeout_error(outcome, started=True))
        elif task.exception() is not None:
            fail(outcome, wire(task.exception()))
        elif step["op"] == "agent_launch" and outcome.status == "running":
            outcome.status, outcome.result = "launched", task.result()
        else:
            outcome.status, outcome.result = "ok", task.result()
        if outcome.status == "failed" and stop:
            halted = True
    await flow.flush()
    return receipt(steps, flow.outcomes)


def receipt(steps: list[Params], outcomes: dict[str, Outcome]) -> Result:
    ordered = [outcomes[s["id"]].receipt() for s in steps]
    failed = [s for s in ordered if s["status"] == "failed"]
    done = any(s["status"] == "ok" for s in ordered)
    not_done = any(s["status"] != "ok" for s in ordered)
    return {
        "ok": not not_done,
        "steps": ordered,
        "failed_step": failed[0]["id"] if failed else None,
        "error": failed[0]["error"] if failed else None,
        "partial": done and not_done,
    }


METHODS: Mapping[str, Handler] = {"runtime.orchestrate": orchestrate}
