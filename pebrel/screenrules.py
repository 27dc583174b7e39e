"""Declarative screen rules: text on an agent's visible screen that implies a task state.

A rule names the agent kind it applies to (or "*" for every kind), the state it implies, and
exactly one of a `literal` (plain substring) or a `regex` (Python `re` syntax, compiled with
MULTILINE so ``^``/``$`` match at each row; ``\\Z`` is the end of the screen). Rules are matched
against the visible screen's rows joined by "\\n"; the first matching rule wins. Rules from
settings come before the shipped ones (pebrel/agent_rules.json), and a settings rule whose id
equals a shipped rule's id replaces it.

Screen rules are the weakest agent evidence above process identity: the router uses them only
when hooks and program status are silent or missed an edge (R9.1). A rule whose state is `idle`
describes the agent's input prompt: its match is evidence the agent is ready for input (R9.3).
`verified: false` marks a rule not yet checked against the real CLI's screen (documentation
only; it is used like any other).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from pebrel.agentkinds import KINDS

RULE_STATES = ("attention", "waiting_input", "running", "idle", "completed")
SHIPPED_RULES_FILE = "agent_rules.json"
_KEYS = frozenset({"id", "kind", "state", "literal", "regex", "verified"})
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    kind: str  # an agent kind, or "*" for all
    state: str
    literal: str | None = None
    regex: str | None = None
    pattern: re.Pattern[str] | None = field(default=None, compare=False, repr=False)
    verified: bool = True  # False: not yet checked against the real CLI's screen

    def applies_to(self, kind: str) -> bool:
        return self.kind in ("*", kind)

    def matches(self, screen_text: str) -> bool:
        if self.pattern is not None:
            return self.pattern.search(screen_text) is not None
        return self.literal is not None and self.literal in screen_text


def parse_rule(entry: Any, where: str) -> Rule:
    """Validate one rule table; ValueError names `where` and the bad field."""
    if not isinstance(entry, dict):
        raise ValueError(f"{where} must be a table")
    unknown = sorted(str(key) for key in entry if key not in _KEYS)
    if unknown:
        raise ValueError(f"{where} has unknown field(s): {', '.join(unknown)}")
    rule_id = entry.get("id")
    if not isinstance(rule_id, str) or not _ID.fullmatch(rule_id):
        raise ValueError(
            f"{where}.id must be a string of letters, digits, '_', '.', '-' (at most 64)"
        )
    where = f"{where} ({rule_id})"
    kind = entry.get("kind")
    if kind != "*" and kind not in KINDS:
        raise ValueError(f"{where}.kind must be one of {', '.join(KINDS)} or '*'")
    state = entry.get("state")
    if state not in RULE_STATES:
        raise ValueError(f"{where}.state must be one of {', '.join(RULE_STATES)}")
    literal, regex = entry.get("literal"), entry.get("regex")
    if (literal is None) == (regex is None):
        raise ValueError(f"{where} needs exactly one of literal or regex")
    text = literal if literal is not None else regex
    if not isinstance(text, str) or not text:
        field_name = "literal" if literal is not None else "regex"
        raise ValueError(f"{where}.{field_name} must be a non-empty string")
    verified = entry.get("verified", True)
    if not isinstance(verified, bool):
        raise ValueError(f"{where}.verified must be true or false")
    pattern: re.Pattern[str] | None = None
    if regex is not None:
        try:
            pattern = re.compile(regex, re.MULTILINE)
        except re.error as exc:
            raise ValueError(f"{where}.regex does not compile: {exc}") from exc
    return Rule(rule_id, kind, state, literal, regex, pattern, verified)


def parse_rules(entries: Any, where: str) -> list[Rule]:
    if not isinstance(entries, list):
        raise ValueError(f"{where} must be a list of rule tables")
    rules = [parse_rule(entry, f"{where}[{index}]") for index, entry in enumerate(entries)]
    seen: set[str] = set()
    for rule in rules:
        if rule.id in seen:
            raise ValueError(f"{where}: duplicate rule id {rule.id!r}")
        seen.add(rule.id)
    return rules


@functools.cache
def shipped_rules() -> list[Rule]:
    """The rules shipped as package data (read and compiled once per process; do not mutate)."""
    text = resources.files("pebrel").joinpath(SHIPPED_RULES_FILE).read_text(encoding="utf-8")
    data = json.loads(text)
    return parse_rules(data.get("rules") if isinstance(data, dict) else data, SHIPPED_RULES_FILE)


def load_rules(extra: list[dict[str, Any]]) -> list[Rule]:
    """Rules from settings (validated; ValueError on a bad one) followed by the shipped rules."""
    own = parse_rules(extra, "screen_rules")
    ids = {rule.id for rule in own}
    return own + [rule for rule in shipped_rules() if rule.id not in ids]


def match(rules: list[Rule], kind: str | None, screen_text: str) -> Rule | None:
    """The first rule for `kind` that matches the visible screen text; None for no agent."""
    if kind is None:
        return None
    for rule in rules:
        if rule.applies_to(kind) and rule.matches(screen_text):
            return rule
    return None
