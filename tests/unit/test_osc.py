"""The OSC scanner cuts shell-integration marks out of raw PTY bytes (R6.1)."""

from __future__ import annotations

import itertools
from typing import NamedTuple

import pytest

from pebrel.workers.osc import OSC_MAX_BYTES, OscEvent, OscScanner

pytestmark = pytest.mark.timeout(60)

Item = bytes | OscEvent


def normalise(items: list[Item]) -> list[Item]:
    """Merge adjacent byte segments so results of different feed patterns compare equal."""
    merged: list[Item] = []
    for item in items:
        if isinstance(item, bytes) and merged and isinstance(merged[-1], bytes):
            merged[-1] += item
        else:
            merged.append(item)
    return merged


def feed_pieces(pieces: list[bytes]) -> list[Item]:
    scanner = OscScanner()
    out: list[Item] = []
    for piece in pieces:
        result = scanner.feed(piece)
        assert all(item != b"" for item in result), "empty byte segment"
        assert all(
            not (isinstance(a, bytes) and isinstance(b, bytes))
            for a, b in itertools.pairwise(result)
        ), "adjacent byte segments not merged"
        out.extend(result)
    return normalise(out)


class Case(NamedTuple):
    id: str
    data: bytes
    expected: list[Item]


CASES = [
    Case("bel", b"a\x1b]133;A\x07b", [b"a", OscEvent(133, "A"), b"b"]),
    Case("esc_backslash", b"\x1b]133;B\x1b\\$ ", [OscEvent(133, "B"), b"$ "]),
    Case("c1_st", b"x\x1b]133;C\x9cy", [b"x", OscEvent(133, "C"), b"y"]),
    Case(
        "done_with_params",
        b"out\r\n\x1b]133;D;130;aid=4\x07\x1b]133;A\x07$ ",
        [b"out\r\n", OscEvent(133, "D;130;aid=4"), OscEvent(133, "A"), b"$ "],
    ),
    Case(
        "osc7_percent_path",
        b"\x1b]7;file://host/tmp/a%20b%E2%9C%93\x1b\\",
        [OscEvent(7, "file://host/tmp/a%20b%E2%9C%93")],
    ),
    Case("osc1337", b"\x1b]1337;SetUserVar=x=eQ==\x07", [OscEvent(1337, "SetUserVar=x=eQ==")]),
    Case("osc7501_no_payload", b"\x1b]7501\x07z", [OscEvent(7501, ""), b"z"]),
    Case("title0_passthrough", b"a\x1b]0;my title\x07b", [b"a\x1b]0;my title\x07b"]),
    Case("title2_passthrough_st", b"\x1b]2;t\x1b\\", [b"\x1b]2;t\x1b\\"]),
    Case("icon1_passthrough", b"\x1b]1;i\x07", [b"\x1b]1;i\x07"]),
    # pyte decodes a raw 0x9c as U+FFFD, so a title's C1 ST reaches it as ESC \.
    Case("title_c1_st_rewritten", b"\x1b]2;t\x9c.", [b"\x1b]2;t\x1b\\."]),
    Case("csi_passthrough", b"\x1b[31mred\x1b[0m", [b"\x1b[31mred\x1b[0m"]),
    Case("esc_passthrough", b"\x1b7\x1b8\x1b\\\x1b(B", [b"\x1b7\x1b8\x1b\\\x1b(B"]),
    Case("non_numeric_dropped", b"a\x1b]P0;x\x07b\x1b];y\x07c", [b"abc"]),
    Case(
        "utf8_9c_continuation",
        "\x1b]7;file://h/\u201cq\u201d\x07".encode(),
        [OscEvent(7, "file://h/\u201cq\u201d")],
    ),
    Case(
        "c1_st_after_complete_utf8",
        b"\x1b]7;file://h/\xc3\xa9\x9cok",
        [OscEvent(7, "file://h/\u00e9"), b"ok"],
    ),
    Case("c1_in_text_passthrough", "\u201c\u201d".encode(), ["\u201c\u201d".encode()]),
    Case(
        "esc_aborts_osc",
        b"\x1b]133;A\x1b[1mB",
        [OscEvent(133, "A"), b"\x1b[1mB"],
    ),
    Case(
        "esc_aborts_into_new_osc",
        b"\x1b]133;A\x1b]133;B\x07",
        [OscEvent(133, "A"), OscEvent(133, "B")],
    ),
    Case("double_esc", b"\x1b\x1b]133;A\x07", [b"\x1b", OscEvent(133, "A")]),
    Case("invalid_utf8_payload", b"\x1b]7;\xff\x07", [OscEvent(7, "\ufffd")]),
    Case("plain", b"hello\r\n", [b"hello\r\n"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_whole_chunk(case: Case) -> None:
    assert feed_pieces([case.data]) == case.expected


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_split_at_every_byte(case: Case) -> None:
    for cut in range(len(case.data) + 1):
        pieces = [case.data[:cut], case.data[cut:]]
        assert feed_pieces(pieces) == case.expected, f"cut at {cut}"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_byte_by_byte(case: Case) -> None:
    pieces = [case.data[i : i + 1] for i in range(len(case.data))]
    assert feed_pieces(pieces) == case.expected


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_split_at_every_pair_of_boundaries(case: Case) -> None:
    size = len(case.data)
    for first in range(size + 1):
        for second in range(first, size + 1):
            pieces = [case.data[:first], case.data[first:second], case.data[second:]]
            assert feed_pieces(pieces) == case.expected, f"cuts at {first}, {second}"


def test_fast_path_returns_chunk_unchanged() -> None:
    scanner = OscScanner()
    chunk = b"plain output \x1b[1m bold\r\n" * 100
    result = scanner.feed(chunk)
    assert len(result) == 1
    assert result[0] is chunk
    assert scanner.feed(b"") == []


def test_lone_trailing_esc_held_then_emitted() -> None:
    scanner = OscScanner()
    assert scanner.feed(b"abc\x1b") == [b"abc"]
    assert scanner.feed(b"[0m") == [b"\x1b[0m"]
    assert scanner.feed(b"\x1b") == []
    assert scanner.feed(b"]133;A") == []
    assert scanner.feed(b"\x07") == [OscEvent(133, "A")]


def test_held_esc_in_body_then_backslash() -> None:
    scanner = OscScanner()
    assert scanner.feed(b"\x1b]133;D;0\x1b") == []
    assert scanner.feed(b"\\tail") == [OscEvent(133, "D;0"), b"tail"]


class RunawayCase(NamedTuple):
    id: str
    terminator: bytes
    chunk_bytes: int


RUNAWAY_CASES = [
    RunawayCase("bel_one_chunk", b"\x07", 1 << 20),
    RunawayCase("bel_4k_chunks", b"\x07", 4096),
    RunawayCase("esc_backslash_odd_chunks", b"\x1b\\", 4097),
    RunawayCase("c1_st_small_chunks", b"\x9c", 333),
]


@pytest.mark.parametrize("case", RUNAWAY_CASES, ids=[c.id for c in RUNAWAY_CASES])
def test_runaway_osc_dropped(case: RunawayCase) -> None:
    body = b"\x1b]133;" + b"x" * (OSC_MAX_BYTES + 10)
    data = b"before" + body + case.terminator + b"after\x1b]133;A\x07"
    scanner = OscScanner()
    out: list[Item] = []
    for start in range(0, len(data), case.chunk_bytes):
        out.extend(scanner.feed(data[start : start + case.chunk_bytes]))
        assert len(scanner._body) <= OSC_MAX_BYTES + 2 + case.chunk_bytes
    assert normalise(out) == [b"beforeafter", OscEvent(133, "A")]


def test_runaway_byte_by_byte_keeps_memory_bounded() -> None:
    data = b"\x1b]7;" + "\u201c".encode() * 30_000 + b"\x07ok"
    scanner = OscScanner()
    out: list[Item] = []
    for i in range(len(data)):
        out.extend(scanner.feed(data[i : i + 1]))
        assert len(scanner._body) <= OSC_MAX_BYTES + 3
    assert normalise(out) == [b"ok"]


def test_osc_at_size_limit_is_reported() -> None:
    payload = "y" * (OSC_MAX_BYTES - len("133;"))
    data = b"\x1b]133;" + payload.encode() + b"\x07"
    assert feed_pieces([data]) == [OscEvent(133, payload)]
    assert feed_pieces([data[:1000], data[1000:]]) == [OscEvent(133, payload)]
