"""runtime.orchestrate's check before anything runs: step ids, agent names, text, references.

What each op produces and which slot takes which field are known before any step runs, so a
workflow whose references cannot work is refused whole (R10.2): duplicate step ids or agent
names are `invalid_params`; a reference to a missing or not-earlier step, without `field`, to a
field the op does not produce, or to one the slot cannot use is `invalid_reference`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

from pebrel.errors import ErrorCode, PebrelError
from pebrel.inputs import check_prompt_text
from pebrel.method_params import Step, StepRef

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
#: Text fields typed into a pane, checked like pane.prompt before anything happens.
TEXT_FIELDS = {"prompt": "text", "run": "command", "agent_launch": "initial_prompt"}


def is_ref(value: object) -> TypeGuard[StepRef]:
    return isinstance(value, dict) and "step" in value


def ref_field(ref: StepRef) -> str:
    """The field a reference names (validate() refused one without)."""
    field = ref.get("field")
    assert field, "validate() lets no reference without a field through"
    return field


def validate(steps: list[Step]) -> None:
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
        name = step["name"] if step["op"] == "agent_launch" else None
        if name in names:
            raise PebrelError(
                ErrorCode.INVALID_PARAMS,
                f"two agent_launch steps name an agent {name!r}",
                {"step": step["id"], "other_step": names[name], "name": name},
            )
        if name is not None:
            names[name] = step["id"]
        fields: Mapping[str, object] = step
        check_text(step["id"], step["op"], fields)
        for slot, kind in SLOTS[step["op"]].items():
            ref = fields.get(slot)
            if is_ref(ref):
                check_reference(steps, index, i, slot, kind, ref)


def check_text(step_id: str, op: str, fields: Mapping[str, object]) -> None:
    name = TEXT_FIELDS.get(op)
    text = fields.get(name) if name is not None else None
    if name is None or not isinstance(text, str):
        return
    try:
        check_prompt_text(text, name)
    except PebrelError as exc:
        exc.details["step"] = step_id
        raise


def check_reference(
    steps: list[Step], index: dict[str, int], i: int, slot: str, kind: str, ref: StepRef
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
    field = ref.get("field")
    if not field:
        raise refuse("missing_field", f"the reference to step {ref['step']!r} names no field")
    produced = OUTPUTS[steps[target]["op"]]
    if field not in produced:
        raise refuse(
            "unknown_field",
            f"op {steps[target]['op']} does not produce {field!r}",
            available_fields=sorted(produced),
        )
    if field not in SLOT_FIELDS[kind]:
        raise refuse(
            "field_not_usable",
            f"{field!r} cannot name the {kind} of {slot!r}",
            usable_fields=sorted(SLOT_FIELDS[kind] & produced),
        )
