"""docs/protocol.md shows each method's error list as the schema has it (R2.2).

The lists after each `<!-- errors: ... -->` mark are generated from the schema
(`python -m pebrel.schema --protocol-errors docs/protocol.md`); these tests fail when the
committed page differs from what the generator makes of it, when a method has no list, and
when an error list is written by hand outside a mark.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pebrel.schema import load_schema, protocol_errors

pytestmark = pytest.mark.timeout(30)

PROTOCOL_MD = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
MARK = re.compile(r"^<!-- errors: ([a-z_. ]+) -->$", re.MULTILINE)


def test_the_committed_page_is_what_the_generator_makes() -> None:
    text = PROTOCOL_MD.read_text(encoding="utf-8")
    assert protocol_errors(text) == text, (
        "docs/protocol.md is stale: run python -m pebrel.schema --protocol-errors docs/protocol.md"
    )


def test_every_method_and_the_common_codes_have_a_list() -> None:
    marked = [name for group in MARK.findall(PROTOCOL_MD.read_text()) for name in group.split()]
    assert len(marked) == len(set(marked))
    assert set(marked) == {"common"} | {
        name for name, spec in load_schema()["methods"].items() if spec.get("errors")
    }


def test_no_error_list_is_written_by_hand() -> None:
    lines = PROTOCOL_MD.read_text(encoding="utf-8").split("\n")
    by_hand = [
        number + 1
        for number, line in enumerate(lines)
        if line.startswith("Errors:") and not MARK.match(lines[number - 1])
    ]
    assert by_hand == []


def test_the_generator_replaces_an_old_list_and_keeps_the_rest() -> None:
    stale = "# x\n\n<!-- errors: tab.move -->\nErrors: `timeout`,\n`stale`.\n\nafter\n"
    assert protocol_errors(stale) == (
        "# x\n\n<!-- errors: tab.move -->\nErrors: `target_not_found`.\n\nafter\n"
    )
