"""Every method's params as a TypedDict: the shape the router's handlers are typed with (R1.6).

The JSON Schema (`runtime-api-v1.schema.json`, `methods.<name>.params`) stays the contract: the
router validates each request against it before a handler runs, so a handler may read its
params as the TypedDict says. tests/unit/test_method_params.py checks every TypedDict here
against the schema (keys, required keys, value types) and that each method's handler is typed
with its own. A string enum the code does not branch on (key names, agent kinds) is typed `str`.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict, final

DirectionWord = Literal["right", "down", "left_right", "top_bottom"]
WaitTarget = Literal[
    "failed", "attention", "waiting_input", "running", "completed", "idle", "settled"
]
HookEvent = Literal["start", "prompt", "stop", "attention", "waiting-input", "end"]
OnError = Literal["stop", "continue"]


class NoParams(TypedDict):
    """runtime.describe, runtime.snapshot."""


# ---- windows and tabs ----------------------------------------------------------------------


class WindowCreateParams(TypedDict):
    cwd: NotRequired[str]
    shell: NotRequired[str]
    cols: NotRequired[int]
    rows: NotRequired[int]


class WindowFocusParams(TypedDict):
    window_id: NotRequired[int]
    pane_id: NotRequired[int]


class WindowCloseParams(TypedDict):
    window_id: NotRequired[int]
    confirm: NotRequired[bool]


class TabNewParams(TypedDict):
    window_id: NotRequired[int]
    cwd: NotRequired[str]
    shell: NotRequired[str]
    cols: NotRequired[int]
    rows: NotRequired[int]


class TabCloseParams(TypedDict):
    window_id: NotRequired[int]
    tab_index: int
    confirm: NotRequired[bool]


class TabRenameParams(TypedDict):
    window_id: NotRequired[int]
    tab_index: int
    name: str | None


class TabMoveParams(TypedDict):
    window_id: NotRequired[int]
    tab_index: int
    to_index: int


class LegacyAttachParams(TypedDict):
    """`ATTACH <token> [cwd]` (a legacy text line, not a JSON method)."""

    cwd: NotRequired[str]


# ---- panes ---------------------------------------------------------------------------------


class PaneTarget(TypedDict):
    """A pane by id; without window_id the id must be unique among windows (R2.8)."""

    window_id: NotRequired[int]
    pane_id: int


class PaneSplitParams(TypedDict):
    window_id: NotRequired[int]
    pane_id: NotRequired[int]
    direction: DirectionWord
    cwd: NotRequired[str]
    shell: NotRequired[str]


class PaneCloseParams(PaneTarget):
    confirm: NotRequired[bool]


class PanePromptParams(PaneTarget):
    text: str
    submit: NotRequired[bool]


class PaneReadParams(PaneTarget):
    lines: NotRequired[int]
    screen: NotRequired[bool]


class PaneWaitParams(PaneTarget):
    state: WaitTarget
    timeout_ms: NotRequired[int]
    after_seq: NotRequired[int]


class WaitAnyTarget(PaneTarget):
    after_seq: NotRequired[int]


class PaneWaitAnyParams(TypedDict):
    """pane.wait_any (#20): the first of several panes to reach a state."""

    targets: list[WaitAnyTarget]
    state: WaitTarget
    timeout_ms: NotRequired[int]


class PaneRunParams(PaneTarget):
    command: str
    wait: NotRequired[bool]
    timeout_ms: NotRequired[int]


class PaneProcsParams(PaneTarget):
    pass


class PaneScreenParams(PaneTarget):
    pass


class PaneUserInputParams(PaneTarget):
    data_b64: str


class PaneExecParams(PaneTarget):
    argv: list[str]
    timeout_ms: NotRequired[int]
    max_output_bytes: NotRequired[int]


class KeyModifiers(TypedDict):
    control: NotRequired[bool]
    alt: NotRequired[bool]
    shift: NotRequired[bool]


class PaneSendKeyParams(PaneTarget):
    key: str
    modifiers: NotRequired[KeyModifiers]
    repeat: NotRequired[int]


class PanePasteParams(PaneTarget):
    text: str
    submit: NotRequired[bool]


class PaneZoomParams(PaneTarget):
    zoomed: bool


class PaneResizeParams(PaneTarget):
    ratio: float


class EventsSubscribeParams(TypedDict):
    since_revision: NotRequired[int]
    runtime_id: NotRequired[str]
    screens: NotRequired[bool]


# ---- agents --------------------------------------------------------------------------------


class AgentsListParams(TypedDict):
    window_id: NotRequired[int]


class AgentStartParams(TypedDict):
    window_id: NotRequired[int]
    pane_id: NotRequired[int]
    name: str
    kind: str
    cwd: NotRequired[str]
    resume_session_id: NotRequired[str]
    ready_timeout_ms: NotRequired[int]


class AgentLaunchParams(TypedDict):
    """agent.launch (I4.2): a profile's command line in a shell of its own."""

    name: str
    kind: str
    argv: list[str]
    cwd: str
    window_id: NotRequired[int]
    pane_id: NotRequired[int]
    shell_pid: NotRequired[int]


class AgentTarget(TypedDict):
    """An agent by name or agent_id, optionally bound to one generation (R9.4)."""

    agent: str
    generation: NotRequired[int]


class AgentGetParams(AgentTarget):
    pass


class AgentPromptParams(AgentTarget):
    text: str
    submit: NotRequired[bool]


class AgentPasteParams(AgentTarget):
    text: str
    submit: NotRequired[bool]


class AgentReadParams(AgentTarget):
    lines: NotRequired[int]
    screen: NotRequired[bool]


class AgentWaitParams(TypedDict):
    agent: str
    generation: NotRequired[int]
    state: WaitTarget
    timeout_ms: NotRequired[int]
    after_seq: NotRequired[int]


class AgentHookParams(TypedDict):
    window_id: int
    pane_id: int
    event: HookEvent
    kind: str
    session_id: NotRequired[str]
    message: NotRequired[str]


class AgentDelegateParams(AgentTarget):
    text: str
    origin_pane_id: int
    origin_window_id: NotRequired[int]


class AgentForkParams(TypedDict):
    window_id: NotRequired[int]
    source_pane_id: NotRequired[int]
    source_cwd: NotRequired[str]
    name: str
    kind: str
    branch: NotRequired[str]
    base: NotRequired[str]
    path: NotRequired[str]
    allow_dirty_source: NotRequired[bool]
    ready_timeout_ms: NotRequired[int]


# ---- runtime.orchestrate (R10) -------------------------------------------------------------


# The slot types are final: `isinstance(value, dict) and "step" in value` then tells a
# reference from literal ids for the type checker too.
@final
class StepRef(TypedDict):
    """The output `field` of the earlier step `step`."""

    step: str
    field: NotRequired[str | None]


@final
class PaneIds(TypedDict):
    window_id: NotRequired[int]
    pane_id: int


@final
class WindowIds(TypedDict):
    window_id: int


PaneSlot = StepRef | PaneIds
FocusSlot = StepRef | PaneIds | WindowIds
WindowSlot = StepRef | int
TabSlot = StepRef | int


class SplitStep(TypedDict):
    id: str
    op: Literal["split"]
    target: NotRequired[PaneSlot]
    direction: DirectionWord
    cwd: NotRequired[str]
    shell: NotRequired[str]


class NewTabStep(TypedDict):
    id: str
    op: Literal["new_tab"]
    window: NotRequired[WindowSlot]
    cwd: NotRequired[str]
    shell: NotRequired[str]
    cols: NotRequired[int]
    rows: NotRequired[int]


class AgentLaunchStep(TypedDict):
    id: str
    op: Literal["agent_launch"]
    target: PaneSlot
    name: str
    kind: str
    initial_prompt: NotRequired[str]
    ready_timeout_ms: NotRequired[int]
    cwd: NotRequired[str]


class PromptStep(TypedDict):
    id: str
    op: Literal["prompt"]
    target: PaneSlot
    text: str
    submit: NotRequired[bool]


class RunStep(TypedDict):
    id: str
    op: Literal["run"]
    target: PaneSlot
    command: str
    wait: NotRequired[bool]
    timeout_ms: NotRequired[int]


class FocusStep(TypedDict):
    id: str
    op: Literal["focus"]
    target: FocusSlot


class ZoomStep(TypedDict):
    id: str
    op: Literal["zoom"]
    target: PaneSlot
    zoomed: NotRequired[bool]


class ResizeStep(TypedDict):
    id: str
    op: Literal["resize"]
    target: PaneSlot
    ratio: float


class RenameTabStep(TypedDict):
    id: str
    op: Literal["rename_tab"]
    window: NotRequired[WindowSlot]
    tab_index: NotRequired[TabSlot]
    name: str | None


Step = (
    SplitStep
    | NewTabStep
    | AgentLaunchStep
    | PromptStep
    | RunStep
    | FocusStep
    | ZoomStep
    | ResizeStep
    | RenameTabStep
)


class RuntimeOrchestrateParams(TypedDict):
    steps: list[Step]
    on_error: NotRequired[OnError]
    timeout_ms: NotRequired[int]
