"""A program pane.exec could not start (R6.3): the worker sends the errno by name and the
reason as separate fields of ExecFinished; the router's action_failed answer is the same as
when they travelled as one "ENOENT: ..." string (recorded from that version)."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from pebrel import messages as m
from pebrel.router.handlers.exec import _spawn_failure
from pebrel.router.state import Pane
from pebrel.workers.exec import not_started


class Failure(NamedTuple):
    name: str
    exc: OSError | ValueError
    errno_name: str
    message: str


FAILURES = [
    Failure(
        "missing",
        FileNotFoundError(2, "No such file or directory", "no-such-program-xyz"),
        "ENOENT",
        "could not start 'prog': No such file or directory: 'no-such-program-xyz'",
    ),
    Failure(
        "not-executable",
        PermissionError(13, "Permission denied", "/tmp/x.sh"),
        "EACCES",
        "could not start 'prog': Permission denied: '/tmp/x.sh'",
    ),
    Failure(
        "no-filename",
        OSError(7, "Argument list too long"),
        "E2BIG",
        "could not start 'prog': Argument list too long",
    ),
    Failure(
        "unknown-errno",
        OSError(4242, "Made-up error"),
        "E4242",
        "could not start 'prog': Made-up error",
    ),
    Failure(
        "value-error",
        ValueError("embedded null byte"),
        "EINVAL",
        "could not start 'prog': embedded null byte",
    ),
]


@pytest.mark.parametrize("case", FAILURES, ids=[c.name for c in FAILURES])
def test_a_start_failure_answers_as_before(case: Failure) -> None:
    outcome = not_started(case.exc, 3)
    sent = m.ExecFinished(
        request_id=1,
        exit_code=None,
        signal=None,
        stdout=b"",
        stderr=b"",
        stdout_total=0,
        stderr_total=0,
        timed_out=False,
        duration_ms=outcome.duration_ms,
        cwd="/tmp",
        error=outcome.error,
        errno_name=outcome.errno_name,
    )
    reply = m.decode(m.encode(sent))
    assert isinstance(reply, m.ExecFinished) and reply.errno_name == case.errno_name
    failure = _spawn_failure(Pane(1, 2, "/bin/sh", "sh", "/", 80, 24), ["prog"], reply)
    assert failure.code == "action_failed"
    assert failure.message == case.message
    assert failure.details == {
        "window_id": 1,
        "pane_id": 2,
        "argv0": "prog",
        "errno": case.errno_name,
        "cwd": "/tmp",
    }
