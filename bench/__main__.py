"""`python -m bench [--quick] [--reps N] [--out bench/RESULTS.md] [--only PHASE,...]`: Pebrel
side by side with tmux. The long runs are tools of their own, each named by the first argument:

- `python -m bench soak [--minutes N] [--out FILE]`: an hour of mixed load (bench/soak.py);
- `python -m bench fuzz [--minutes N]`: the fuzz tests for a time budget (bench/fuzz.py);
- `python -m bench chaos [--minutes N]`: kills and stops under load (bench/chaos.py);
- `python -m bench limits`: panes, connections and a wrong-token burst (bench/limits.py);
- `python -m bench collab`: collab writes against raw SQLite, reads in a burst (bench/collab.py);
- `python -m bench integration`: the event stream's latency and rate (bench/integration_events.py);
- `python -m bench ssh`: SSH panes against `ssh -tt` in tmux on a loopback server (bench/ssh.py).

Only a full run (every phase, not --quick) writes bench/RESULTS.md by default: a partial run
prints its table and writes a file only where --out says, so it never replaces the full table.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from bench import measure, report
from bench.harness import Bench
from bench.load import under_load
from bench.load_many import many_readers
from bench.measure import Config, Run, log

PHASES = [
    *measure.PHASES,
    ("load", "under load (16 flooding panes)", under_load),
    ("many", "many readers (16 flooding panes, 4 clients)", many_readers),
]
RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def _tool(name: str) -> Callable[[list[str]], int] | None:
    """The `main` of the long-run tool a first argument names, or None."""
    if name == "soak":
        from bench import soak

        return soak.main
    if name == "fuzz":
        from bench import fuzz

        return fuzz.main
    if name == "chaos":
        from bench import chaos

        return chaos.main
    if name == "collab":
        from bench import collab

        return collab.main
    if name == "integration":
        from bench import integration_events

        return integration_events.main
    if name == "limits":
        from bench import limits

        return limits.main
    if name == "ssh":
        from bench import ssh

        return ssh.main
    return None


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    tool = _tool(args_in[0]) if args_in else None
    if tool is not None:
        return tool(args_in[1:])
    keys = [key for key, _, _ in PHASES]
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Pebrel side by side with tmux and the floor. "
        "Long runs: `python -m bench soak|fuzz|chaos|limits|collab|integration --help`.",
    )
    parser.add_argument("--quick", action="store_true", help="fewer reps, smaller files")
    parser.add_argument("--reps", type=int, default=None, help="repetitions (default 7; quick 3)")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where to write the results (default bench/RESULTS.md for a full run; a --quick "
        "or --only run writes no file unless --out is given)",
    )
    parser.add_argument(
        "--only", default="", help=f"comma-separated phases to run, of: {','.join(keys)}"
    )
    args = parser.parse_args(args_in)
    chosen = [k for k in args.only.split(",") if k] or keys
    unknown = set(chosen) - set(keys)
    if unknown:
        parser.error(f"unknown phase(s): {', '.join(sorted(unknown))}")
    if args.reps is not None and args.reps < 1:
        parser.error("--reps must be at least 1")
    config = Config.make(args.quick, args.reps)
    signal.signal(signal.SIGTERM, _terminate)

    from pebrel import __version__ as pebrel_version

    mode = f"{'quick' if config.quick else 'full'} run, {config.reps} repetitions"
    bench = Bench()
    run = Run(bench, config)
    notes: list[str] = []
    machine = report.machine_line("tmux (not started)", pebrel_version, mode)
    started = time.monotonic()
    try:
        bench.start()
        machine = report.machine_line(bench.tmux.version, pebrel_version, mode)
        log(machine)
        for key, title, phase in PHASES:
            if key not in chosen:
                continue
            log(f"{title} ...")
            phase_start = time.monotonic()
            try:
                phase(run)
            except Exception as exc:  # a phase bug must not lose the other rows
                notes.append(f"phase {title} aborted: {type(exc).__name__}: {exc}")
                log(f"  phase aborted: {exc!r}")
            log(f"  {title}: {time.monotonic() - phase_start:.1f} s")
    except Exception as exc:
        notes.append(f"run aborted: {type(exc).__name__}: {exc}")
        log(f"run aborted: {exc!r}")
    finally:
        problems = bench.close()
        notes.extend(f"cleanup: {p}" for p in problems)
    notes.append(f"wall time of the run: {time.monotonic() - started:.0f} s")
    rows = list(run.rows.values())
    print(report.console(rows))
    partial = config.quick or set(chosen) != set(keys)
    out: Path | None = args.out or (None if partial else RESULTS)
    if out is None:
        log(f"partial run: {RESULTS} left as it is (pass --out FILE to keep this table)")
    else:
        kept = report.kept_sections(out.read_text(encoding="utf-8")) if out.exists() else ""
        out.write_text(report.markdown(rows, machine, notes) + kept, encoding="utf-8")
        log(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
