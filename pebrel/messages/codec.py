"""The one codec of actor messages: msgpack maps, the fields plus ``type``. Nothing else in
Pebrel calls msgpack.

A message is encoded as a map of its fields and its ``type``, and decoded by looking that
``type`` up in one registry of every message family. Both directions cost a dict lookup and
one map per message (no per-message reflection: the field names of each type are read once).
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import msgpack

from pebrel.messages import collab, commands, facts, frontend, replies
from pebrel.messages import exec as execs
from pebrel.messages.base import Message

_REGISTRY: dict[str, type[Message]] = {
    cls.type: cls
    for family in (frontend, commands, replies, facts, execs, collab)
    for cls in family.MESSAGES
}


class MessageError(ValueError):
    """A frame that is not a known, well-formed actor message."""


def all_message_types() -> dict[str, type[Message]]:
    return dict(_REGISTRY)


_FIELDS: dict[type[Message], tuple[str, ...]] = {}

PACK_BUFFER_BYTES = 256 * 1024
"""The buffer a packer starts with (msgpack's own default). A message larger than this (a long
scrollback read) grows it; the packer is then replaced, so the grown buffer is not kept."""


def _new_packer() -> msgpack.Packer:
    return msgpack.Packer(use_bin_type=True, autoreset=True, buf_size=PACK_BUFFER_BYTES)


class _ThreadPacker(threading.local):
    """One packer per thread (a packer is not thread-safe), made once and reused.

    ``msgpack.packb`` makes a packer, and so a fresh 256 KiB buffer, for every message. glibc
    serves the first from mmap and then, having raised its mmap threshold when that one was
    freed, every later one from the heap: a 256 KiB block asked for and freed at every
    message, between longer-lived blocks, added to the fragmentation of every process's heap
    (#15; pebrel/heaptrim.py has the rest). A kept packer takes its buffer once.
    """

    def __init__(self) -> None:
        self.packer = _new_packer()


_PACKER = _ThreadPacker()


def encode(message: Message) -> bytes:
    cls = type(message)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(message))
    body = {name: getattr(message, name) for name in names}
    body["type"] = message.type
    local = _PACKER
    packed: bytes = local.packer.pack(body)
    if len(packed) > PACK_BUFFER_BYTES:
        local.packer = _new_packer()
    return packed


def decode(frame: bytes) -> Message:
    try:
        body = msgpack.unpackb(frame, raw=False, strict_map_key=False)
    except Exception as exc:  # msgpack raises several unrelated types
        raise MessageError("frame is not msgpack") from exc
    return _from_body(body)


def _from_body(body: Any) -> Message:
    if not isinstance(body, dict):
        raise MessageError("message is not a map")
    kind = body.pop("type", None)
    cls = _REGISTRY.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise MessageError("unknown message type")
    if not all(isinstance(key, str) for key in body):
        raise MessageError(f"malformed {cls.type} message")
    try:
        return cls(**body)
    except TypeError as exc:
        raise MessageError(f"malformed {cls.type} message") from exc


class StreamDecoder:
    """Messages from a byte stream of back-to-back :func:`encode` results (msgpack maps
    delimit themselves): feed whatever a read returned, get every message it completed."""

    def __init__(self) -> None:
        # Answers are not size-limited on the wire (a long scrollback read is large).
        self._unpacker = msgpack.Unpacker(
            raw=False, strict_map_key=False, max_buffer_size=2**31 - 1
        )

    def feed(self, data: bytes) -> list[Message | MessageError]:
        """What ``data`` completed, in order: each message, or the MessageError of one that is
        msgpack but no known record (the stream goes on). Raises MessageError if the bytes are
        not msgpack: the stream cannot be trusted after that."""
        try:
            self._unpacker.feed(data)
            bodies = list(self._unpacker)
        except Exception as exc:  # msgpack raises several unrelated types
            raise MessageError("stream is not msgpack") from exc
        out: list[Message | MessageError] = []
        for body in bodies:
            try:
                out.append(_from_body(body))
            except MessageError as exc:
                out.append(exc)
        return out
