"""Review tests (issues 4 and 5) driven with the independent stand-ins of tests/review_fakes.

The fakes are written differently from tests/fakes on purpose (bash `read -r`, python
`python3 /path/codex` with Codex-style JSON-as-last-argument hooks, node), to check that
recognition, hooks, delegation and orchestration do not depend on how a fake is written.
Tests marked "DISCREPANCY" document behaviour that differs from the issues/docs.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.agent_fixtures import SPEC_WORKFLOW
from tests.conftest import PEBREL, Runtime, assert_never, base_env, started_runtime, wait_for

REVIEW_FAKES = Path(__file__).resolve().parent.parent / "review_fakes"


@contextlib.contextmanager
def review_runtime(tmp_path: Path, **extra: str) -> Iterator[Runtime]:
    env = base_env(tmp_path)
    env["PATH"] = f"{REVIEW_FAKES}{os.pathsep}{env['PATH']}"
    env.update(extra)
    with started_runtime(env) as rt:
        yield rt


def agents(rt: Runtime) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = rt.ok("agents.list")["agents"]
    return result


def pane_count(rt: Runtime) -> tuple[int, int]:
    snap = rt.snapshot()
    count = sum(len(t["panes"]) for w in snap["windows"] for t in w["tabs"])
    return snap["revision"], count


def settled(rt: Runtime) -> tuple[int, int]:
    """pane_count once the revision has stood still for 0.3 s: an agent drawing its prompt
    and reporting hooks bumps it for a moment after it is recognised. Comparing before and
    after a refused call needs that quiet point (polled, bounded)."""
    since: dict[tuple[int, int], float] = {}  # the count last seen, and when it was first seen

    def quiet() -> tuple[int, int] | None:
        now = pane_count(rt)
        first_seen = since.get(now)
        if first_seen is None:
            since.clear()
            since[now] = time.monotonic()
            return None
        return now if time.monotonic() - first_seen >= 0.3 else None

    result: tuple[int, int] = wait_for(
        quiet, 10, "the snapshot revision to stand still", interval_s=0.05
    )
    return result


def new_tab(rt: Runtime) -> int:
    pane_id: int = rt.ok("tab.new", {"window_id": 1})["pane_id"]
    rt.run(pane_id, "true")
    return pane_id


def type_line(rt: Runtime, pane_id: int, text: str) -> None:
    rt.ok("pane.prompt", {"window_id": 1, "pane_id": pane_id, "text": text, "submit": True})


def hooked(rt: Runtime, name: str) -> dict[str, Any]:
    """Wait until the agent's own `start` hook has arrived (session_id set)."""
    row: dict[str, Any] = wait_for(
        lambda: (r := rt.ok("agent.get", {"agent": name}))["session_id"] and r, 15, "start hook"
    )
    return row


def agent_in(rt: Runtime, pane_id: int) -> dict[str, Any] | None:
    for row in agents(rt):
        if row["window_id"] == 1 and row["pane_id"] == pane_id:
            return row
    return None


def session_in(rt: Runtime, pane_id: int) -> str | None:
    """The session id the agent in this pane reported with its `start` hook, if any."""
    row = agent_in(rt, pane_id)
    return None if row is None else row.get("session_id")


def is_running(rt: Runtime, pane_id: int) -> bool:
    return bool(rt.pane(pane_id)["task_state"] == "running")


def agent_read_has(rt: Runtime, name: str, needle: str) -> bool:
    return needle in rt.ok("agent.read", {"agent": name})["text"]


# --- recognition -------------------------------------------------------------------------


def test_review_recognises_bash_python_node_fakes(tmp_path: Path) -> None:
    with review_runtime(tmp_path) as rt:
        cases = {
            f"{REVIEW_FAKES}/claude": "claude",  # bash shebang script
            f"bash {REVIEW_FAKES}/claude": "claude",
            f"python3 {REVIEW_FAKES}/codex": "codex",
            f"python3 -u {REVIEW_FAKES}/codex": "codex",
            f"node {REVIEW_FAKES}/opencode": "opencode",
        }
        panes = {}
        for command, kind in cases.items():
            pane_id = new_tab(rt)
            type_line(rt, pane_id, command)
            panes[pane_id] = (command, kind)
        for pane_id, (command, kind) in panes.items():
            row = wait_for(partial(agent_in, rt, pane_id), 15, f"agent for {command}")
            assert row["kind"] == kind, (command, row)
            wait_for(partial(session_in, rt, pane_id), 10, "hook session")


def test_review_negatives_are_never_agents(tmp_path: Path) -> None:
    work = tmp_path / "neg"
    work.mkdir()
    (work / "Makefile").write_text("all:\n\tsleep 30\n")
    (work / "codex.py").write_text("x = 1\n")
    (work / "claude.md").write_text("# notes\n")
    # helper.py and the `sleep 30`s below are programs that must stay running during the check
    (work / "helper.py").write_text("import time\ntime.sleep(30)\n")
    commands = [
        "sleep 30",
        "make",
        "less codex.py",
        "vi codex.py",
        "cat claude.md -",
        "grep claude",
        "python3 helper.py codex",
        "node -e 'setTimeout(()=>{},30000)' claude",
        "bash -c 'sleep 30' claude",
    ]
    with review_runtime(tmp_path) as rt:
        panes = []
        for command in commands:
            pane_id = new_tab(rt)
            type_line(rt, pane_id, f"cd {work} && {command}")
            panes.append(pane_id)
        for pane_id in panes:
            wait_for(partial(is_running, rt, pane_id), 10, "running")
        assert_never(
            partial(agents, rt),
            2.5,
            "recognition looks every 50-500 ms: a wrongly recognised agent shows within 2.5 s",
            interval_s=0.1,
        )
        for pane_id in panes:
            assert "agent" not in rt.pane(pane_id)


def test_review_exec_agent_replacing_shell_is_recognised(tmp_path: Path) -> None:
    """DISCREPANCY (low): `exec claude` (the agent replaces the shell) is never an agent."""
    with review_runtime(tmp_path) as rt:
        pane_id = new_tab(rt)
        type_line(rt, pane_id, "exec claude")
        rt.wait_text(pane_id, "Review Claude stand-in")
        wait_for(lambda: agent_in(rt, pane_id), 8, "exec'd claude recognised")


# --- named agents -------------------------------------------------------------------------


def test_review_start_send_wait_prints_final_message(tmp_path: Path) -> None:
    """DISCREPANCY (high): `agent start` then at once `agent send --wait` with a bash fake that
    calls `hook start` first thing: under load the start hook lands after the prompt's running
    edge and ends the wait with state idle, last_message null (same cause as the slow test)."""
    with review_runtime(tmp_path) as rt:
        started = rt.cli("agent", "start", "alpha", "--kind", "claude")
        assert started.code == 0, started
        assert started.json["result"]["generation"] == 1
        sent = rt.cli("agent", "send", "alpha", "hello world", "--wait")
        assert sent.code == 0, sent
        assert sent.json["result"]["state"] == "completed"
        assert "RVDONE[hello world]" in sent.stdout


def test_review_send_wait_after_slow_agent_start(tmp_path: Path) -> None:
    """DISCREPANCY: agent.start answers 'ready' on process evidence alone, before the CLI's own
    `start` hook; that late `start` hook (-> idle) then ends the next `send --wait` early with
    state idle and no final message. A real CLI (and any fake that loads for >~0.2 s) does this."""
    with review_runtime(tmp_path, RV_START_DELAY_S="1.5") as rt:
        started = rt.cli("agent", "start", "slow", "--kind", "claude")
        assert started.code == 0, started
        sent = rt.cli("agent", "send", "slow", "quick", "--wait")
        assert sent.code == 0, sent
        assert sent.json["result"]["state"] == "completed", sent.stdout
        assert "RVDONE[quick]" in sent.stdout


def test_review_attention_via_hook(tmp_path: Path) -> None:
    with review_runtime(tmp_path) as rt:
        rt.cli("agent", "start", "att", "--kind", "claude", check=True)
        hooked(rt, "att")
        sent = rt.cli("agent", "send", "att", "approve", "--wait")
        assert sent.json["result"]["state"] == "attention", sent.stdout
        row = rt.ok("agent.get", {"agent": "att"})
        assert (row["state"], row["state_source"]) == ("attention", "hook")
        answered = rt.cli("agent", "send", "att", "1", "--wait")
        assert "RVDONE[approve]" in answered.stdout


def test_review_screen_rule_attention_then_answer(tmp_path: Path) -> None:
    """The no-hook fake prints Claude's approval question: screen rule -> attention.
    DISCREPANCY (second half): once answered, the question stays on the visible screen, so the
    rule keeps the agent in `attention` for ever, though the agent has moved on."""
    with review_runtime(tmp_path, RV_MODE="none") as rt:
        pane_id = new_tab(rt)
        type_line(rt, pane_id, "claude")
        wait_for(lambda: agent_in(rt, pane_id), 10, "screen-only claude recognised")
        rt.wait_text(pane_id, "mode none")
        type_line(rt, pane_id, "approve")
        row = wait_for(
            lambda: (r := agent_in(rt, pane_id)) and r["state"] == "attention" and r, 10, "attn"
        )
        assert row["state_source"] == "screen" and row["state_rule"], row
        # the fake reads its answer only after drawing the question: wait for its last line
        rt.wait_text(pane_id, " 2. No")
        type_line(rt, pane_id, "1")
        rt.wait_text(pane_id, "RVDONE[approve]")

        def attention() -> str | None:
            """What is wrong while the agent is in attention (or gone: that fails too)."""
            row = agent_in(rt, pane_id)
            if row is None:
                return "the agent is gone"
            return f"in attention: {row}" if row["state"] == "attention" else None

        wait_for(lambda: attention() is None, 10, "the answered agent out of attention")
        assert_never(
            attention,
            3,
            "the question stays on the screen: a rule still matching it re-reports attention "
            "within an evaluation (0.1 s), and a re-check of the agent within 0.5 s",
            interval_s=0.1,
        )


def test_review_restart_new_generation_old_refused(tmp_path: Path) -> None:
    with review_runtime(tmp_path) as rt:
        first = rt.cli("agent", "start", "gen", "--kind", "claude", check=True).json["result"]
        pane_id = first["pane_id"]
        hooked(rt, "gen")
        rt.cli("agent", "send", "gen", "exit", check=True)
        wait_for(lambda: rt.ok("agent.get", {"agent": "gen"})["status"] == "exited", 10, "exit")
        exited = rt.cli("agent", "send", "gen", "ghost-exited", "--generation", "1")
        assert exited.code == 1 and exited.json["error"]["code"] == "agent_exited", exited
        type_line(rt, pane_id, "claude")
        wait_for(
            lambda: rt.ok("agent.get", {"agent": "gen"})["generation"] == 2, 15, "generation 2"
        )
        old = rt.cli("agent", "send", "gen", "ghost-old", "--generation", "1")
        assert old.code == 1 and old.json["error"]["code"] == "agent_replaced", old
        old_wait = rt.cli("agent", "wait", "gen", "--generation", "1", "--timeout-ms", "2000")
        assert old_wait.json["error"]["code"] == "agent_replaced", old_wait
        assert_never(
            lambda: "ghost" in rt.read_text(pane_id),
            1,
            "a refused send never reaches the new session; one let through is typed at once",
            interval_s=0.05,
        )
        new = rt.cli("agent", "send", "gen", "fresh", "--generation", "2", "--wait")
        assert "RVDONE[fresh]" in new.stdout, new


def test_review_start_errors(tmp_path: Path) -> None:
    with review_runtime(tmp_path) as rt:
        rt.cli("agent", "start", "dup", "--kind", "codex", check=True)
        hooked(rt, "dup")
        before = settled(rt)
        conflict = rt.cli("agent", "start", "dup", "--kind", "claude")
        assert conflict.json["error"]["code"] == "agent_name_conflict"
        unknown = rt.cli("agent", "start", "x1", "--kind", "gemini")
        assert unknown.json["error"]["code"] == "invalid_params"
        resume = rt.cli("agent", "start", "x2", "--kind", "opencode", "--resume", "abc")
        assert resume.json["error"]["code"] == "invalid_params"
        assert pane_count(rt) == before


def test_review_name_free_again_after_ready_timeout(tmp_path: Path) -> None:
    """DISCREPANCY (medium): after agent_ready_timeout (the CLI never appeared) the name stays
    reserved as a 'starting' agent, so retrying with the same name is agent_name_conflict."""
    with review_runtime(tmp_path) as rt:
        timed = rt.cli("agent", "start", "k1", "--kind", "kimi", "--ready-timeout-ms", "2000")
        assert timed.code == 1 and timed.json["error"]["code"] == "agent_ready_timeout", timed
        again = rt.cli("agent", "start", "k1", "--kind", "claude")
        assert again.code == 0, again.stdout


def test_review_hook_is_silent_and_exits_zero(tmp_path: Path) -> None:
    with review_runtime(tmp_path) as rt:
        variants: list[tuple[list[str], dict[str, str]]] = [
            (["hook", "stop", "--kind", "claude"], {}),
            (["hook", "bogus", "--kind", "claude"], {}),
            (["hook", "stop", "--kind", "nope"], {}),
            (["hook"], {}),
            (
                ["hook", "stop", "--kind", "claude"],
                {"PEBREL_WINDOW_ID": "1", "PEBREL_PANE_ID": "99"},
            ),
            (
                ["hook", "stop", "--kind", "claude"],
                {"PEBREL_WINDOW_ID": "x", "PEBREL_PANE_ID": "1"},
            ),
            (
                ["hook", "stop", "--kind", "claude"],
                {"PEBREL_DATA_DIR": str(tmp_path / "none"), "PEBREL_PANE_ID": "1"},
            ),
        ]
        for args, extra in variants:
            proc = subprocess.run(
                [PEBREL, *args],
                env={**rt.env, **extra},
                capture_output=True,
                timeout=10,
                input=b"{garbage",
            )
            assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b""), (args, proc)
        # a stdin pipe that never closes must not hold the hook
        with subprocess.Popen(["sleep", "20"], stdout=subprocess.PIPE) as holder:
            t0 = time.monotonic()
            proc = subprocess.run(
                [PEBREL, "hook", "stop", "--kind", "claude"],
                env={**rt.env, "PEBREL_WINDOW_ID": "1", "PEBREL_PANE_ID": "1"},
                stdin=holder.stdout,
                capture_output=True,
                timeout=10,
            )
            assert proc.returncode == 0 and time.monotonic() - t0 < 3
            holder.kill()
        printed = rt.cli("agent", "hooks", "install", "--kind", "claude", "--print")
        assert printed.code == 0 and "hook stop --kind claude" in printed.stdout
        assert not (Path(rt.env["HOME"]) / ".claude").exists()


# --- fork ---------------------------------------------------------------------------------


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=r@e", "-c", "user.name=r", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_review_fork_errors_and_provenance(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "f").write_text("a\n")
    git(repo, "add", "f")
    git(repo, "commit", "-q", "-m", "f")
    with review_runtime(tmp_path) as rt:
        ok = rt.ok("agent.fork", {"source_cwd": str(repo), "name": "Fork-A", "kind": "claude"})
        wt = ok["worktree"]
        assert wt["path"] == str(tmp_path / "repo-worktrees" / "fork-a")
        assert wt["branch"] == "pebrel/fork-a" and wt["created"] is True
        assert rt.ok("agent.get", {"agent": "Fork-A"})["worktree"] == wt
        hooked(rt, "Fork-A")
        settled(rt)

        def state() -> tuple[Any, ...]:
            return (
                *pane_count(rt),
                git(repo, "branch", "--list"),
                git(repo, "worktree", "list"),
                sorted(os.listdir(tmp_path / "repo-worktrees")),
            )

        before = state()
        cases = [
            ({"branch": "pebrel/fork-a"}, "branch_conflict"),
            ({"path": wt["path"]}, "worktree_path_conflict"),
            ({"base": "nosuch"}, "invalid_base"),
            ({"branch": "bad..name"}, "invalid_branch"),
            ({"kind": "gemini"}, "invalid_params"),
            ({"name": "Fork-A"}, "agent_name_conflict"),
        ]
        for extra, code in cases:
            params = {"source_cwd": str(repo), "name": "Fork-X", "kind": "claude", **extra}
            assert rt.error("agent.fork", params)["code"] == code, extra
        notgit = tmp_path / "plain"
        notgit.mkdir()
        assert (
            rt.error("agent.fork", {"source_cwd": str(notgit), "name": "Fork-Y", "kind": "claude"})[
                "code"
            ]
            == "git_unavailable"
        )
        (repo / "untracked").write_text("x")
        assert (
            rt.error("agent.fork", {"source_cwd": str(repo), "name": "Fork-Z", "kind": "claude"})[
                "code"
            ]
            == "dirty_source"
        )
        assert state() == before
        dirty = rt.ok(
            "agent.fork",
            {
                "source_cwd": str(repo),
                "name": "Fork-Z",
                "kind": "claude",
                "allow_dirty_source": True,
            },
        )
        assert not (Path(dirty["worktree"]["path"]) / "untracked").exists()


# --- delegate -----------------------------------------------------------------------------


def test_review_delegate_to_line_reading_origin(tmp_path: Path) -> None:
    """DISCREPANCY (high): delivery back to the origin only uses bracketed paste; an origin CLI
    that reads plain lines (never enables mode 2004) never gets the worker's answer: the
    delegation stays 'delivering' and is retried for up to an hour."""
    log = tmp_path / "origin.log"
    with review_runtime(tmp_path, RV_LOG=str(log)) as rt:
        origin = rt.cli("agent", "start", "orig", "--kind", "claude", check=True).json["result"]
        rt.cli("agent", "start", "worker", "--kind", "codex", check=True)
        hooked(rt, "orig")
        hooked(rt, "worker")
        out = rt.cli(
            "agent",
            "delegate",
            "worker",
            "count the tests",
            PEBREL_WINDOW_ID="1",
            PEBREL_PANE_ID=str(origin["pane_id"]),
        )
        assert out.code == 0, out
        wait_for(
            lambda: log.exists() and "CODEXDONE[count the tests]" in log.read_text(),
            12,
            "worker output at the origin",
        )


def test_review_delegate_exactly_once_wrapped(tmp_path: Path) -> None:
    log = tmp_path / "origin.log"
    with review_runtime(tmp_path, RV_LOG=str(log), RV_BRACKETED="1", RV_WORK_S="1.5") as rt:
        rt.cli("agent", "start", "orig", "--kind", "claude", check=True)
        worker = rt.cli("agent", "start", "worker", "--kind", "codex", check=True).json["result"]
        hooked(rt, "orig")
        hooked(rt, "worker")
        # the origin delegates from inside its own pane, then runs its own turn (running origin)
        rt.cli("agent", "send", "orig", "delegate count the tests", "--wait", check=True)
        text = wait_for(
            lambda: log.exists() and "</worker_output>" in log.read_text() and log.read_text(),
            15,
            "delivery",
        )
        assert '<worker_output agent="worker"' in text and 'untrusted="true"' in text
        assert "CODEXDONE[count the tests]" in text
        # a duplicate completion event never delivers again
        subprocess.run(
            [PEBREL, "hook", "stop", "--kind", "codex", '{"last-assistant-message":"DUP"}'],
            env={**rt.env, "PEBREL_WINDOW_ID": "1", "PEBREL_PANE_ID": str(worker["pane_id"])},
            stdin=subprocess.DEVNULL,
            check=True,
        )
        assert_never(
            lambda: (text := log.read_text()).count("<worker_output") != 1 or "DUP" in text,
            2.5,
            "a second delivery of the duplicate completion would reach the origin within 2.5 s",
            interval_s=0.05,
        )
        bad = rt.cli("agent", "delegate", "worker", "x", PEBREL_WINDOW_ID="1", PEBREL_PANE_ID="1")
        assert bad.json["error"]["code"] == "origin_not_agent"


# --- orchestrate --------------------------------------------------------------------------


def test_review_orchestrate_spec_workflow(tmp_path: Path) -> None:
    with review_runtime(tmp_path) as rt:
        wf = tmp_path / "wf.json"
        wf.write_text(json.dumps(SPEC_WORKFLOW, ensure_ascii=False))
        out = rt.cli("ctl", "orchestrate", "--file", str(wf))
        assert out.code == 0, out
        receipt = out.json["result"]
        assert receipt["ok"] and receipt["failed_step"] is None and not receipt["partial"]
        layout = rt.snapshot()["windows"][0]["tabs"][0]["layout"]
        assert layout["split"] == "right" and layout["second"]["split"] == "down"
        for name, needle in (("weather", "RVDONE[查询"), ("formula", "CODEXDONE[输出")):
            wait_for(
                partial(agent_read_has, rt, name, needle), 15, f"{name} answered its initial prompt"
            )


BAD_WORKFLOWS: list[dict[str, Any]] = [
    {"steps": [{"id": "a", "op": "split", "direction": "right"}, {"id": "b", "op": "explode"}]},
    {
        "steps": [
            {"id": "a", "op": "split", "direction": "right"},
            {"id": "a", "op": "split", "direction": "down"},
        ]
    },
    {
        "steps": [
            {
                "id": "a",
                "op": "split",
                "direction": "right",
                "target": {"step": "b", "field": "pane_id"},
            },
            {"id": "b", "op": "split", "direction": "down"},
        ]
    },
    {
        "steps": [
            {"id": "a", "op": "split", "direction": "right"},
            {"id": "b", "op": "split", "direction": "down", "target": {"step": "a"}},
        ]
    },
    {"steps": [{"id": "a", "op": "split", "direction": "right", "color": "red"}]},
    {
        "steps": [
            {"id": "a", "op": "split", "direction": "right"},
            {
                "id": "w",
                "op": "agent_launch",
                "target": {"step": "a", "field": "pane_id"},
                "name": "x",
                "kind": "gemini",
            },
        ]
    },
]


def test_review_orchestrate_invalid_changes_nothing(tmp_path: Path) -> None:
    with review_runtime(tmp_path) as rt:
        before = pane_count(rt)
        for wf in BAD_WORKFLOWS:
            err = rt.error("runtime.orchestrate", wf)
            assert err["code"] in ("invalid_params", "invalid_reference"), (wf, err)
            assert pane_count(rt) == before, wf


def test_review_orchestrate_prompt_with_newline_rejected_up_front(tmp_path: Path) -> None:
    """DISCREPANCY (medium-low): a `prompt` step whose text pane.prompt refuses as
    invalid_params (a newline) passes validation; the split before it really happens."""
    with review_runtime(tmp_path) as rt:
        before = pane_count(rt)
        wf = {
            "steps": [
                {"id": "a", "op": "split", "direction": "right"},
                {
                    "id": "b",
                    "op": "prompt",
                    "target": {"step": "a", "field": "pane_id"},
                    "text": "a\nb",
                },
            ]
        }
        envelope = rt.call("runtime.orchestrate", wf)
        assert not envelope["ok"], json.dumps(envelope)[:400]
        assert pane_count(rt) == before


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(pytest.main([__file__, "-v"]))
