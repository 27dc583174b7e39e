"""`python -m bench chaos [--minutes N] [--round-minutes M] [--seed S]`: chaos for long.

Rounds of the chaos engine (tests/chaos/engine.py, which tests/chaos runs for a minute in CI)
one after the other, each on a runtime of its own, until the minutes are up; about a third of
the rounds end with a SIGKILL of the frontend adapter, the others with `pebrel runtime stop`.
Prints each round's summary and every violation; exits 1 if any round had one. Run it from the
clone's root (it imports the engine from tests/).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from tests.chaos.engine import SEED_ENV, RoundConfig, chaos_env, run_round, seed_from_env


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench chaos", description="Kill and stop runtime processes under load."
    )
    parser.add_argument("--minutes", type=float, default=10.0, help="total run time (default 10)")
    parser.add_argument("--round-minutes", type=float, default=3.0, help="one runtime's life")
    parser.add_argument("--seed", type=int, default=None, help=f"default: ${SEED_ENV} or random")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument(
        "--interval", default="1.5,4", help="seconds between blows, MIN,MAX (default 1.5,4)"
    )
    parser.add_argument("--no-agents", action="store_true", help="no fake agent turns")
    args = parser.parse_args(argv)
    low, _, high = args.interval.partition(",")
    interval = (float(low), float(high or low))
    seed = args.seed if args.seed is not None else seed_from_env()
    print(f"chaos: seed {seed} (replay with --seed {seed})", flush=True)
    rng = random.Random(seed)
    env = chaos_env()
    end = time.monotonic() + args.minutes * 60
    failed = 0
    rounds = 0
    with tempfile.TemporaryDirectory(prefix="pebrel-chaos-") as tmp:
        while time.monotonic() < end:
            left = end - time.monotonic()
            config = RoundConfig(
                seed=rng.randrange(1, 2**31),
                duration_s=max(10.0, min(args.round_minutes * 60, left)),
                clients=args.clients,
                agents=not args.no_agents,
                interval_s=interval,
                end="adapter" if rng.random() < 0.3 else "stop",
            )
            root = Path(tmp) / f"round{rounds}"
            rounds += 1
            try:
                report = run_round(root, env, config)
            except Exception as exc:  # a round that could not run: say why, go on
                failed += 1
                print(f"round {rounds} (seed {config.seed}) failed: {exc!r}", flush=True)
                log = root / "data" / "runtime.log"
                if log.exists():
                    tail = log.read_text(errors="replace").splitlines()[-40:]
                    print("\n".join(f"  | {line}" for line in tail), flush=True)
                continue
            print(f"round {rounds}: {report.summary()}", flush=True)
            for line in report.outcome_lines():
                print(f"  {line}", flush=True)
            for line in report.violations:
                print(f"  VIOLATION {line}", flush=True)
            failed += bool(report.violations)
    print(f"chaos: {rounds} rounds, {failed} with violations (seed {seed})", flush=True)
    return 1 if failed else 0
