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
    return f"p{row.tail_q:g}"


def _side(row: Row, summary: Summary | None, side: str) -> str:
    text = "-"
    if summary is not None:
        text = f"{fmt(summary.median)} {row.unit} ({_tail_label(row)} {fmt(summary.tail)})"
    if side in row.attempts:
        text += f"; failed {row.failures.get(side, 0)} of {row.attempts[side]}"
    return text


def cells(row: Row) -> list[str]:
    """what | Pebrel | comparator | ratio | spread."""
    mine = row.summary("pebrel")
    theirs = row.summary("other")
    if row.failed and (mine is None or (row.comparator and theirs is None)):
        reason = f"n/a: {row.error}"
        if "pebrel" in row.attempts:
            reason += f" ({_side(row, mine, 'pebrel')})"
        return [row.what, reason, row.comparator or "(no equivalent)", "n/a", "-"]
    pebrel_cell = _side(row, mine, "pebrel")
    if row.failed:
        pebrel_cell += f" (incomplete: {row.error})"
    if row.comparator is None:
        spread = f"Pebrel {fmt(mine.low)}-{fmt(mine.high)}" if mine else "-"
        return [row.what, pebrel_cell, "(no equivalent: absolute figure)", "-", spread]
    comp_cell = f"{row.comparator}: {_side(row, theirs, 'other')}"
    ratio = "n/a"
    spread = "-"
    if mine and theirs:
        better = "higher is better" if row.higher_is_better else "lower is better"
        if row.ratio_of_tails and theirs.tail > 0:
            ratio = f"{mine.tail / theirs.tail:.2f}x at {_tail_label(row)} ({better})"
        elif not row.ratio_of_tails and theirs.median > 0:
            ratio = f"{mine.median / theirs.median:.2f}x ({better})"
        else:
            ratio = "n/a (comparator <= 0)"
        ratios = row.ratios()
        spread = (
            f"Pebrel {fmt(mine.low)}-{fmt(mine.high)}; comparator "
            f"{fmt(theirs.low)}-{fmt(theirs.high)}"
        )
        if ratios:
            which = f"{_tail_label(row)} ratio" if row.ratio_of_tails else "ratio"
            spread += f"; {which} {min(ratios):.2f}-{max(ratios):.2f}"
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
  while the control client blocks on `wait-for ch`. New panes are closed between samples, and
  each side is followed by a 50 ms pause, so what it set off (its closed pane's processes
  exiting; Pebrel's fork server forking and warming its next spare) is not timed against the
  other side.
- Read: a full 24x80 screen of a quiet pane, the same request again and again, as a client
  polling a pane sends it: Pebrel's frontend adapter answers repeats from the router's kept
  answer until the screen or the state changes (README, "How reads stay fast"); the first read
  after a change crosses to the router. CLI: `pebrel pane read P --window W --lines 24` vs
  `tmux -L ... capture-pane -p -t %N`, each a new process; the same CLI samples are also set
  against the bare interpreter floor `python -c "import click, json, socket"` (the runtime's
  Python), taken round-robin with the other two.
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
- Under load: one side floods at a time, never both (the machine may have two cores). A turn
  opens 16 new 80x24 windows on that side (`window.create` / `new-window`), types
  `while :; do cat FILE; done` into each (FILE: 50 MB of the generated plain text; 2 MB with
  `--quick`), waits until every pane shows the text and 16 `cat`s run at once, plus 0.5 s. For
  4 s (3 s with `--quick`) it then cycles through the side's requests, the order rotated every
  cycle, with a 5 ms pause after each: Pebrel `pane.read lines=24` of a 17th pane that stays
  idle (made once per side, showing a known screen), `pane.read lines=24` of a flooded pane and
  `runtime.snapshot` over the persistent connection; tmux `capture-pane -p` of the idle and of
  the flooded pane, each over the persistent `tmux -C` client and as a new client process
  (`tmux -L ... capture-pane -p -t %N`), and `list-panes -a` over `tmux -C`. The same
  `pane.read` samples are set against both tmux comparators. The turn then closes its windows
  and waits until no `cat` of the file is left and the side's processes use less than 0.15 of a
  core. The side that goes first alternates across the repetitions (4; 2 with `--quick`; or
  `--reps`). During Pebrel's turn the runtime holds 17 panes; `list-panes -a` lists 19 (the
  control client's session and the `bench` session's first window too).
- Under-load rows give the median of the per-repetition medians (p50) and the p99 pooled over
  every sample of every repetition, and the ratio of the p99s; the spread is the range of the
  per-repetition medians and of the per-repetition p99 ratios. A request fails on an error
  envelope, a wrong answer (the idle pane's known text, the flood's text, the pane count), a
  lost connection, or no answer within 10 s; the failures are counted in the cells ("failed N
  of M") and their reasons listed in the notes, never dropped. Every request enters the
  latencies, failed ones too, a timed-out one at 10 s.
- Concurrent exec under load: at the end of each Pebrel turn, with the flood still running, one
  burst of 128 connections opened at once, each sending `pane.exec argv=[echo, tok-<tag>-<i>]`
  to the idle pane, and one burst of the asyncio floor (`create_subprocess_exec("echo", tok)` x
  128, every output read), which goes first alternating across repetitions. A call is correct
  only with `exit_code` 0, `stdout` exactly its own token and a newline, and an empty `stderr`;
  the clock covers connecting, all answers and the checks. The cells count the calls that were
  not correct; the notes give the correct answers per burst.
- Many readers: each side's turn floods 16 new windows as under load (the same 50 MB file; 2 MB
  with `--quick`), waits for the 16 `cat`s plus a 2 s lead-in, then starts 4 client processes
  (forked, one connection each, started together once all are connected) that for 15 s (5 s
  with `--quick`) alternate a read of a random one of the 16 flooded panes and the runtime-wide
  listing, with a 5 ms pause after each request: Pebrel `pane.read lines=24` and
  `runtime.snapshot`; tmux `capture-pane -p -t %N` and `list-panes -a`, once as a new client
  process per request and once over 4 persistent `tmux -C` clients (two windows of the same
  turn, their order alternating across repetitions; 3 repetitions, or `--reps`). A read fails
  on an error, a lost connection, no answer within 10 s or a screen without the flood's text
  (`pid=`); a listing when a flooded pane is missing. The same `pane.read` samples are set
  against both tmux comparators; the notes give p50/p95/p99 pooled, the ratio of the medians,
  the `tmux -C` `list-panes -a` figures and the p50/p99 of the age of the screens `pane.read`
  answered with (from their `screen_captured_at` to the answer's arrival).
- Every sample runs under a deadline; a stuck or failing sample marks its row "n/a: reason" and
  the run goes on (under load: see above). Benchmarks are never timed assertions in the test
  suite.
"""


def markdown(rows: list[Row], machine: str, notes: list[str]) -> str:
    out = [
        "# Pebrel benchmark results",
        "",
        "Regenerated by `python -m bench` (see [README.md](README.md)); do not edit by hand. The"
        " sections after the run's notes come from the long-run tools (`python -m bench limits`,"
        " `soak`): a new run of the table keeps them.",
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


#: Sections of RESULTS.md below this line come from the long-run tools (`python -m bench
#: limits`, `python -m bench soak`, ...), pasted from their output: a run of the table keeps them.
KEPT_MARKER = "<!-- kept: sections from the long-run tools; a table run keeps everything below -->"


def kept_sections(previous: str) -> str:
    """What a new table keeps of the previous RESULTS.md: everything from KEPT_MARKER on."""
    at = previous.find(KEPT_MARKER)
    return "" if at < 0 else "\n" + previous[at:]
