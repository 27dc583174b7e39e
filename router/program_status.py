"""A pane's program status as clients see it, and the task state it implies (#20).

The pane's worker sends every record its foreground program reported with OSC 7501, and its
last OSC 9;4 progress report (``workers/status_records.py``). The pane record's
``program_status`` is the record that decides, with all of them in ``records``:

- a ``blocked`` record anywhere (a child waiting for a person holds up its parent);
- else the root record (id "");
- else the child that asks most of a person (error, then done, working, idle);
- else, lower in rank, the OSC 9;4 progress report.

The task state it implies: ``working`` -> running; ``blocked`` -> attention with ``kind``
``permission`` (or none: a person must look), waiting_input with ``question`` or ``auth``;
``done`` -> completed; ``error`` -> failed; ``idle`` -> idle. OSC 9;4: progress (normal,
indeterminate, paused) -> running, error -> failed. ``progress`` is the decisive record's, or
the OSC 9;4 report's when the record has none.
"""

from __future__ import annotations

from typing import Any

from pebrel.model import TaskState

#: The most records a pane record lists (the decisive one is always among them).
RECORDS_LISTED = 16

_URGENCY = {"blocked": 4, "error": 3, "done": 2, "working": 1, "idle": 0}
_STATES: dict[str, TaskState] = {
    "working": "running",
    "done": "completed",
    "error": "failed",
    "idle": "idle",
}


def summary(
    records: list[dict[str, Any]], progress: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The pane record's ``program_status`` (None: the program reports nothing)."""
    decisive = _decisive(records)
    if decisive is not None:
        listed = records[:RECORDS_LISTED]
        if decisive not in listed:
            listed = [decisive, *records[: RECORDS_LISTED - 1]]
        return {
            "state": decisive["state"],
            "kind": decisive["kind"],
            "app": decisive["app"],
            "title": decisive["title"],
            "msg": decisive["msg"],
            "progress": decisive["progress"]
            if decisive["progress"] is not None
            else (progress or {}).get("progress"),
            "id": decisive["id"],
            "source": "osc7501",
            "records": listed,
            "records_total": len(records),
        }
    if progress is not None:
        return {
            "state": progress["state"],
            "kind": None,
            "app": None,
            "title": None,
            "msg": None,
            "progress": progress["progress"],
            "id": None,
            "source": "osc9_4",
            "records": [],
            "records_total": 0,
        }
    return None


def _decisive(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not records:
        return None
    for record in records:
        if record["state"] == "blocked":
            return record
    root = next((record for record in records if record["id"] == ""), None)
    if root is not None:
        return root
    return max(records, key=lambda record: _URGENCY.get(record["state"], 0))


def task_state(status: dict[str, Any] | None) -> TaskState | None:
    """The task state ``program_status`` implies (None: no program status)."""
    if status is None:
        return None
    state = status["state"]
    if state == "blocked":
        return "waiting_input" if status["kind"] in ("question", "auth") else "attention"
    return _STATES.get(state)


def progress_of(status: dict[str, Any] | None) -> int | None:
    """The pane record's ``progress`` (0-100; None: none reported)."""
    return status["progress"] if status is not None else None
