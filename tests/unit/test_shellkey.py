"""The pane's mark secret (workers/shellkey.py) and the facts OscFacts takes from marks (R6.1).

Only a mark whose last field is the pane's own ``k=<secret>`` is a fact; anything else that
looks like a mark (unkeyed, another pane's key, the key somewhere else) is output.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from pebrel import messages as m
from pebrel.workers.foreground import ForegroundTracker
from pebrel.workers.osc import OscEvent
from pebrel.workers.oscfacts import OscFacts
from pebrel.workers.shellkey import ShellKey

IDS = {"window_id": 1, "pane_id": 2}


def facts(key: ShellKey | None) -> OscFacts:
    return OscFacts(IDS, ForegroundTracker(os.getpid()), lambda: 5, key)


def test_every_pane_gets_its_own_secret() -> None:
    first, second = ShellKey(), ShellKey()
    assert first.value != second.value
    assert len(first.value) == 32 and int(first.value, 16) >= 0


def test_the_key_file_is_private_and_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    key = ShellKey()
    path = Path(key.hand_over())
    assert path.parent == tmp_path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == key.value + "\n"
    key.discard()
    assert not path.exists()
    key.discard()  # twice is fine


def test_the_first_keyed_mark_removes_a_file_the_shell_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    key = ShellKey()
    path = Path(key.hand_over())
    assert key.strip("A;k=wrong") is None
    assert path.exists()
    assert key.strip(f"A;k={key.value}") == "A"
    assert not path.exists()


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ("A;k={key}", ("A", None)),
        ("B;k={key}", ("B", None)),
        ("C;k={key}", ("C", None)),
        ("D;0;k={key}", ("D", 0)),
        ("D;130;k={key}", ("D", 130)),
        ("D;k={key}", ("D", None)),  # no status: a done mark without an exit code
    ],
)
def test_keyed_marks_are_facts(payload: str, expected: tuple[str, int | None]) -> None:
    key = ShellKey()
    fact = facts(key).message(OscEvent(133, payload.format(key=key.value)))
    assert isinstance(fact, m.ShellMarked)
    assert (fact.mark, fact.exit_code, fact.row) == (*expected, 5)


@pytest.mark.parametrize(
    "payload",
    [
        "A",
        "D;0",
        "D;0;k=",
        "D;0;k=0123456789abcdef0123456789abcdef",  # another pane's key
        "D;0;k={key};x=1",  # the key must be the last field
        "D;0;k={key}x",
        "k={key}",  # no mark
        "E;k={key}",  # not a mark Pebrel knows
        "A;click_events=1",  # fish 4's own
        "D;0;aid=4",
    ],
)
def test_other_marks_are_output(payload: str) -> None:
    key = ShellKey()
    assert facts(key).message(OscEvent(133, payload.format(key=key.value))) is None


def test_a_pane_without_integration_takes_no_mark() -> None:
    osc = facts(None)
    assert osc.message(OscEvent(133, "D;0")) is None
    assert osc.message(OscEvent(7, "file://host/etc")) is None
    assert osc.cwd is None


def test_cwd_only_from_a_keyed_osc_7() -> None:
    key = ShellKey()
    osc = facts(key)
    assert osc.message(OscEvent(7, "file://host/etc")) is None
    assert osc.message(OscEvent(7, "file://host/etc;k=0123456789abcdef0123456789abcdef")) is None
    fact = osc.message(OscEvent(7, f"file://host/tmp/a%3Bb%20c;k={key.value}"))
    assert isinstance(fact, m.CwdReported)
    assert fact.cwd == "/tmp/a;b c"
    assert osc.message(OscEvent(7, f"file://host/tmp/a%3Bb%20c;k={key.value}")) is None  # same


def test_an_unkeyed_command_start_leaves_the_exec_watch_alone() -> None:
    key = ShellKey()
    tracker = ForegroundTracker(os.getpid())
    osc = OscFacts(IDS, tracker, lambda: 0, key)
    osc.message(OscEvent(133, "C"))
    assert tracker.exec_watch is False
    osc.message(OscEvent(133, f"C;k={key.value}"))
    assert tracker.exec_watch is True
