"""Screen rules: validation, shipped data, first-match order, settings integration."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import pytest

from pebrel.agentkinds import KINDS
from pebrel.datadir import SETTINGS_FILE
from pebrel.screenrules import RULE_STATES, load_rules, match, shipped_rules
from pebrel.settings import SettingsError, load_settings


class MatchCase(NamedTuple):
    id: str
    kind: str | None
    screen: str
    rule_id: str | None


CLAUDE_BASH = (
    "╭──────────────╮\n│ Bash command │\n│   rm -rf build │\n"
    "│ Do you want to proceed?\n│ ❯ 1. Yes\n│   2. No, and tell Claude what to do (esc)\n╰──╯"
)

MATCHES = [
    MatchCase("claude-proceed", "claude", CLAUDE_BASH, "claude.proceed"),
    MatchCase(
        "claude-edit", "claude", "Do you want to make this edit to app.py?\n❯ 1. Yes", "claude.edit"
    ),
    MatchCase("claude-create", "claude", "Do you want to create notes.md?", "claude.edit"),
    MatchCase(
        "claude-allow",
        "claude",
        "Do you want to allow Claude to fetch this content?",
        "claude.allow",
    ),
    MatchCase(
        "claude-working", "claude", "✻ Thinking… (3s · esc to interrupt)\n> ", "claude.working"
    ),
    MatchCase("codex-allow", "codex", "▌Allow command?\n▌ Yes  Always  No", "codex.allow-command"),
    MatchCase(
        "codex-run",
        "codex",
        "  Would you like to run the following command?\n  $ make\n› 1. Yes, proceed (y)",
        "codex.run-command",
    ),
    MatchCase("codex-edits", "codex", "Would you like to make the following edits?", "codex.edits"),
    MatchCase("codex-working", "codex", "• Working (12s • esc to interrupt)", "codex.working"),
    MatchCase("yes-no-pi", "pi", "Overwrite config? (y/n)", "any.yes-no"),
    MatchCase("yes-no-brackets", "kimi", "Continue? [Y/n] \n\n\n", "any.yes-no"),
    MatchCase("yes-no-claude", "claude", "Delete 3 files? (y/N): ", "any.yes-no"),
    # approval outranks the running status line on the same screen
    MatchCase(
        "approval-first",
        "codex",
        "Working (esc to interrupt)\nWould you like to run the following command?",
        "codex.run-command",
    ),
    # negatives
    MatchCase("yes-no-not-last", "pi", "Overwrite? (y/n) yes\nDone.", None),
    MatchCase("claude-text-for-codex", "codex", CLAUDE_BASH, None),
    MatchCase("codex-text-for-claude", "claude", "Allow command?", None),
    MatchCase("running-text-for-pi", "pi", "esc to interrupt", None),
    MatchCase("no-agent", None, CLAUDE_BASH, None),
    MatchCase("plain-prompt", "claude", "> write me a poem\n", None),
    MatchCase("empty", "claude", "", None),
]


@pytest.mark.parametrize("case", MATCHES, ids=[c.id for c in MATCHES])
def test_shipped_rules_match(case: MatchCase) -> None:
    rule = match(load_rules([]), case.kind, case.screen)
    assert (rule.id if rule else None) == case.rule_id


def test_shipped_rules_are_valid_and_distinct() -> None:
    rules = shipped_rules()
    assert len({r.id for r in rules}) == len(rules)
    assert all(r.kind in (*KINDS, "*") and r.state in RULE_STATES for r in rules)
    assert {r.state for r in rules} <= {"attention", "running", "idle"}


def test_every_kind_has_an_input_prompt_rule() -> None:
    """R9.3: readiness from the screen needs a rule for each kind's input prompt; the shipped
    ones are marked as not checked against the real CLI, and come after the other rules of
    their kind (a working or asking screen still shows the input hint)."""
    rules = shipped_rules()
    inputs = {r.kind: r for r in rules if r.state == "idle"}
    assert set(inputs) == set(KINDS)
    assert all(r.verified is False for r in inputs.values())
    for kind, rule in inputs.items():
        own = [r for r in rules if r.applies_to(kind)]
        assert own[-1] is rule, kind


class BadCase(NamedTuple):
    id: str
    entry: Any
    message: str


BAD = [
    BadCase("not-table", "x", "screen_rules[0] must be a table"),
    BadCase("no-id", {"kind": "*", "state": "idle", "literal": "x"}, "screen_rules[0].id"),
    BadCase("bad-id", {"id": "a b", "kind": "*", "state": "idle", "literal": "x"}, ".id must"),
    BadCase("bad-kind", {"id": "a", "kind": "aider", "state": "idle", "literal": "x"}, "(a).kind"),
    BadCase("bad-state", {"id": "a", "kind": "*", "state": "failed", "literal": "x"}, "(a).state"),
    BadCase(
        "neither", {"id": "a", "kind": "*", "state": "idle"}, "exactly one of literal or regex"
    ),
    BadCase(
        "both",
        {"id": "a", "kind": "*", "state": "idle", "literal": "x", "regex": "x"},
        "exactly one of literal or regex",
    ),
    BadCase("empty-literal", {"id": "a", "kind": "*", "state": "idle", "literal": ""}, ".literal"),
    BadCase("int-regex", {"id": "a", "kind": "*", "state": "idle", "regex": 5}, ".regex must"),
    BadCase(
        "bad-regex", {"id": "a", "kind": "*", "state": "idle", "regex": "("}, "does not compile"
    ),
    BadCase(
        "unknown-field",
        {"id": "a", "kind": "*", "state": "idle", "literal": "x", "when": 1},
        "unknown field(s): when",
    ),
    BadCase(
        "verified-not-bool",
        {"id": "a", "kind": "*", "state": "idle", "literal": "x", "verified": "no"},
        "(a).verified must be true or false",
    ),
]


@pytest.mark.parametrize("case", BAD, ids=[c.id for c in BAD])
def test_bad_rules_are_refused(case: BadCase) -> None:
    with pytest.raises(ValueError, match="screen_rules") as info:
        load_rules([case.entry])
    assert case.message in str(info.value)


def test_duplicate_ids_are_refused() -> None:
    rule = {"id": "a", "kind": "*", "state": "idle", "literal": "x"}
    with pytest.raises(ValueError, match="duplicate rule id 'a'"):
        load_rules([rule, dict(rule)])


def test_extra_rules_come_first_and_replace_shipped_ids() -> None:
    extra = [
        {"id": "mine", "kind": "claude", "state": "waiting_input", "regex": r"^Your answer:\s*$"},
        {"id": "claude.proceed", "kind": "claude", "state": "idle", "literal": "never shown"},
    ]
    rules = load_rules(extra)
    assert [r.id for r in rules[:2]] == ["mine", "claude.proceed"]
    assert sum(r.id == "claude.proceed" for r in rules) == 1
    found = match(rules, "claude", "Your answer:\nesc to interrupt")
    assert found is not None and (found.id, found.state) == ("mine", "waiting_input")
    assert match(rules, "claude", "Do you want to proceed?") is None


def test_settings_screen_rules(tmp_path: Path) -> None:
    (tmp_path / SETTINGS_FILE).write_text(
        '[[screen_rules]]\nid = "ask"\nkind = "*"\nstate = "attention"\nliteral = "Proceed?"\n'
    )
    settings = load_settings(tmp_path)
    assert settings.screen_rules == [
        {"id": "ask", "kind": "*", "state": "attention", "literal": "Proceed?"}
    ]
    assert load_settings(tmp_path / "missing").screen_rules == []


def test_settings_bad_screen_rule_fails_clearly(tmp_path: Path) -> None:
    (tmp_path / SETTINGS_FILE).write_text(
        '[[screen_rules]]\nid = "ask"\nkind = "*"\nstate = "busy"\nliteral = "x"\n'
    )
    with pytest.raises(SettingsError, match=r"screen_rules\[0\] \(ask\)\.state must be one of"):
        load_settings(tmp_path)
