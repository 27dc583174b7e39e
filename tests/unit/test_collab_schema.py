"""The collab.* entries of the schema (I1-I4, #16): closed params, a result, known codes.

Every collab method answers in the normal envelope; its own codes are the collab layer's
UPPER_CASE table (`CollabCode`, `$defs.collab_error_code`), and any of them can be answered
`INTEGRATION_RUNTIME_UNAVAILABLE` (the service is down or restarting) and
`COLLAB_STORAGE_UNAVAILABLE` (its database could not commit), both retryable.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pebrel.collab.rights import READS
from pebrel.errors import RETRYABLE, CollabCode
from pebrel.schema import SCHEMA_FILE, load_schema, resolve, validate_params

pytestmark = pytest.mark.timeout(30)

COLLAB = sorted(name for name in load_schema()["methods"] if name.startswith("collab."))
ALWAYS = {"INTEGRATION_RUNTIME_UNAVAILABLE", "COLLAB_STORAGE_UNAVAILABLE"}


def spec(name: str) -> dict[str, Any]:
    found: dict[str, Any] = load_schema()["methods"][name]
    return found


def test_the_schema_file_names_each_key_once() -> None:
    """A key written twice (a method entry merged in from two branches) would silently keep
    only the last one: refuse it."""
    repeated: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [key for key, _ in items]
        repeated.extend(key for key in set(keys) if keys.count(key) > 1)
        return dict(items)

    json.loads(SCHEMA_FILE.read_text(encoding="utf-8"), object_pairs_hook=pairs)
    assert repeated == []


def test_the_collab_methods_are_the_issue_s() -> None:
    """#16's 27 methods, #17's five `collab.integration.*` admin methods and #18's
    `collab.session.create` / `.restore`."""
    assert len(COLLAB) == 34
    assert {"collab.capabilities", "collab.reply", "collab.events.list"} <= set(COLLAB)
    assert {
        "collab.integration.groups",
        "collab.integration.list",
        "collab.integration.create",
        "collab.integration.update",
        "collab.integration.revoke",
    } <= set(COLLAB)


@pytest.mark.parametrize("name", COLLAB)
def test_each_has_closed_params_a_result_and_a_summary(name: str) -> None:
    entry = spec(name)
    assert entry["params"]["type"] == "object"
    assert entry["params"]["additionalProperties"] is False
    assert entry.get("result")
    assert entry["summary"] and "(I" in entry["summary"]


@pytest.mark.parametrize("name", COLLAB)
def test_each_lists_only_collab_codes_or_common_ones(name: str) -> None:
    """Errors come from CollabCode (or the common list); the two retryable ones always."""
    schema = load_schema()
    listed = set(spec(name)["errors"])
    assert listed <= {str(code) for code in CollabCode} | set(schema["common_errors"])
    assert listed >= ALWAYS
    assert {str(code) for code in RETRYABLE} >= ALWAYS
    assert len(spec(name)["errors"]) == len(listed)


@pytest.mark.parametrize("name", COLLAB)
def test_writes_take_an_idempotency_key(name: str) -> None:
    props = spec(name)["params"]["properties"]
    if name in READS:
        assert "idempotency_key" not in props
        return
    assert "idempotency_key" in props
    assert "idempotency_key" not in spec(name)["params"].get("required", [])
    assert "IDEMPOTENCY_CONFLICT" in spec(name)["errors"]


def test_capabilities_takes_exactly_nothing() -> None:
    assert spec("collab.capabilities")["params"] == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }


def test_user_only_verbs_take_no_acting_session() -> None:
    """Accept and approve-plan are the user's (I3): there is no session to act as."""
    for name in ("collab.task.accept", "collab.task.approve_plan", "collab.group.create"):
        assert "session" not in spec(name)["params"]["properties"]
        assert "INTEGRATION_PERMISSION_DENIED" in spec(name)["errors"]


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("collab.task.get", {"task": "ses_00"}),  # an id of another kind
        ("collab.task.get", {"task": "tsk_XYZ"}),
        ("collab.group.create", {"name": "grp_0011"}),  # a name that reads as an id
        ("collab.group.create", {"name": "two words"}),
        ("collab.task.comment", {"task": "tsk_00", "content": ""}),
        ("collab.task.comment", {"task": "tsk_00", "content": "x" * 32769}),
        ("collab.task.create", {"group": "g", "title": "x" * 257, "content": "c"}),
        ("collab.task.create", {"group": "g", "title": "t", "content": "c", "metadata": [1]}),
        ("collab.task.comment", {"task": "tsk_00", "content": "c", "idempotency_key": ""}),
        ("collab.task.comment", {"task": "tsk_00", "content": "c", "idempotency_key": "a b"}),
        ("collab.task.comment", {"task": "tsk_00", "content": "c", "idempotency_key": "k" * 129}),
        ("collab.task.report", {"task": "tsk_00", "status": "done"}),
        ("collab.task.assign", {"task": "tsk_00", "assignee": "ses_00", "revision": 0}),
        ("collab.events.list", {"group": "g", "limit": 1001}),
        ("collab.events.list", {"group": "g", "after": -1}),
        ("collab.task.accept", {"task": "tsk_00", "session": "ses_00"}),
    ],
)
def test_params_out_of_shape_are_refused(name: str, params: dict[str, Any]) -> None:
    from pebrel.errors import PebrelError

    with pytest.raises(PebrelError) as caught:
        validate_params(name, params)
    assert caught.value.code == "invalid_params"


def test_records_name_their_required_fields() -> None:
    """The records of i16-common "Records" carry their fields (results are open objects)."""
    defs = load_schema()["$defs"]
    assert set(resolve(defs["collab_group"])["required"]) == {
        "group_id",
        "name",
        "created_at",
        "sessions",
    }
    assert {"session_id", "state", "online", "terminal_binding"} <= set(
        defs["collab_session"]["required"]
    )
    assert defs["collab_session_state"]["enum"] == [
        "starting",
        "binding_pending",
        "ready",
        "restoring",
        "failed",
    ]
    assert {"task_id", "status", "revision", "current_attempt_id"} <= set(
        defs["collab_task_summary"]["required"]
    )
    assert {"event_id", "group_id", "sequence", "kind", "payload"} <= set(
        defs["collab_event"]["required"]
    )
    for name in ("collab_group", "collab_session", "collab_task_summary", "collab_event"):
        assert defs[name].get("additionalProperties") is not False
