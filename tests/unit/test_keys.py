"""Case tables for `pebrel.keys.encode_key`, the named-key encoder (R4.3).

Modifiers are written as a short string: `c` control, `a` alt, `s` shift; `app` marks rows
encoded with DECCKM (application cursor keys) on. The end-to-end tests in
tests/e2e/test_keys_paste.py prove the same bytes reach real programs.
"""

from __future__ import annotations

import json
from typing import NamedTuple

import pytest

from pebrel.keys import KEY_NAMES, encode_key
from pebrel.schema import SCHEMA_FILE


class Case(NamedTuple):
    key: str
    mods: str
    expected: bytes
    app: bool = False


def encode(key: str, mods: str, app: bool = False) -> bytes:
    return encode_key(key, control="c" in mods, alt="a" in mods, shift="s" in mods, app_cursor=app)


CASES = [
    Case("enter", "", b"\r"),
    Case("enter", "a", b"\x1b\r"),
    Case("tab", "", b"\t"),
    Case("tab", "s", b"\x1b[Z"),
    Case("tab", "as", b"\x1b\x1b[Z"),
    Case("escape", "", b"\x1b"),
    Case("escape", "a", b"\x1b\x1b"),
    Case("backspace", "", b"\x7f"),
    Case("backspace", "c", b"\x08"),
    Case("backspace", "a", b"\x1b\x7f"),
    Case("space", "", b" "),
    Case("space", "c", b"\x00"),
    Case("space", "a", b"\x1b "),
    Case("up", "", b"\x1b[A"),
    Case("down", "", b"\x1b[B"),
    Case("right", "", b"\x1b[C"),
    Case("left", "", b"\x1b[D"),
    Case("up", "", b"\x1bOA", app=True),
    Case("down", "", b"\x1bOB", app=True),
    Case("right", "", b"\x1bOC", app=True),
    Case("left", "", b"\x1bOD", app=True),
    Case("up", "s", b"\x1b[1;2A"),
    Case("up", "a", b"\x1b[1;3A"),
    Case("up", "c", b"\x1b[1;5A"),
    Case("left", "cs", b"\x1b[1;6D"),
    Case("right", "cas", b"\x1b[1;8C"),
    Case("right", "c", b"\x1b[1;5C", app=True),
    Case("home", "", b"\x1b[H"),
    Case("end", "", b"\x1b[F"),
    Case("home", "", b"\x1bOH", app=True),
    Case("end", "", b"\x1bOF", app=True),
    Case("end", "c", b"\x1b[1;5F"),
    Case("insert", "", b"\x1b[2~"),
    Case("delete", "", b"\x1b[3~"),
    Case("page_up", "", b"\x1b[5~"),
    Case("page_down", "", b"\x1b[6~"),
    Case("page_up", "s", b"\x1b[5;2~"),
    Case("delete", "c", b"\x1b[3;5~"),
    Case("page_down", "", b"\x1b[6~", app=True),
    Case("f1", "", b"\x1bOP"),
    Case("f2", "", b"\x1bOQ"),
    Case("f3", "", b"\x1bOR"),
    Case("f4", "", b"\x1bOS"),
    Case("f1", "s", b"\x1b[1;2P"),
    Case("f4", "c", b"\x1b[1;5S"),
    Case("f5", "", b"\x1b[15~"),
    Case("f6", "", b"\x1b[17~"),
    Case("f7", "", b"\x1b[18~"),
    Case("f8", "", b"\x1b[19~"),
    Case("f9", "", b"\x1b[20~"),
    Case("f10", "", b"\x1b[21~"),
    Case("f11", "", b"\x1b[23~"),
    Case("f12", "", b"\x1b[24~"),
    Case("f5", "c", b"\x1b[15;5~"),
    Case("f12", "as", b"\x1b[24;4~"),
    Case("a", "c", b"\x01"),
    Case("c", "c", b"\x03"),
    Case("d", "c", b"\x04"),
    Case("z", "c", b"\x1a"),
    Case("c", "ca", b"\x1b\x03"),
]


@pytest.mark.parametrize(
    "case", CASES, ids=[f"{c.key}-{c.mods or 'plain'}{'-app' * c.app}" for c in CASES]
)
def test_encode_key(case: Case) -> None:
    """R4.3: each named key and modifier combination gives xterm's bytes."""
    assert encode(case.key, case.mods, case.app) == case.expected


class Refused(NamedTuple):
    key: str
    mods: str


REFUSED = [
    Refused("c", ""),
    Refused("a", "a"),
    Refused("z", "s"),
    Refused("c", "cs"),
    Refused("enter", "c"),
    Refused("enter", "s"),
    Refused("escape", "c"),
    Refused("tab", "c"),
    Refused("tab", "cs"),
    Refused("space", "s"),
    Refused("backspace", "s"),
    Refused("f13", ""),
    Refused("A", "c"),
    Refused("1", "c"),
    Refused("ctrl", "c"),
    Refused("", ""),
]


@pytest.mark.parametrize(
    "case", REFUSED, ids=[f"{r.key or 'empty'}-{r.mods or 'plain'}" for r in REFUSED]
)
def test_combinations_without_an_encoding_are_refused(case: Refused) -> None:
    """R4.3: a letter without control, an unknown key or a modifier a key cannot carry."""
    with pytest.raises(ValueError):
        encode(case.key, case.mods)


def test_letter_without_control_names_the_fix() -> None:
    """R4.3: the refusal of a bare letter says that control is needed."""
    with pytest.raises(ValueError, match=r"modifiers\.control"):
        encode("q", "")


def test_key_names_match_the_schema() -> None:
    """R4.3: the encoder knows exactly the keys the schema's `$defs.key` allows."""
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert set(schema["$defs"]["key"]["enum"]) == KEY_NAMES


def test_every_known_key_encodes_unmodified_or_with_control() -> None:
    """R4.3: every key has at least one encoding, in both cursor modes."""
    for key in sorted(KEY_NAMES):
        for app in (False, True):
            data = encode(key, "c" if len(key) == 1 else "", app)
            assert data, key
