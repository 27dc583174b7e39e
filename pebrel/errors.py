"""The one exception type and the one table of error codes (FEATURES R2.2)."""

from __future__ import annotations

import secrets
from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    """Every machine-readable error code of protocol v1. Public API: never rename or reuse."""

    INVALID_REQUEST = "invalid_request"
    INVALID_PARAMS = "invalid_params"
    INVALID_REFERENCE = "invalid_reference"
    METHOD_NOT_FOUND = "method_not_found"
    TARGET_NOT_FOUND = "target_not_found"
    AMBIGUOUS_TARGET = "ambiguous_target"
    INVALID_STATE = "invalid_state"
    ACTION_FAILED = "action_failed"
    INVALID_SHELL = "invalid_shell"
    AGENT_NAME_CONFLICT = "agent_name_conflict"
    AGENT_IDENTITY_MISMATCH = "agent_identity_mismatch"
    AGENT_EXITED = "agent_exited"
    AGENT_REPLACED = "agent_replaced"
    ORIGIN_NOT_AGENT = "origin_not_agent"
    ORIGIN_IDENTITY_UNAVAILABLE = "origin_identity_unavailable"
    DELEGATION_IN_PROGRESS = "delegation_in_progress"
    AGENT_READY_TIMEOUT = "agent_ready_timeout"
    DIRTY_SOURCE = "dirty_source"
    BRANCH_CONFLICT = "branch_conflict"
    WORKTREE_PATH_CONFLICT = "worktree_path_conflict"
    GIT_UNAVAILABLE = "git_unavailable"
    INVALID_BASE = "invalid_base"
    INVALID_BRANCH = "invalid_branch"
    REMOTE_WORKTREE_UNSUPPORTED = "remote_worktree_unsupported"
    REMOTE_PROCESS_UNAVAILABLE = "remote_process_unavailable"
    REMOTE_EXEC_UNSUPPORTED = "remote_exec_unsupported"
    EXIT_CODE_UNAVAILABLE = "exit_code_unavailable"
    RUN_START_TIMEOUT = "run_start_timeout"
    RUN_ABORTED = "run_aborted"
    SSH_NOT_READY = "ssh_not_ready"
    RUNTIME_UNAVAILABLE = "runtime_unavailable"
    RUNTIME_TIMEOUT = "runtime_timeout"
    TIMEOUT = "timeout"
    PROTOCOL_VERSION_MISMATCH = "protocol_version_mismatch"
    INPUT_IN_PROGRESS = "input_in_progress"
    CONFIRMATION_REQUIRED = "confirmation_required"
    SLOW_CONSUMER = "slow_consumer"
    #: A method for the local user alone (pane.user_input) was called from inside a pane.
    CALLER_NOT_USER = "caller_not_user"
    INTERNAL_ERROR = "internal_error"
    #: Only clients answer it: the runtime took the request but its answer did not arrive
    #: within the client's own deadline (the CLI exits 4).
    CLIENT_TIMEOUT = "client_timeout"


class PebrelError(Exception):
    """A failure with a public error code; raised by handlers, turned into an error envelope."""

    def __init__(
        self, code: ErrorCode | CollabCode, message: str, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details: dict[str, Any] = details or {}

    def to_wire(self) -> dict[str, Any]:
        return {"code": str(self.code), "message": self.message, "details": self.details}


def internal_error() -> PebrelError:
    """An `internal_error` with a fresh incident id; the caller logs the traceback under it."""
    incident = secrets.token_hex(6)
    return PebrelError(
        ErrorCode.INTERNAL_ERROR,
        f"Pebrel failed unexpectedly; see incident {incident} in runtime.log",
        {"incident": incident},
    )


class CollabCode(StrEnum):
    """The collaboration layer's error codes (FEATURES I1-I4; the spec's own UPPER_CASE words).

    `collab.*` answers carry them as ``error.code`` with ``details.retryable`` (from
    `RETRYABLE`); the integration socket sends them as the spec's error line. Public API:
    never rename or reuse.
    """

    INTEGRATION_RUNTIME_UNAVAILABLE = "INTEGRATION_RUNTIME_UNAVAILABLE"
    INTEGRATION_PERMISSION_DENIED = "INTEGRATION_PERMISSION_DENIED"
    COLLAB_STORAGE_UNAVAILABLE = "COLLAB_STORAGE_UNAVAILABLE"
    IDEMPOTENCY_CONFLICT = "IDEMPOTENCY_CONFLICT"
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    GROUP_NOT_FOUND = "GROUP_NOT_FOUND"
    GROUP_NAME_CONFLICT = "GROUP_NAME_CONFLICT"
    INTEGRATION_SESSION_NOT_FOUND = "INTEGRATION_SESSION_NOT_FOUND"
    SESSION_ALREADY_REGISTERED = "SESSION_ALREADY_REGISTERED"
    SESSION_NOT_IN_GROUP = "SESSION_NOT_IN_GROUP"
    COLLAB_AGENT_UNAVAILABLE = "COLLAB_AGENT_UNAVAILABLE"
    TASK_NOT_FOUND = "TASK_NOT_FOUND"
    TASK_CHANGED = "TASK_CHANGED"
    TASK_STATE_INVALID = "TASK_STATE_INVALID"
    ATTEMPT_NOT_CURRENT = "ATTEMPT_NOT_CURRENT"
    ATTEMPT_NOT_FOUND = "ATTEMPT_NOT_FOUND"
    EVENT_NOT_FOUND = "EVENT_NOT_FOUND"
    DECISION_NOT_FOUND = "DECISION_NOT_FOUND"
    DECISION_ALREADY_ANSWERED = "DECISION_ALREADY_ANSWERED"
    MESSAGE_NOT_FOUND = "MESSAGE_NOT_FOUND"
    INVALID_EVENT_CURSOR = "INVALID_EVENT_CURSOR"
    # -- principals and the integration socket (I1, #17) --
    INTEGRATION_UNAUTHORIZED = "INTEGRATION_UNAUTHORIZED"
    INTEGRATION_REVOKED = "INTEGRATION_REVOKED"
    INCOMPATIBLE_INTEGRATION_PROTOCOL = "INCOMPATIBLE_INTEGRATION_PROTOCOL"
    INTEGRATION_NOT_FOUND = "INTEGRATION_NOT_FOUND"
    INTEGRATION_EXISTS = "INTEGRATION_EXISTS"
    INVALID_POLICY = "INVALID_POLICY"
    FEATURE_UNSUPPORTED = "FEATURE_UNSUPPORTED"
    LAUNCH_PROFILE_DENIED = "LAUNCH_PROFILE_DENIED"
    INTEGRATION_BUSY = "INTEGRATION_BUSY"
    # -- the event stream (I2, #17) --
    EVENT_RETENTION_GAP = "EVENT_RETENTION_GAP"
    EVENT_ACK_NOT_SENT = "EVENT_ACK_NOT_SENT"
    EVENT_CONSUMER_SLOW = "EVENT_CONSUMER_SLOW"
    EVENT_CONSUMER_REPLACED = "EVENT_CONSUMER_REPLACED"
    # -- sessions from launch profiles (I4, #18) --
    LAUNCHER_UNAVAILABLE = "LAUNCHER_UNAVAILABLE"
    SESSION_CWD_MISSING = "SESSION_CWD_MISSING"
    SESSION_CWD_DENIED = "SESSION_CWD_DENIED"
    INTEGRATION_SESSION_LIMIT = "INTEGRATION_SESSION_LIMIT"
    SESSION_BACKEND_UNAVAILABLE = "SESSION_BACKEND_UNAVAILABLE"
    SESSION_TARGET_NOT_SHELL = "SESSION_TARGET_NOT_SHELL"
    SESSION_IDENTITY_MISMATCH = "SESSION_IDENTITY_MISMATCH"
    NATIVE_SESSION_ID_MISMATCH = "NATIVE_SESSION_ID_MISMATCH"
    NATIVE_SESSION_ID_INVALID = "NATIVE_SESSION_ID_INVALID"
    NATIVE_SESSION_ID_MISSING = "NATIVE_SESSION_ID_MISSING"
    SESSION_CREATE_OUTCOME_UNKNOWN = "SESSION_CREATE_OUTCOME_UNKNOWN"
    SESSION_OPERATION_IN_PROGRESS = "SESSION_OPERATION_IN_PROGRESS"
    SESSION_BINDING_TIMEOUT = "SESSION_BINDING_TIMEOUT"
    EXACT_RESUME_UNSUPPORTED = "EXACT_RESUME_UNSUPPORTED"
    NATIVE_SESSION_ALREADY_RUNNING = "NATIVE_SESSION_ALREADY_RUNNING"
    AGENT_NOT_RUNNING = "AGENT_NOT_RUNNING"
    SESSION_LAUNCH_FAILED = "SESSION_LAUNCH_FAILED"
    SESSION_OBSERVATION_FAILED = "SESSION_OBSERVATION_FAILED"
    SESSION_STARTUP_INPUT_PENDING = "SESSION_STARTUP_INPUT_PENDING"
    SESSION_STARTUP_INPUT_TIMEOUT = "SESSION_STARTUP_INPUT_TIMEOUT"


#: The codes a caller may retry as they are (with the same idempotency key for a write).
RETRYABLE: frozenset[CollabCode] = frozenset(
    {
        CollabCode.INTEGRATION_RUNTIME_UNAVAILABLE,
        CollabCode.COLLAB_STORAGE_UNAVAILABLE,
        CollabCode.INTEGRATION_BUSY,
        CollabCode.EVENT_CONSUMER_SLOW,
        CollabCode.EVENT_CONSUMER_REPLACED,
        CollabCode.SESSION_BACKEND_UNAVAILABLE,
        CollabCode.SESSION_OPERATION_IN_PROGRESS,
    }
)


class CollabError(PebrelError):
    """A collaboration-layer failure: a `CollabCode`, with ``details.retryable`` always set."""

    def __init__(
        self, code: CollabCode, message: str, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(code, message, details)
        self.details["retryable"] = code in RETRYABLE
