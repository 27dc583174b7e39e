"""The results table, on the console and in bench/RESULTS.md."""

from __future__ import annotations

import datetime
import os
import platform
import sys

from bench.stats import Row, Summary


def fmt(value: float) -> str:
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_line(tmux_version: str, pebrel_version: str, mode: str) -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"{cpu_model()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
        f"Python {sys.version.split()[0]}, {tmux_version}, Pebrel {pebrel_version}; "
        f"{now}; load average at start {load}; {mode}"
    )


def _tail_label(row: Row) -> str:
    return "p5" if row.higher_is_better else "p95"


def _side(row: Row, summary: Summary | None) -> str:
    if summary is None:
        return "-"
    return f"{fmt(summary.median)} {row.unit} ({_tail_label(row)} {fmt(summary.tail)})"


def cells(row: Row) -> list[str]:
    """what | Pebrel | comparator | ratio | spread."""
    mine = row.summary("pebrel")
    theirs = row.summary("other")
    if row.failed and (mine is None or (row.comparator and theirs is None)):
        reason = f"n/a: {row.error}"
        return [row.what, reason, row.comparator or "(no equivalent)", "n/a", "-"]
    pebrel_cell = _side(row, mine)
    if row.failed:
        pebrel_cell += f" (incomplete: {row.error})"
    if row.comparator is None:
        spread = f"Pebrel {fmt(mine.low)}-{fmt(mine.high)}" if mine else "-"
        return [row.what, pebrel_cell, "(no equivalent: absolute figure)", "-", spread]
    comp_cell = f"{row.comparator}: {_side(row, theirs)}"
    ratio = "n/a"
    spread = "-"
    if mine and theirs:
        if theirs.median > 0:
            better = "higher is better" if row.higher_is_better else "lower is better"
            ratio = f"{mine.median / theirs.median:.2f}x ({better})"
        else:
            ratio = "n/a (comparator <= 0)"
        ratios = row.ratios()
        spread = (
            f"Pebrel {fmt(mine.low)}-{fmt(mine.high)}; comparator "
            f"{fmt(theirs.low)}-{fmt(theirs.high)}"
        )
        if ratios:
            spread += f"; ratio {min(ratios):.2f}-{max(ratios):.2f}"
    return [row.what, pebrel_cell, comp_cell, ratio, spread]


def console(rows: list[Row]) -> str:
    lines = []
    for row in rows:
        what, mine, theirs, ratio, spread = cells(row)
        lines.append(
            f"- {what}\n    Pebrel     {mine}\n    comparator {theirs}\n"
            f"    ratio      {ratio}\n    spread     {spread}"
        )
    return "\n".join(lines)


METHOD = """\
- One run starts a Pebrel runtime (`pebrel runtime start`, temp `PEBREL_DATA_DIR`) and a private
  tmux server (`tmux -L pebrel-bench-<pid>`, generated config, no user config) side by side.
  Both get the same temp `HOME` (no user rc files), `SHELL=/bin/bash`, `LANG=C.UTF-8`, the same
  80x24 geometry (Pebrel `window.create` with `cols: 80, rows: 24`; tmux `default-size 80x24`,
  `window-size manual`), tmux `history-limit` equal to Pebrel's default scrollback (10,000
  lines), and the same generated data files. tmux panes run `/bin/bash` (interactive,
  non-login); Pebrel panes run `/bin/bash` with its OSC 133/OSC 7 integration.
- A/B interleaved: each row alternates which side goes first sample by sample, and each
  repetition runs every row of a phase before the next repetition starts. "median" is the
  median of the per-repetition medians; "p95" pools every sample (for MB/s the bad tail is
  the low one, shown as p5); "spread" is the range (min-max) of the per-repetition medians on
  each side, and of the per-repetition ratios.
- ratio = Pebrel median / comparator median. For MB/s above 1 means Pebrel is faster; for ms
  and MiB below 1 means Pebrel is cheaper.
- Persistent comparators: Pebrel requests go over one persistent JSON Lines connection
  (`pebrel.client.Client`); tmux commands go through one persistent `tmux -C` control-mode
  client attached to a separate session, with `refresh-client -f no-output`, so it never
  receives measured panes' output.
- Ingestion: `cat FILE` is typed into an idle pane (`pane.prompt` / `send-keys`); the clock
  runs from the keystrokes until a read of the pane (`pane.read lines=5` / `capture-pane -p`,
  polled every 5 ms on both sides) shows the file's last line, a marker unique to the sample.
  MB = 10^6 bytes of the file.
- Memory: USS and PSS from psutil `memory_full_info()`. Pebrel: the pane's worker process (the
  shell's parent) + its shell. tmux: growth of the tmux server across the pane's creation + its
  shell. "History" is after `cat` of 10,000 lines of 80 columns. Each repetition uses a new
  pane on each side, kept open until the phase ends (a closed pane's freed memory would be
  reused by the next one); the memory phase runs first, before anything else has grown the tmux
  server. A tmux delta can still be understated by malloc reuse.
- Pane creation: Pebrel `pane.split` (returns once the shell is spawned), then `pane.run true`
  until it succeeds (first prompt drawn, OSC 133 seen, `true` ran); tmux `split-window -P -F
  '#{pane_pid}'` over control mode; first command: a new tmux pane running `tmux wait-for -S ch`
  while the control client blocks on `wait-for ch`. New panes are closed between samples.
- Read: a full 24x80 screen. CLI: `pebrel pane read P --window W --lines 24` vs `tmux -L ...
  capture-pane -p -t %N`, each a new process; the same CLI samples are also set against the bare
  interpreter floor `python -c "import click, json, socket"` (the runtime's Python), taken
  round-robin with the other two.
- tmux `wait-for` in control mode answers at once and holds the client's next command until the
  signal, so the harness follows it with a no-op `display-message` (one extra control-mode round
  trip, ~0.1 ms, on tmux's side).
- Round trip: `pane.prompt true` + `pane.wait state=settled after_seq=<seq>` vs `send-keys 'true;
  tmux wait-for -S ch' Enter` + `wait-for ch` (control mode).
- Concurrent exec: N asyncio connections opened at once, each sending one `pane.exec argv=[true]`
  to the same pane; the clock covers connecting, all answers and checking every exit code. The
  floor is `asyncio.create_subprocess_exec("true")` x N with `gather`, in the same process.
- Snapshot: the runtime is filled to 64 panes (windows of up to four panes) on both sides, every
  shell at its prompt, then `runtime.snapshot` vs `list-panes -a` over the persistent clients.
- Fan-out: 32 connections subscribe (`events.subscribe`); a `tab.rename` on another connection
  changes the snapshot; the clock runs from writing the rename until the last subscriber has
  read an event with a newer revision. tmux has no equivalent; the figure is absolute.
- Every sample runs under a deadline; a stuck or failing sample marks its row "n/a: reason" and
  the run goes on. Benchmarks are never timed assertions in the test suite.
"""


def markdown(rows: list[Row], machine: str, notes: list[str]) -> str:
    out = [
        "# Pebrel benchmark results",
        "",
        "Regenerated by `python -m bench` (see [README.md](README.md)); do not edit by hand.",
        "",
        f"**Machine:** {machine}",
        "",
        "| what | Pebrel | comparator | ratio | spread |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells(row)) + " |")
    out += ["", "## Notes on methodology", "", METHOD]
    row_notes = [f"- {row.what}: {row.note}" for row in rows if row.note]
    if row_notes or notes:
        out += ["## Notes from this run", "", *row_notes, *(f"- {n}" for n in notes), ""]
    return "\n".join(out)
