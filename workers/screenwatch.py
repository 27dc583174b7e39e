"""Evaluates screen rules for a pane while a recognised agent owns its terminal.

Screen changes only mark the screen dirty; the rules run at most once per ``INTERVAL_S``
(never per chunk of output), and a report goes out only when the matching rule changes.
Nothing runs while no agent is in the foreground.

Text an agent has not drawn is no evidence about it: the visible text when the shell started
the command (its C mark) is kept, and while the screen still shows exactly that text after an
agent took the terminal, no rule matches. So a previous agent's input prompt left on screen
never makes a CLI that is still loading look ready (R9.3).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from pebrel.screenrules import Rule, match

logger = logging.getLogger(__name__)

INTERVAL_S = 0.1


class ScreenRuleWatch:
    def __init__(
        self,
        rules: list[Rule],
        read_text: Callable[[], str],
        report: Callable[[str | None, str | None], None],
        interval_s: float = INTERVAL_S,
    ) -> None:
        self.rules = rules
        self.read_text = read_text
        self.report = report
        self.interval_s = interval_s
        self.kind: str | None = None
        self.rule: Rule | None = None
        self._last = float("-inf")
        self._timer: asyncio.TimerHandle | None = None
        #: The visible text when the shell last started a command.
        self._at_command: str | None = None
        #: That text while it is still on screen under the agent: it matches no rule.
        self._stale: str | None = None

    def command_started(self) -> None:
        """The pane's shell started a command (C mark): keep what the screen shows now."""
        self._at_command = self.read_text()

    def set_kind(self, kind: str | None) -> None:
        """The foreground agent kind changed (None: no agent); a match is dropped with it."""
        if kind == self.kind:
            return
        self.kind = kind
        self._cancel()
        self._stale, self._at_command = (self._at_command if kind else None), None
        if self.rule is not None:
            self.rule = None
            self.report(None, None)
        if kind is not None:
            self.screen_changed()

    def screen_changed(self) -> None:
        if self.kind is None or self._timer is not None:
            return
        delay = max(0.0, self._last + self.interval_s - time.monotonic())
        self._timer = asyncio.get_running_loop().call_later(delay, self.evaluate)

    def evaluate(self) -> None:
        self._timer = None
        self._last = time.monotonic()
        text = self.read_text() if self.kind else ""
        if self._stale is not None and text != self._stale:
            self._stale = None  # the agent has drawn: the screen is its own from now on
        stale = self._stale is not None
        rule = match(self.rules, self.kind, text) if self.kind and not stale else None
        if (rule.id if rule else None) == (self.rule.id if self.rule else None):
            return
        self.rule = rule
        logger.debug("screen rule changed", extra={"rule_id": rule.id if rule else None})
        self.report(rule.id if rule else None, rule.state if rule else None)

    def close(self) -> None:
        self._cancel()

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
