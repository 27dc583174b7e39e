"""The one table of error codes matches the spec's list and the schema's enum (R2.2, R1.6)."""

from __future__ import annotations

from pebrel.errors import RETRYABLE, CollabCode, ErrorCode, PebrelError
from pebrel.schema import load_schema

#: FEATURES R2.2 "Codes in use", copied verbatim.
SPEC_CODES = {
    "invalid_request",
    "invalid_params",
    "invalid_reference",
    "method_not_found",
    "target_not_found",
    "ambiguous_target",
    "invalid_state",
    "action_failed",
    "invalid_shell",
    "agent_name_conflict",
    "agent_identity_mismatch",
    "agent_exited",
    "agent_replaced",
    "origin_not_agent",
    "origin_identity_unavailable",
    "delegation_in_progress",
    "agent_ready_timeout",
    "dirty_source",
    "branch_conflict",
    "worktree_path_conflict",
    "git_unavailable",
    "invalid_base",
    "invalid_branch",
    "remote_worktree_unsupported",
    "remote_process_unavailable",
    "remote_exec_unsupported",
    "exit_code_unavailable",
    "run_start_timeout",
    "run_aborted",
    "ssh_not_ready",
    "runtime_unavailable",
    "runtime_timeout",
    "timeout",
    "protocol_version_mismatch",
}
#: R2.2: the spec's `input_in_progress`, the three codes Pebrel adds, the CLI's own
#: `client_timeout` (DESIGN "Result shapes": exit status 4; #14), and `caller_not_user`
#: (pane.user_input called from inside a pane; #21).
EXTRA_CODES = {
    "input_in_progress",
    "confirmation_required",
    "slow_consumer",
    "internal_error",
    "client_timeout",
    "caller_not_user",
}


def test_error_codes_are_the_spec_list() -> None:
    """R2.2: ErrorCode holds exactly the spec's codes plus Pebrel's six, no more, no less."""
    assert len(SPEC_CODES) == 34
    assert {str(code) for code in ErrorCode} == SPEC_CODES | EXTRA_CODES


def test_error_codes_are_the_schema_enum() -> None:
    """R1.6, R2.2: the schema's error_code enum is the same set, without duplicates."""
    enum = load_schema()["$defs"]["error_code"]["enum"]
    assert len(enum) == len(set(enum))
    assert set(enum) == {str(code) for code in ErrorCode}


def test_collab_codes_are_the_schema_collab_enum() -> None:
    """I1-I4 (#16): the schema's collab_error_code enum is CollabCode, and an error's code may
    be either table's."""
    schema = load_schema()
    enum = schema["$defs"]["collab_error_code"]["enum"]
    assert len(enum) == len(set(enum))
    assert set(enum) == {str(code) for code in CollabCode}
    assert not set(enum) & {str(code) for code in ErrorCode}
    assert schema["$defs"]["error"]["properties"]["code"] == {
        "anyOf": [{"$ref": "#/$defs/error_code"}, {"$ref": "#/$defs/collab_error_code"}]
    }
    assert {code.name: code.value for code in CollabCode} == {
        code.value: code.value for code in CollabCode
    }
    assert set(CollabCode) >= RETRYABLE


def test_member_names_spell_their_values() -> None:
    """R2.2: each member is its code in upper case, so a code is found by its name."""
    assert {code.name: code.value for code in ErrorCode} == {
        code.value.upper(): code.value for code in ErrorCode
    }


def test_pebrel_error_wire_shape() -> None:
    """R2.2: an error goes on the wire as code, message and details (always an object)."""
    bare = PebrelError(ErrorCode.TARGET_NOT_FOUND, "no pane 9")
    assert bare.to_wire() == {"code": "target_not_found", "message": "no pane 9", "details": {}}
    detailed = PebrelError(ErrorCode.TIMEOUT, "late", {"pane_id": 1})
    assert detailed.to_wire() == {"code": "timeout", "message": "late", "details": {"pane_id": 1}}
    assert str(detailed) == "late"
