"""`python -m bench.ab A_PYTHON B_PYTHON [--alternations 5] [--out FILE]`: two builds of Pebrel,
interleaved, in one run on one machine.

A and B are the interpreters of two virtualenvs, each with its own Pebrel installed (say the
commit before a change and the change itself). Each alternation runs the full bench once with
each (the side that goes first alternates), so a slow minute of the machine hits both alike.
Every run uses this checkout's bench code, copied to a temp directory and run from there, so
each side imports and starts only its own installed Pebrel. The report gives, per row of the
table, the median over the runs of each side's Pebrel figure, B against A (worse above 1, for
throughputs too), the same for the comparator (tmux: it shows how much the machine itself
moved), and flags the rows where B is more than `--threshold` worse.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass
class Figures:
    """One row's figures over the runs of one side."""

    pebrel: list[float] = field(default_factory=list)
    comparator: list[float] = field(default_factory=list)


@dataclass
class Table:
    higher_is_better: dict[str, bool] = field(default_factory=dict)
    sides: dict[str, dict[str, Figures]] = field(default_factory=dict)


def first_number(cell: str, labelled: bool = False) -> float | None:
    """The median a cell starts with; a comparator cell starts with its label and ": "."""
    if cell.startswith("n/a"):
        return None
    if labelled:
        cell = cell.rsplit(": ", 1)[-1] if "): " not in cell else cell.split("): ", 1)[1]
    found = NUMBER.match(cell.strip())
    return float(found.group()) if found else None


def parse(results: str) -> dict[str, tuple[float | None, float | None, bool]]:
    """Rows of a bench/RESULTS.md table: what -> (Pebrel median, comparator median, higher
    is better)."""
    rows: dict[str, tuple[float | None, float | None, bool]] = {}
    for line in results.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or cells[0] in ("what", "---") or set(cells[0]) <= {"-"}:
            continue
        what, mine, theirs, ratio, _ = cells
        comparator = None if theirs.startswith("(no equivalent") else first_number(theirs, True)
        rows[what] = (first_number(mine), comparator, "higher is better" in ratio)
    return rows


def run_side(python: str, workdir: Path, out: Path, only: str) -> None:
    subprocess.run(
        [python, "-m", "bench", "--out", str(out), *(["--only", only] if only else [])],
        cwd=workdir,
        env=_env(workdir),
        check=True,
        stdout=subprocess.DEVNULL,
    )


def _env(workdir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PEBREL_")}
    env["PYTHONPATH"] = str(workdir)
    return env


def worse(a: float, b: float, higher_is_better: bool) -> float:
    """B against A, above 1 when B is worse (a throughput that dropped, a time that grew)."""
    if higher_is_better:
        return a / b if b else float("inf")
    return b / a if a else float("inf")


def report(table: Table, threshold: float, runs: int) -> tuple[str, list[str]]:
    lines = [
        f"A/B: {runs} alternations; medians over the runs of each side; "
        "B vs A above 1.00 means B is worse",
        "",
        "| what | A (Pebrel) | B (Pebrel) | B vs A | comparator B vs A | A runs | B runs |",
        "|---|---|---|---|---|---|---|",
    ]
    flagged: list[str] = []
    a_rows, b_rows = table.sides["A"], table.sides["B"]
    for what, higher in table.higher_is_better.items():
        a, b = a_rows.get(what), b_rows.get(what)
        if a is None or b is None or not a.pebrel or not b.pebrel:
            lines.append(f"| {what} | n/a | n/a | n/a | n/a | - | - |")
            continue
        a_med, b_med = statistics.median(a.pebrel), statistics.median(b.pebrel)
        factor = worse(a_med, b_med, higher)
        comp = "-"
        if a.comparator and b.comparator:
            comp_factor = worse(
                statistics.median(a.comparator), statistics.median(b.comparator), higher
            )
            comp = f"{comp_factor:.2f}"
        mark = " **worse**" if factor > 1 + threshold else ""
        if mark:
            flagged.append(what)
        a_range = f"{min(a.pebrel):.4g}-{max(a.pebrel):.4g}"
        ranges = f"{a_range} | {min(b.pebrel):.4g}-{max(b.pebrel):.4g}"
        cells = f"{a_med:.4g} | {b_med:.4g} | {factor:.2f}{mark} | {comp} | {ranges}"
        lines.append(f"| {what} | {cells} |")
    return "\n".join(lines) + "\n", flagged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ab", description=__doc__)
    parser.add_argument("a_python", help="interpreter of the venv with build A (the baseline)")
    parser.add_argument("b_python", help="interpreter of the venv with build B")
    parser.add_argument("--alternations", type=int, default=5)
    parser.add_argument("--threshold", type=float, default=0.10, help="flag B worse than this")
    parser.add_argument("--out", type=Path, default=None, help="also write the report here")
    parser.add_argument("--only", default="", help="bench phases to run (python -m bench --only)")
    args = parser.parse_args(argv)
    table = Table(sides={"A": {}, "B": {}})
    with tempfile.TemporaryDirectory(prefix="pebrel-ab-") as tmp:
        workdir = Path(tmp)
        shutil.copytree(BENCH_DIR, workdir / "bench", ignore=shutil.ignore_patterns("*.md"))
        for i in range(args.alternations):
            order = [("A", args.a_python), ("B", args.b_python)]
            if i % 2:
                order.reverse()
            for side, python in order:
                out = workdir / f"{side}-{i}.md"
                print(f"alternation {i + 1}/{args.alternations}: {side}", file=sys.stderr)
                run_side(python, workdir, out, args.only)
                for what, (mine, theirs, higher) in parse(out.read_text()).items():
                    table.higher_is_better.setdefault(what, higher)
                    figures = table.sides[side].setdefault(what, Figures())
                    if mine is not None:
                        figures.pebrel.append(mine)
                    if theirs is not None:
                        figures.comparator.append(theirs)
    text, flagged = report(table, args.threshold, args.alternations)
    print(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    if flagged:
        print(f"B worse than A by more than {args.threshold:.0%}: {flagged}", file=sys.stderr)
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
