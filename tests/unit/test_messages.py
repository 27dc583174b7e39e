"""Every actor message round-trips through msgpack; malformed frames are refused.

DESIGN "Processes and messages": all actor messages live in `pebrel.messages`, each a small
typed record with an explicit `type`, and nothing else encodes or decodes msgpack (R1.5).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import select
import threading
import tracemalloc
import types
import typing
from collections.abc import Iterator
from typing import Any, NamedTuple

import msgpack
import pytest

from pebrel import messages as m
from pebrel.messages import codec, collab, commands, facts, frontend, replies
from pebrel.messages import exec as execs
from pebrel.messages import forkserver as fork

MESSAGE_TYPES = m.all_message_types()

#: A sample per plain field type; non-trivial values (non-ASCII text, NUL bytes, 64-bit ints).
SAMPLES: dict[Any, Any] = {
    int: 2**40 + 3,
    str: "héllo\nwörld",
    bool: True,
    bytes: b"\x00\x1b[1mbold\xff",
    float: 1.5,
}


def sample(annotation: Any) -> Any:
    """A non-None sample value for one field annotation."""
    if annotation is Any:
        return {"nested": [1, "two", None, {"three": 3.0}]}
    if annotation in SAMPLES:
        return SAMPLES[annotation]
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return sample(next(arg for arg in args if arg is not type(None)))
    if origin is list:
        return [sample(args[0]), sample(args[0])]
    if origin is dict:
        return {sample(args[0]): sample(args[1])}
    raise AssertionError(f"no sample for {annotation!r}; extend SAMPLES")


def fields_of(cls: type[m.Message]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def build(cls: type[m.Message], *, nones: bool = False) -> m.Message:
    values = {}
    for name, annotation in fields_of(cls).items():
        optional = type(None) in typing.get_args(annotation) or annotation is Any
        values[name] = None if nones and optional else sample(annotation)
    return cls(**values)


def test_registry_is_keyed_by_each_types_own_name() -> None:
    """R1.5: each message type has a unique, non-empty `type` and is registered under it."""
    assert MESSAGE_TYPES
    for name, cls in MESSAGE_TYPES.items():
        assert name and cls.type == name
        assert dataclasses.is_dataclass(cls) and issubclass(cls, m.Message)
    assert len({cls.type for cls in MESSAGE_TYPES.values()}) == len(MESSAGE_TYPES)


def test_every_message_of_every_family_is_registered_and_exported() -> None:
    """A message type left out of its family's MESSAGES could not be decoded: none is."""
    defined = {
        cls
        for family in (frontend, commands, replies, facts, execs, collab)
        for cls in vars(family).values()
        if isinstance(cls, type)
        and issubclass(cls, m.Message)
        and cls.__module__ == family.__name__
    }
    assert defined == set(MESSAGE_TYPES.values())
    for cls in defined:
        assert getattr(m, cls.__name__) is cls


def test_replies_and_facts_share_their_bases() -> None:
    """A reply is matched by its request_id, a fact names its pane: both lead their fields."""
    answers = {cls for cls in MESSAGE_TYPES.values() if issubclass(cls, m.Reply)}
    reported = {cls for cls in MESSAGE_TYPES.values() if issubclass(cls, m.PaneFact)}
    assert m.ScreenRead in answers and m.ExecFinished in answers and m.PaneExited in reported
    for answer in answers:
        assert next(iter(fields_of(answer))) == "request_id"
    for fact in reported:
        assert list(fields_of(fact))[:2] == ["window_id", "pane_id"]


@pytest.mark.parametrize("name", sorted(MESSAGE_TYPES))
def test_message_round_trips(name: str) -> None:
    """R1.5: encode then decode gives back an equal message of the same type."""
    cls = MESSAGE_TYPES[name]
    for message in (build(cls), build(cls, nones=True)):
        frame = m.encode(message)
        assert isinstance(frame, bytes)
        decoded = m.decode(frame)
        assert type(decoded) is cls
        assert decoded == message


@pytest.mark.parametrize("name", sorted(MESSAGE_TYPES))
def test_frame_carries_type_and_every_field(name: str) -> None:
    """R1.5: the wire map is the fields plus an explicit `type`, nothing else."""
    cls = MESSAGE_TYPES[name]
    body = msgpack.unpackb(m.encode(build(cls)), raw=False)
    assert body["type"] == name
    assert set(body) == {"type", *fields_of(cls)}


class Malformed(NamedTuple):
    name: str
    frame: bytes


MALFORMED = [
    Malformed("empty", b""),
    Malformed("reserved-byte", b"\xc1"),
    Malformed("truncated-map", b"\x82\xa4type"),
    Malformed("trailing-bytes", msgpack.packb({"type": "stop_frontend"}) + b"\x00"),
    Malformed("text", b"hello, router"),
    Malformed("list", msgpack.packb(["stop_frontend"])),
    Malformed("int", msgpack.packb(7)),
    Malformed("string", msgpack.packb("stop_frontend")),
    Malformed("nil", msgpack.packb(None)),
    Malformed("unknown-type", msgpack.packb({"type": "launch_rockets"})),
    Malformed("no-type", msgpack.packb({"port": 1})),
    Malformed("type-not-a-string", msgpack.packb({"type": 5})),
    Malformed("type-is-a-list", msgpack.packb({"type": ["frontend_started"]})),
    Malformed("type-is-a-map", msgpack.packb({"type": {"a": 1}})),
    Malformed("missing-field", msgpack.packb({"type": "frontend_started"})),
    Malformed(
        "missing-one-of-several",
        msgpack.packb({"type": "resize_pty", "request_id": 1, "cols": 80}),
    ),
    Malformed("unknown-field", msgpack.packb({"type": "frontend_started", "port": 1, "x": 2})),
    Malformed("non-string-key", msgpack.packb({"type": "frontend_started", 1: 2})),
]


@pytest.mark.parametrize("case", MALFORMED, ids=[c.name for c in MALFORMED])
def test_decode_refuses_malformed_frames(case: Malformed) -> None:
    """R1.5: anything but a known, complete message raises MessageError (and only that), so
    the router's receive loop, which catches MessageError, survives it."""
    with pytest.raises(m.MessageError):
        m.decode(case.frame)


# -- the frontend link's stream (pebrel/link.py) ------------------------------------------------


def _stream_samples() -> list[m.Message]:
    lines = [f"line {i} héllo" for i in range(24)]
    return [
        m.HandleRequest(
            connection_id=1,
            principal="token-holder",
            request_id=7,
            method="pane.read",
            params={"pane_id": 1, "lines": 24},
        ),
        m.RequestAnswered(
            connection_id=1,
            request_id=7,
            ok=True,
            result={"text": "\n".join(lines), "lines": lines},
            error=None,
        ),
        m.ConnectionClosed(connection_id=1),
        m.StopFrontend(),
    ]


def test_a_stream_split_at_any_byte_decodes_to_the_same_messages() -> None:
    """Back-to-back encoded messages come out whole and in order however reads split them."""
    messages = _stream_samples()
    stream = b"".join(m.encode(message) for message in messages)
    for cut in range(len(stream) + 1):
        decoder = m.StreamDecoder()
        assert decoder.feed(stream[:cut]) + decoder.feed(stream[cut:]) == messages


def test_a_stream_fed_byte_by_byte_decodes_every_message() -> None:
    messages = _stream_samples()
    stream = b"".join(m.encode(message) for message in messages)
    decoder = m.StreamDecoder()
    out: list[m.Message | m.MessageError] = []
    for i in range(len(stream)):
        out += decoder.feed(stream[i : i + 1])
    assert out == messages


def test_a_record_that_is_no_message_is_reported_and_the_stream_goes_on() -> None:
    """One unknown or malformed record costs only itself, as a dropped ZeroMQ frame did."""
    good = _stream_samples()
    stream = (
        m.encode(good[0])
        + msgpack.packb({"type": "no_such_message"})
        + msgpack.packb([1, 2, 3])
        + msgpack.packb({"type": "connection_closed", "connection_id": 1, "extra": 2})
        + m.encode(good[1])
    )
    out = m.StreamDecoder().feed(stream)
    assert out[0] == good[0] and out[-1] == good[1]
    assert [type(item) for item in out[1:-1]] == [m.MessageError] * 3


def test_bytes_that_are_not_msgpack_end_the_stream() -> None:
    with pytest.raises(m.MessageError):
        m.StreamDecoder().feed(b"\xc1")  # a byte msgpack never uses


# -- the encoder's buffer (#15) -------------------------------------------------------------------


@contextlib.contextmanager
def _traced() -> Iterator[None]:
    assert not tracemalloc.is_tracing()
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


def _screen_published(lines: int, width: int = 12) -> m.ScreenPublished:
    return m.ScreenPublished(
        window_id=1,
        pane_id=2,
        lines=[f"{i:0{width}d}" for i in range(lines)],
        history_available=lines,
        truncated=False,
        cols=80,
        rows=24,
        captured_at=1.5,
        reports=1,
    )


def test_encoding_takes_no_new_buffer_per_message() -> None:
    """#15: every message used to get a fresh 256 KiB packing buffer (``msgpack.packb``), which
    glibc serves from the heap once its mmap threshold has risen: asked for and freed at every
    message, it fragmented each pane worker's heap under a long soak. The encoder keeps one."""
    message = _screen_published(200)
    m.encode(message)  # this thread's packer is made here, outside the measure
    with _traced():
        for _ in range(200):
            assert m.decode(m.encode(message)) == message
        _, peak = tracemalloc.get_traced_memory()
    assert peak < 64 * 1024, f"encoding peaked at {peak} traced bytes"


def test_a_large_message_does_not_leave_its_buffer_behind() -> None:
    """The packer's buffer grows to fit a large message (a long scrollback read); it is not
    kept at that size for the small messages that follow."""
    large = _screen_published(20_000, width=40)  # about 0.9 MB packed
    with _traced():
        frame = m.encode(large)
        assert len(frame) > 2 * codec.PACK_BUFFER_BYTES
        del frame
        m.encode(_screen_published(5))
        kept, _ = tracemalloc.get_traced_memory()
    assert kept < 2 * codec.PACK_BUFFER_BYTES, f"{kept} traced bytes kept after the message"


def test_threads_encoding_at_once_get_their_own_frames() -> None:
    """A packer is not thread-safe: each thread has its own (the router encodes from threads
    of its executor as well as its loop)."""
    errors: list[str] = []

    def encode_many(index: int) -> None:
        message = _screen_published(50 + index)
        for _ in range(300):
            if m.decode(m.encode(message)) != message:
                errors.append(f"thread {index}: wrong frame")
                return

    threads = [threading.Thread(target=encode_many, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors


# -- the fork server's records (pebrel/messages/forkserver.py) ------------------------------------


@pytest.mark.parametrize("name", sorted(fork.RECORDS))
def test_fork_record_round_trips_as_one_json_line(name: str) -> None:
    """Every fork server record comes back equal from its line, which is one JSON object that
    carries its fields and its type; those a server or worker writes fit in PIPE_BUF."""
    cls = fork.RECORDS[name]
    hints = typing.get_type_hints(cls)
    for nones in (False, True):
        values = {}
        for field in dataclasses.fields(cls):
            annotation = hints[field.name]
            optional = type(None) in typing.get_args(annotation)
            values[field.name] = None if nones and optional else sample(annotation)
        if "config" in values:
            values["config"] = {"argv": ["bash", "-l"], "cols": 80, "env": {"LANG": "C.UTF-8"}}
        record = cls(**values)
        line = fork.encode_line(record)
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        assert json.loads(line) == {"type": name, **values}
        assert fork.decode_line(line) == record
        assert fork.decode_line(line.rstrip(b"\n")) == record  # a datagram has no newline
        if cls is not fork.SpawnWorker:
            assert len(line) < select.PIPE_BUF


FORK_MALFORMED = [
    Malformed("empty", b""),
    Malformed("not-json", b"spare 4242\n"),
    Malformed("list", b'["spare_offered", 1]\n'),
    Malformed("no-type", b'{"pid": 1}\n'),
    Malformed("unknown-type", b'{"type": "launch_rockets"}\n'),
    Malformed("type-not-a-string", b'{"type": 3, "pid": 1}\n'),
    Malformed("missing-field", b'{"type": "worker_forked", "spawn_id": 1}\n'),
    Malformed("unknown-field", b'{"type": "spare_taken", "pid": 1, "id": 2}\n'),
    Malformed("old-shape", b'{"id": 1, "pid": 100}\n'),
]


@pytest.mark.parametrize("case", FORK_MALFORMED, ids=[c.name for c in FORK_MALFORMED])
def test_fork_record_decode_refuses_malformed_lines(case: Malformed) -> None:
    with pytest.raises(m.MessageError):
        fork.decode_line(case.frame)
