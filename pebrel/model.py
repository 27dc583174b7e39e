"""Names and shared constants of the runtime model (DESIGN "Model")."""

from __future__ import annotations

from typing import Final, Literal

WindowId = int
PaneId = int
TabIndex = int
Revision = int

TaskState = Literal["failed", "attention", "waiting_input", "running", "completed", "idle"]
#: Priority order when signals of the same source disagree (FEATURES R5.1).
TASK_STATE_PRIORITY: Final[tuple[TaskState, ...]] = (
    "failed",
    "attention",
    "waiting_input",
    "running",
    "completed",
    "idle",
)
#: Targets `pane.wait` accepts: every task state plus `settled` (anything but running).
WAIT_TARGETS: Final[tuple[str, ...]] = (*TASK_STATE_PRIORITY, "settled")
SETTLED: Final[frozenset[str]] = frozenset(set(TASK_STATE_PRIORITY) - {"running"})

Direction = Literal["right", "down"]
#: The four accepted direction words; the workflow words mean the same as the short ones.
DIRECTIONS: Final[dict[str, Direction]] = {
    "right": "right",
    "left_right": "right",
    "down": "down",
    "top_bottom": "down",
}

DEFAULT_TAB_COLS: Final = 200
DEFAULT_TAB_ROWS: Final = 50
#: A tab's size limits (the schema's `cols` and `rows` ranges).
MIN_TAB_COLS: Final = 2
MAX_TAB_COLS: Final = 1000
MAX_TAB_ROWS: Final = 500
DEFAULT_SCROLLBACK_LINES: Final = 10_000
#: How long a synchronous running edge waits for evidence before it reverts (DESIGN "Model").
SUBMIT_CONFIRM_MS: Final = 2000
READ_DEFAULT_LINES: Final = 120
READ_MAX_LINES: Final = 2000
#: A pane.read/agent.read answer on the wire (the whole JSON line) stays within this.
READ_MAX_BYTES: Final = 1 << 20
#: What a read answer's lines may take encoded (they are carried twice, in `text` and
#: `lines`); the rest of READ_MAX_BYTES is room for its other fields and the envelope.
READ_LINES_MAX_BYTES: Final = READ_MAX_BYTES - 4096
#: A pane's worker publishes this many of the last logical lines, within this many bytes
#: (encoded as a read answer's lines are): reads of up to that are answered from it
#: (``workers/publisher.py``).
PUBLISH_LINES: Final = READ_DEFAULT_LINES
PUBLISH_MAX_BYTES: Final = 256 * 1024
MAX_PROMPT_BYTES: Final = 32 * 1024
#: How often `pane.send_key` may press one key in a request.
MAX_KEY_REPEAT: Final = 64

# Default deadlines (the runtime applies them when a request leaves `timeout_ms` out).
WAIT_DEFAULT_TIMEOUT_MS: Final = 30_000
RUN_DEFAULT_TIMEOUT_MS: Final = 600_000
EXEC_DEFAULT_TIMEOUT_MS: Final = 600_000
#: How long `agent.start` and `agent.fork` wait for the agent to be ready.
READY_DEFAULT_TIMEOUT_MS: Final = 60_000
#: The longest `ready_timeout_ms` the schema accepts: one hour.
MAX_READY_TIMEOUT_MS: Final = 3_600_000
ORCHESTRATE_DEFAULT_TIMEOUT_MS: Final = 300_000
#: The longest workflow `timeout_ms` the schema accepts: one hour.
ORCHESTRATE_MAX_TIMEOUT_MS: Final = 3_600_000
#: Default of `pane wait`, `agent wait` and a submission's `--wait` in the CLI: 10 minutes
#: (the CLI always sends it; WAIT_DEFAULT_TIMEOUT_MS is the protocol's default).
CLI_WAIT_TIMEOUT_MS: Final = 600_000

#: `pane.exec` keeps the last this many bytes of each stream by default, and at most the max.
EXEC_DEFAULT_MAX_OUTPUT_BYTES: Final = 1 << 20
EXEC_MAX_OUTPUT_BYTES: Final = 16 << 20
