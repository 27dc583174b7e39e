"""The fork server's records (router/forkserver.py <-> workers/forkserver.py): JSON lines.

Each is a small frozen record with a ``type``, one JSON object per line on the wire (a line
is easy to delimit on a pipe several processes write to, and to read in a trace). Who writes
which, and where:

  router -> server (stdin):      SpawnWorker (no spare at hand: fork a child for it),
                                 SpareTaken (the router wrote a config to that spare)
  router -> spare (config pipe): SpawnWorker
  server -> router (channel):    SpareOffered, one datagram with the spare's config pipe
  server -> router (stdout):     WorkerForked or ForkFailed (answers to a SpawnWorker),
                                 ChildExited (any child offered or forked, spares included)
  worker -> router (stdout):     ShellReported, written by the new worker itself once its
                                 shell runs, so the answer does not wait for the server

Every line a server or worker writes is one write() of less than PIPE_BUF bytes, so lines
from different processes never interleave.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from pebrel.messages.codec import MessageError

#: Set to "1" in the fork server's environment when settings.toml has SSH profiles: it
#: imports asyncssh before forking workers, so an SSH pane's worker does not (~0.1 s).
PRELOAD_SSH_VAR = "PEBREL_FORKSERVER_PRELOAD_SSH"


@dataclass(frozen=True, slots=True)
class ForkRecord:
    type: ClassVar[str] = ""


@dataclass(frozen=True, slots=True)
class SpawnWorker(ForkRecord):
    """Start a pane worker with ``config`` (a WorkerConfig's fields)."""

    type: ClassVar[str] = "spawn_worker"
    spawn_id: int
    config: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SpareTaken(ForkRecord):
    """The router wrote a pane's config to spare ``pid``: fork the next spare soon."""

    type: ClassVar[str] = "spare_taken"
    pid: int


@dataclass(frozen=True, slots=True)
class SpareOffered(ForkRecord):
    """A spare child waits for a config on the pipe whose write end comes with this."""

    type: ClassVar[str] = "spare_offered"
    pid: int


@dataclass(frozen=True, slots=True)
class WorkerForked(ForkRecord):
    type: ClassVar[str] = "worker_forked"
    spawn_id: int
    pid: int


@dataclass(frozen=True, slots=True)
class ForkFailed(ForkRecord):
    type: ClassVar[str] = "fork_failed"
    spawn_id: int
    error: str


@dataclass(frozen=True, slots=True)
class ShellReported(ForkRecord):
    """The new worker's shell runs (``shell_pid``), or could not start (None: its
    PaneStartFailed follows over ZeroMQ)."""

    type: ClassVar[str] = "shell_reported"
    spawn_id: int
    shell_pid: int | None
    integrated: bool


@dataclass(frozen=True, slots=True)
class ChildExited(ForkRecord):
    """A child of the fork server ended; ``returncode`` < 0: killed by signal -returncode."""

    type: ClassVar[str] = "child_exited"
    pid: int
    returncode: int | None


RECORDS: dict[str, type[ForkRecord]] = {
    cls.type: cls
    for cls in (
        SpawnWorker,
        SpareTaken,
        SpareOffered,
        WorkerForked,
        ForkFailed,
        ShellReported,
        ChildExited,
    )
}
_FIELDS = {cls: tuple(f.name for f in fields(cls)) for cls in RECORDS.values()}


def encode_line(record: ForkRecord) -> bytes:
    """One JSON line: the record's fields and its ``type``."""
    body = {name: getattr(record, name) for name in _FIELDS[type(record)]}
    body["type"] = record.type
    return json.dumps(body).encode() + b"\n"


def decode_line(line: bytes) -> ForkRecord:
    """The record of one line (its newline optional); MessageError if it is none."""
    try:
        body = json.loads(line)
    except ValueError as exc:
        raise MessageError("line is not JSON") from exc
    if not isinstance(body, dict):
        raise MessageError("record is not an object")
    kind = body.pop("type", None)
    cls = RECORDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise MessageError("unknown record type")
    try:
        return cls(**body)
    except TypeError as exc:
        raise MessageError(f"malformed {cls.type} record") from exc
