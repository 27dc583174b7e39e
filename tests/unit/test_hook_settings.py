"""Hook settings merges for Claude Code and Codex: never lose user data, idempotent (issue 4.2)."""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pebrel.cli import hook_settings as hs

OTHER_HOOK = {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo mine"}]}


def our_commands(settings: dict[str, Any], name: str) -> list[str]:
    return [
        h["command"]
        for entry in settings["hooks"][name]
        for h in entry["hooks"]
        if "PEBREL_CLI" in h["command"]
    ]


@dataclass
class ClaudeCase:
    id: str
    existing: str | None


CLAUDE_CASES = [
    ClaudeCase("missing-file", None),
    ClaudeCase("empty-file", ""),
    ClaudeCase("empty-object", "{}"),
    ClaudeCase(
        "unrelated-keys-and-hooks",
        json.dumps({"model": "x", "hooks": {"Stop": [OTHER_HOOK], "PreToolUse": [OTHER_HOOK]}}),
    ),
]


@pytest.mark.parametrize("case", CLAUDE_CASES, ids=lambda c: c.id)
def test_claude_merge_adds_every_event_once(case: ClaudeCase) -> None:
    text, changed = hs.merge_claude(case.existing)
    assert changed
    merged = json.loads(text)
    for name, matcher, event in hs.CLAUDE_EVENTS:
        assert our_commands(merged, name) == [hs.claude_command(event)]
        ours = [e for e in merged["hooks"][name] if our_commands({"hooks": {name: [e]}}, name)]
        assert ours[0].get("matcher") == matcher
    assert merged["hooks"]["Notification"][-1]["matcher"] == "elicitation_dialog"
    again, changed_again = hs.merge_claude(text)
    assert (again, changed_again) == (text, False), "a second merge changes nothing"


def test_claude_merge_keeps_unrelated_keys_and_hooks() -> None:
    existing = {"model": "x", "env": {"A": "1"}, "hooks": {"Stop": [OTHER_HOOK]}}
    merged = json.loads(hs.merge_claude(json.dumps(existing))[0])
    assert merged["model"] == "x" and merged["env"] == {"A": "1"}
    assert merged["hooks"]["Stop"][0] == OTHER_HOOK
    assert len(merged["hooks"]["Stop"]) == 2


def test_claude_merge_completes_a_partial_install() -> None:
    partial = {"hooks": {"Stop": [hs.claude_entry(None, "stop")]}}
    text, changed = hs.merge_claude(json.dumps(partial))
    merged = json.loads(text)
    assert changed and len(merged["hooks"]["Stop"]) == 1
    assert our_commands(merged, "SessionStart") == [hs.claude_command("start")]


@pytest.mark.parametrize(
    "existing",
    ["{not json", "[1, 2]", '{"hooks": []}', '{"hooks": {"Stop": {}}}'],
    ids=["invalid-json", "not-an-object", "hooks-not-object", "event-not-array"],
)
def test_claude_merge_refuses_what_it_cannot_merge(existing: str) -> None:
    with pytest.raises(hs.SettingsError):
        hs.merge_claude(existing)


def test_claude_command_is_guarded_and_always_succeeds() -> None:
    command = hs.claude_command("stop")
    assert command == '[ -n "$PEBREL_CLI" ] && "$PEBREL_CLI" hook stop --kind claude || true'
    assert hs.claude_snippet()["hooks"]["Stop"][0]["hooks"][0]["command"] == command


@dataclass
class CodexCase:
    id: str
    existing: str | None
    changed: bool


CODEX_CASES = [
    CodexCase("missing-file", None, True),
    CodexCase("empty-file", "", True),
    CodexCase("top-level-keys-only", 'model = "o3"\napproval_policy = "never"', True),
    CodexCase(
        "table-headers",
        'model = "o3"\n\n[mcp_servers.x]\ncommand = "y"\n\n[[profiles]]\nname = "z"\n',
        True,
    ),
    CodexCase("header-first", "[tui]\nnotifications = true\n", True),
    CodexCase("array-line-like-a-header", "x = [\n[1, 2],\n]\n[t]\na = 1\n", True),
    CodexCase("already-ours", hs.codex_notify_line() + "\n[t]\na = 1\n", False),
]


@pytest.mark.parametrize("case", CODEX_CASES, ids=lambda c: c.id)
def test_codex_merge(case: CodexCase) -> None:
    text, changed = hs.merge_codex(case.existing)
    assert changed is case.changed
    parsed = tomllib.loads(text)
    assert parsed["notify"] == hs.CODEX_NOTIFY
    before = tomllib.loads(case.existing or "")
    for key, value in before.items():
        assert parsed[key] == value, f"{key} kept as it was"
    assert hs.merge_codex(text) == (text, False), "a second merge changes nothing"


@pytest.mark.parametrize(
    "existing",
    ['notify = ["notify-send", "done"]\n', "notify = 'x'\n", "not = [toml"],
    ids=["foreign-notify", "foreign-notify-string", "invalid-toml"],
)
def test_codex_merge_refuses_foreign_notify_and_invalid_toml(existing: str) -> None:
    with pytest.raises(hs.SettingsError):
        hs.merge_codex(existing)


def test_codex_notify_passes_the_json_as_last_argument() -> None:
    assert hs.CODEX_NOTIFY[:2] == ["sh", "-c"]
    assert hs.CODEX_NOTIFY[2].startswith('[ -n "$PEBREL_CLI" ]')
    assert '"$1"' in hs.CODEX_NOTIFY[2] and hs.CODEX_NOTIFY[2].endswith("|| true")


def test_write_with_backup(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "settings.json"
    assert hs.write_with_backup(path, "one\n") is None
    backup = hs.write_with_backup(path, "two\n")
    assert backup == path.with_name("settings.json.pebrel-backup")
    assert (path.read_text(), backup.read_text()) == ("two\n", "one\n")
    assert sorted(p.name for p in path.parent.iterdir()) == [
        "settings.json",
        "settings.json.pebrel-backup",
    ]
