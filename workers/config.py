"""A pane worker's configuration, as the router sends it (JSON, through its spare's pipe)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from pebrel.screenrules import Rule, load_rules

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    endpoint: str
    window_id: int
    pane_id: int
    argv: list[str]
    integrate: bool
    env: dict[str, str]
    cwd: str
    cols: int
    rows: int
    scrollback_lines: int
    log_path: str
    #: `[[screen_rules]]` from settings, matched before the shipped rules.
    screen_rules: list[dict[str, Any]] = field(default_factory=list)
    #: An SSH pane's target (pebrel.shellids.ssh_config); None: a local shell from ``argv``.
    ssh: dict[str, Any] | None = None


def screen_rules(config: WorkerConfig) -> list[Rule]:
    """The settings' screen rules before the shipped ones (the shipped ones alone if invalid)."""
    try:
        return load_rules(config.screen_rules)
    except ValueError:
        logger.exception("invalid screen rules from settings; using the shipped rules only")
        return load_rules([])
