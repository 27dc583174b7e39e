"""Chaos, CI-sized (issue 15 item 2): random kills and stops while 8 clients work (R1.5).

The engine is tests/chaos/engine.py (`python -m bench chaos --minutes N` runs it for long); see its
docstring for the blows and what is checked after each. Here one short round ends with
`pebrel runtime stop` and another with a SIGKILL of the frontend adapter. The seed is printed
(shown on failure); replay a round with PEBREL_CHAOS_SEED=<seed>.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.chaos.engine import RoundConfig, chaos_env, run_round, seed_from_env

pytestmark = pytest.mark.timeout(240)


def round_passes(tmp_path: Path, config: RoundConfig) -> None:
    print(f"chaos seed {config.seed} (PEBREL_CHAOS_SEED={config.seed} replays it)", file=sys.stderr)
    report = run_round(tmp_path, chaos_env(), config)
    print("\n".join([report.summary(), *report.outcome_lines()]), file=sys.stderr)
    assert not report.violations, "\n".join([report.summary(), *report.violations])
    assert report.requests > 0 and sum(report.blows.values()) > 0, report.summary()


def test_chaos_round_ends_with_runtime_stop(tmp_path: Path) -> None:
    """Kills and stops of workers, shells, the fork server, the spare and stops of the
    adapter for 50 s: nothing hangs or is lost, and `runtime stop` leaves nothing behind."""
    round_passes(
        tmp_path,
        RoundConfig(seed=seed_from_env(), duration_s=50, interval_s=(0.5, 1.5), end="stop"),
    )


def test_chaos_round_ends_with_the_adapter_killed(tmp_path: Path) -> None:
    """A short round whose end is a SIGKILL of the frontend adapter: the runtime ends as
    `runtime stop` would (docs/architecture.md), leaving no process and no stray file."""
    round_passes(
        tmp_path,
        RoundConfig(seed=seed_from_env(), duration_s=15, interval_s=(0.5, 1.5), end="adapter"),
    )
