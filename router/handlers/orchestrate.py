"""runtime.orchestrate: a workflow of typed steps run inside the runtime (R10.1-R10.5).

Every op calls the operation its method calls (split: pane.split's, new_tab: tab.new's, prompt:
pane.prompt's, run: pane.run's, focus: window.focus's, zoom: pane.zoom's, resize: pane.resize's,
rename_tab: tab.rename's, agent_launch: agent.start's, then agent.prompt's).

1. The router checked params against the schema (unknown ops or fields: invalid_params). The
   whole workflow is then checked before anything happens (orchestrate_refs.py).
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
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pebrel.errors import ErrorCode, PebrelError, internal_error
from pebrel.method_params import (
    AgentLaunchStep,
    FocusSlot,
    PaneSlot,
    RenameTabStep,
    RuntimeOrchestrateParams,
    Step,
    StepRef,
    TabSlot,
    WindowSlot,
)
from pebrel.model import (
    ORCHESTRATE_DEFAULT_TIMEOUT_MS,
    READY_DEFAULT_TIMEOUT_MS,
    RUN_DEFAULT_TIMEOUT_MS,
)
from pebrel.router.agents import NamedAgent
from pebrel.router.handlers import Handler, Result
from pebrel.router.handlers.agent import bound, prompt_agent
from pebrel.router.handlers.agent_start import (
    claim_name,
    launch_agent,
    start_argv,
    start_line,
    wait_ready,
)
from pebrel.router.handlers.input_common import pane_ids, require_live
from pebrel.router.handlers.layout_ops import rename_tab, resize_pane, zoom_pane
from pebrel.router.handlers.orchestrate_refs import LAUNCH_KNOWN, is_ref, ref_field, validate
from pebrel.router.handlers.pane import split_pane
from pebrel.router.handlers.pane_io import FIRST_PROMPT_TIMEOUT_S, prompt_pane, run_command
from pebrel.router.handlers.tab import open_tab
from pebrel.router.handlers.window import focus_pane, placed
from pebrel.router.runtime import Runtime
from pebrel.router.state import Pane

logger = logging.getLogger(__name__)

#: An initial prompt refused by the submit barrier is retried for this long.
BARRIER_RETRY_S = 3.0
BARRIER_POLL_S = 0.05


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
    deadline: float
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    pending: list[Launch] = field(default_factory=list)

    # -- references --------------------------------------------------------------------------
    async def value(self, ref: StepRef) -> Result:
        """The referenced step's result; fails with invalid_reference if that step failed."""
        outcome = self.outcomes[ref["step"]]
        if outcome.status == "launched" and ref_field(ref) not in LAUNCH_KNOWN:
            await self.flush()
        if outcome.status not in ("ok", "launched") or outcome.result is None:
            raise PebrelError(
                ErrorCode.INVALID_REFERENCE,
                f"step {ref['step']!r} did not succeed ({outcome.status})",
                {"reference": ref, "reason": "step_failed", "referenced_status": outcome.status},
            )
        return outcome.result

    async def pane(self, value: PaneSlot | FocusSlot | None) -> Pane:
        """Resolve a pane slot: absent -> the focused pane; literal ids (a window's alone: its
        focused pane); or a reference (to a window_id: that window's focused pane)."""
        if value is None:
            return self.rt.state.pane(None, None)
        if isinstance(value, dict) and "step" in value:
            found = await self.value(value)
            pane_id = found["pane_id"] if ref_field(value) == "pane_id" else None
            return self.rt.state.pane(found["window_id"], pane_id)
        if "pane_id" in value:
            return self.rt.state.pane(value.get("window_id"), value["pane_id"])
        return self.rt.state.pane(value["window_id"], None)

    async def number(self, value: WindowSlot | TabSlot | None) -> int | None:
        if is_ref(value):
            found: int = (await self.value(value))[ref_field(value)]
            return found
        return value if isinstance(value, int) else None

    # -- ops ---------------------------------------------------------------------------------
    async def run_op(self, step: Step, outcome: Outcome) -> Result:
        rt = self.rt
        if step["op"] == "new_tab":
            window_id = await self.number(step.get("window"))
            window = rt.state.window(window_id)
            opened = await open_tab(
                rt, window, step.get("cwd"), step.get("shell"), step.get("cols"), step.get("rows")
            )
            return placed(rt, opened)
        if step["op"] == "rename_tab":
            return await self.rename_tab(step)
        target = await self.pane(step.get("target"))
        if step["op"] in ("prompt", "run") and any(p.pane is target for p in self.pending):
            await self.flush()
        if step["op"] == "split":
            pane = await split_pane(
                rt, target, step["direction"], step.get("cwd"), step.get("shell")
            )
            return placed(rt, pane)
        if step["op"] == "agent_launch":
            await self.launch(step, target, outcome)
            return pane_ids(target)
        if step["op"] == "prompt":
            sent = await prompt_pane(rt, target, step["text"], step.get("submit", True))
            return {k: sent[k] for k in ("window_id", "pane_id", "submitted", "state_change_seq")}
        if step["op"] == "run":
            timeout_ms = step.get("timeout_ms", RUN_DEFAULT_TIMEOUT_MS)
            return await run_command(
                rt, target, step["command"], step.get("wait", True), timeout_ms
            )
        if step["op"] == "focus":
            return focus_pane(rt, target)
        if step["op"] == "zoom":
            return zoom_pane(rt, target, step.get("zoomed", True))
        if step["op"] == "resize":
            return resize_pane(rt, target, step["ratio"])
        raise AssertionError(f"op {step['op']} passed the schema but has no implementation")

    async def rename_tab(self, step: RenameTabStep) -> Result:
        window_id = await self.number(step.get("window"))
        tab_value = step.get("tab_index")
        tab_index = await self.number(tab_value)
        if is_ref(tab_value) and window_id is None:
            window_id = (await self.value(tab_value))["window_id"]
        win = self.rt.state.window(window_id)
        if tab_index is None:
            tab_index = win.active_tab
        return rename_tab(self.rt, win, tab_index, step["name"])

    async def launch(self, step: AgentLaunchStep, pane: Pane, outcome: Outcome) -> None:
        """agent.start's first half: register the agent and type its start command."""
        rt = self.rt
        argv = start_argv(step["kind"], None)
        claim_name(rt, step["name"])
        cwd = rt.check_cwd(step.get("cwd"))
        require_live(pane)
        limit = time.monotonic() + FIRST_PROMPT_TIMEOUT_S
        while (
            not pane.tracker.at_prompt
            and not pane.tracker.busy
            and pane.agents.session is None
            and not pane.exited
            and time.monotonic() < limit
        ):  # a pane split a moment ago: its shell has not drawn its first prompt yet
            await rt.next_change(pane, limit - time.monotonic())
        line = start_line(pane, argv, cwd)
        agent = await launch_agent(rt, pane, step["name"], step["kind"], line)
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
            await wait_ready(self.rt, launch.agent, launch.pane, remaining)
            launch.state = launch.pane.tracker.state
        except Exception as exc:
            fail(launch.outcome, wire(exc))

    async def _deliver(self, launch: Launch) -> None:
        rt, agent, outcome, text = self.rt, launch.agent, launch.outcome, launch.initial_prompt
        generation = agent.generation

        async def send(prompt: str) -> Result:
            target, pane = bound(rt, agent.agent_id, generation)
            return await prompt_agent(rt, target, pane, prompt)

        try:
            if text is not None:
                prompt = text
                await retry_barrier(rt, launch.pane, lambda: send(prompt))
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


async def retry_barrier(rt: Runtime, pane: Pane, send: Callable[[], Awaitable[Result]]) -> Result:
    """Send; while the submit barrier of the start command refuses it, wait and send again."""
    limit = time.monotonic() + BARRIER_RETRY_S
    while True:
        try:
            return await send()
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


async def orchestrate(rt: Runtime, params: RuntimeOrchestrateParams) -> Result:
    steps = params["steps"]
    validate(steps)
    stop = params.get("on_error", "stop") == "stop"
    timeout_s = params.get("timeout_ms", ORCHESTRATE_DEFAULT_TIMEOUT_MS) / 1000
    flow = Workflow(rt, time.monotonic() + timeout_s)
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


def receipt(steps: list[Step], outcomes: dict[str, Outcome]) -> Result:
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
