"""The texts delivered into an assignee's pane (I3.4): each ends with the exact command to run.

Ids are shell-quoted (`shlex.quote`), and each printed command carries a fresh idempotency key,
so running it twice records one fact.
"""

from __future__ import annotations

import secrets
import shlex
from typing import Final

REPORT_STATUSES: Final = ("ack", "working", "blocked", "complete", "failed")
HEADER: Final = "[pebrel collab]"


def fresh_key() -> str:
    return f"key_{secrets.token_hex(8)}"


def q(value: str) -> str:
    return shlex.quote(value)


def report_command(session_id: str, task_id: str, attempt_id: str, status: str) -> str:
    return (
        f"pebrel collab --session {q(session_id)} task report {q(task_id)}"
        f" --attempt {q(attempt_id)} --status {status} --content '...'"
        f" --idempotency-key {q(fresh_key())}"
    )


def question_command(session_id: str, task_id: str) -> str:
    return (
        f"pebrel collab --session {q(session_id)} task question {q(task_id)}"
        f" --content '...' --idempotency-key {q(fresh_key())}"
    )


def respond_command(session_id: str, task_id: str, attempt_id: str, event_id: str) -> str:
    return (
        f"pebrel collab --session {q(session_id)} task respond {q(task_id)}"
        f" --attempt {q(attempt_id)} --to-event {q(event_id)} --content '...'"
        f" --idempotency-key {q(fresh_key())}"
    )


def how_to_report(session_id: str, task_id: str, attempt_id: str) -> str:
    statuses = "|".join(REPORT_STATUSES)
    return (
        f"Report with (--status one of {statuses}; a new --idempotency-key for each report):\n"
        f"{report_command(session_id, task_id, attempt_id, 'ack')}\n"
        f"Ask the user a question with:\n"
        f"{question_command(session_id, task_id)}"
    )


def assignment(
    session_id: str,
    task_id: str,
    attempt_id: str,
    title: str,
    content: str,
    revisions: list[tuple[int, str]],
) -> str:
    """The task as assigned: its text, then every revision so far (a new attempt sees them)."""
    revised = "".join(f"Revision {number}:\n{text}\n\n" for number, text in revisions)
    return (
        f"{HEADER} Task {task_id} is assigned to you (session {session_id},"
        f" attempt {attempt_id}).\nTitle: {title}\n\n{content}\n\n{revised}"
        f"{how_to_report(session_id, task_id, attempt_id)}"
    )


def consultation(
    session_id: str, task_id: str, attempt_id: str, event_id: str, content: str
) -> str:
    return (
        f"{HEADER} A question about task {task_id} (attempt {attempt_id}, event {event_id}):"
        f"\n\n{content}\n\nThis does not change the task or its result. Answer with:\n"
        f"{respond_command(session_id, task_id, attempt_id, event_id)}"
    )


def revision(session_id: str, task_id: str, attempt_id: str, number: int, content: str) -> str:
    return (
        f"{HEADER} Task {task_id} was revised (revision {number}); an earlier result is no"
        f" longer accepted:\n\n{content}\n\nWhen the revised work is done, report a new"
        f" complete.\n{how_to_report(session_id, task_id, attempt_id)}"
    )


def answer(session_id: str, task_id: str, attempt_id: str, decision_id: str, content: str) -> str:
    return (
        f"{HEADER} Your question {decision_id} on task {task_id} was answered:\n\n{content}\n\n"
        f"{how_to_report(session_id, task_id, attempt_id)}"
    )
