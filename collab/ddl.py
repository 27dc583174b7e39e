"""The collab database's tables (collab/store.py opens it; INTEGRATION.md "Data model").

Times are Unix milliseconds. Every fact table that produces a journal event carries the seven
`EVENT_COLUMNS`, so the journal can be rebuilt from the facts with the same ids and sequences.
Schema changes add columns or tables; `meta.schema_version` says which shape a file has.
"""

from __future__ import annotations

from typing import Final

#: The columns every event-producing fact table has, in this order.
EVENT_COLUMNS: Final = (
    "event_id",
    "group_id",
    "sequence",
    "kind",
    "created_at",
    "refs",
    "payload",
)
_EVENT_DDL: Final = """
    event_id TEXT NOT NULL UNIQUE,
    group_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    kind TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    refs TEXT NOT NULL,
    payload TEXT NOT NULL"""

#: The fact tables that produce journal events (each has `EVENT_COLUMNS`).
FACT_TABLES: Final = ("task_events", "artifacts", "messages", "delivery_stages", "session_events")

#: Times are Unix milliseconds (integers) everywhere.
SCHEMA: Final = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS groups (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    last_sequence INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    group_id TEXT REFERENCES groups(id),
    agent_id TEXT NOT NULL,
    agent_name TEXT,
    generation INTEGER NOT NULL,
    agent_kind TEXT NOT NULL,
    native_session_id TEXT,
    state TEXT NOT NULL,
    error_code TEXT,
    terminal_binding TEXT NOT NULL,
    launch_profile_id TEXT,
    principal_id TEXT,
    cwd TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS session_events ({_EVENT_DDL},
    session_id TEXT NOT NULL REFERENCES sessions(id)
);
CREATE TABLE IF NOT EXISTS launch_snapshots (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id),
    executable TEXT NOT NULL,
    argv TEXT NOT NULL,
    cwd TEXT NOT NULL,
    resume_argv TEXT NOT NULL,
    startup_input TEXT
);
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    group_id TEXT NOT NULL REFERENCES groups(id),
    title TEXT NOT NULL,
    content TEXT NOT NULL,
    status TEXT NOT NULL,
    revision INTEGER NOT NULL,
    current_attempt_id TEXT,
    plan_state TEXT,
    accepted_artifact_id TEXT,
    source TEXT NOT NULL,
    origin TEXT,
    external_actor TEXT,
    metadata TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    external_message_id TEXT
);
CREATE TABLE IF NOT EXISTS attempts (
    id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks(id),
    number INTEGER NOT NULL,
    assignee_session TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    last_report TEXT
);
CREATE TABLE IF NOT EXISTS task_events ({_EVENT_DDL},
    task_id TEXT NOT NULL REFERENCES tasks(id),
    attempt_id TEXT,
    actor TEXT NOT NULL,
    body TEXT NOT NULL,
    reply_to_event_id TEXT
);
CREATE TABLE IF NOT EXISTS artifacts ({_EVENT_DDL},
    id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks(id),
    attempt_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    content TEXT NOT NULL,
    summary TEXT,
    evidence TEXT
);
CREATE TABLE IF NOT EXISTS decisions (
    id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks(id),
    attempt_id TEXT NOT NULL,
    question_event_id TEXT NOT NULL,
    question TEXT NOT NULL,
    answer TEXT,
    answer_event_id TEXT,
    answered_by TEXT,
    answered_at INTEGER
);
CREATE TABLE IF NOT EXISTS messages ({_EVENT_DDL},
    id TEXT PRIMARY KEY,
    to_session TEXT NOT NULL,
    from_actor TEXT NOT NULL,
    thread_id TEXT,
    reply_to TEXT,
    task_id TEXT,
    attempt_id TEXT,
    reply_to_event_id TEXT,
    content TEXT NOT NULL,
    metadata TEXT
);
CREATE TABLE IF NOT EXISTS delivery_stages ({_EVENT_DDL},
    delivery_id TEXT NOT NULL,
    message_id TEXT NOT NULL REFERENCES messages(id),
    stage TEXT NOT NULL,
    reason TEXT,
    try INTEGER NOT NULL,
    at INTEGER NOT NULL,
    code TEXT,
    written INTEGER,
    submitted INTEGER
);
CREATE INDEX IF NOT EXISTS delivery_stages_message ON delivery_stages(message_id);
CREATE INDEX IF NOT EXISTS task_events_task ON task_events(task_id);
CREATE INDEX IF NOT EXISTS messages_to ON messages(to_session);
CREATE INDEX IF NOT EXISTS messages_task ON messages(task_id);
CREATE TABLE IF NOT EXISTS journal_floor (
    group_id TEXT PRIMARY KEY,
    floor INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS principals (
    id TEXT PRIMARY KEY,
    group_id TEXT NOT NULL REFERENCES groups(id),
    permissions TEXT NOT NULL,
    launch_profiles TEXT NOT NULL,
    token_hash TEXT NOT NULL,
    revoked_at INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS principal_changes (
    principal_id TEXT NOT NULL REFERENCES principals(id),
    at INTEGER NOT NULL,
    change TEXT NOT NULL,
    policy TEXT
);
CREATE TABLE IF NOT EXISTS consumers (
    principal_id TEXT NOT NULL REFERENCES principals(id),
    name TEXT NOT NULL,
    group_id TEXT NOT NULL,
    acked_sequence INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (principal_id, name)
);
CREATE TABLE IF NOT EXISTS idempotency (
    scope TEXT NOT NULL,
    key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    response TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
);
"""
#: Columns added after a table was first shipped: (table, column, type). A database made
#: before gets them at open (`ALTER TABLE ... ADD COLUMN`, NULL in the old rows).
#: Columns added after version 1's tables were first made (`Store.add_columns`). The session
#: launch columns (#18): the operation in flight (`operation_id`, `operation` create|restore,
#: `launch_state` launching|launched|unknown, `deadline` Unix ms for the binding); the launch
#: snapshot's native id Pebrel chose and the profile it came from; a principal's session cap;
#: the current launch's startup input state (collab/startup.py).
ADDED_COLUMNS: Final = (
    ("tasks", "external_message_id", "TEXT"),
    ("sessions", "operation_id", "TEXT"),
    ("sessions", "operation", "TEXT"),
    ("sessions", "launch_state", "TEXT"),
    ("sessions", "deadline", "INTEGER"),
    ("sessions", "startup_input", "TEXT"),
    ("launch_snapshots", "created_native_id", "TEXT"),
    ("launch_snapshots", "agent_slug", "TEXT"),
    ("launch_snapshots", "profile_id", "TEXT"),
    ("principals", "max_sessions", "INTEGER"),
)
JOURNAL_DDL: Final = """
CREATE TABLE IF NOT EXISTS journal (
    group_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    event_id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    refs TEXT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (group_id, sequence)
) WITHOUT ROWID;
"""
