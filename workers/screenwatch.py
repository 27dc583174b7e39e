"""Evaluates screen rules for a pane while a recognised agent owns its terminal.

Screen changes only mark the screen dirty; the rules run at most once per ``INTERVAL_S``
(never per chunk of output), and a report goes out only when the matching rule changes.
Nothing runs while no agent is in the foreground.
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

    def set_kind(self, kind: str | None) -> None:
        """The foreground agent kind changed (None: no agent); a match is dropped with it."""
        if kind == self.kind:
            return
        self.kind = kind
        self._cancel()
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
        rule = match(self.rules, self.kind, self.read_text()) if self.kind else None
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
