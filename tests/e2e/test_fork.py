"""agent.fork end to end: real git repositories in temp dirs and the fake AI CLIs (R9.5).

Each test builds its own repository (init, one commit, user.name/email set locally), forks a
fake agent (tests/fakes, a stand-in for a real CLI) out of it and checks git, the filesystem
and the process table, not just `ok: true`.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import psutil
import pytest
from jsonschema import Draft202012Validator

from pebrel.schema import SCHEMA_FILE
from tests.agent_fixtures import fake_agents_env, started_runtime
from tests.conftest import Runtime, at_prompt, inject_env, wait_for

pytestmark = pytest.mark.timeout(180)


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo.parent)}
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def make_repo(root: Path) -> Path:
    repo = root.resolve() / "src" / "proj"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Pebrel Test")
    git(repo, "config", "user.email", "test@pebrel.invalid")
    (repo / "README").write_text("hello\n")
    git(repo, "add", "README")
    git(repo, "commit", "-q", "-m", "first")
    return repo


def repo_state(repo: Path) -> dict[str, Any]:
    """Everything a failed fork must leave alone."""
    return {
        "branches": git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads"),
        "worktrees": git(repo, "worktree", "list", "--porcelain"),
        "head": git(repo, "rev-parse", "HEAD"),
        "beside": sorted(p.name for p in repo.parent.iterdir()),
        "status": git(repo, "status", "--porcelain"),
    }


@cache
def validator(ref: str) -> Draft202012Validator:
    doc = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return Draft202012Validator({**doc, "$ref": ref})


def assert_valid(instance: Any, ref: str) -> None:
    assert [e.message for e in validator(ref).iter_errors(instance)] == []


def pane_count(rt: Runtime) -> int:
    snap = rt.snapshot()
    return sum(len(t["panes"]) for w in snap["windows"] for t in w["tabs"])


def agent_process_cwd(rt: Runtime, pane_id: int) -> str:
    """The cwd of the fake agent process running under the pane's shell."""
    shell = psutil.Process(rt.pane(pane_id)["pid"])
    found = [p for p in shell.children(recursive=True) if "fakes" in " ".join(p.cmdline())]
    assert found, "no fake agent process under the pane's shell"
    return os.path.realpath(found[0].cwd())


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    with started_runtime(fake_agents_env(tmp_path)) as runtime:
        yield runtime


def test_fork_from_a_pane_with_defaults(rt: Runtime, tmp_path: Path) -> None:
    """R9.5: source_pane_id -> the pane's snapshot cwd; default branch and path; the agent runs
    inside the worktree; the response and agent.get carry the provenance; no task is sent."""
    repo = make_repo(tmp_path)
    at_prompt(rt)
    rt.run(1, f"cd {repo}")
    wait_for(lambda: rt.pane(1)["cwd"] == str(repo), 10, "the pane's cwd to be the repo")
    panes = pane_count(rt)
    head = git(repo, "rev-parse", "HEAD")

    forked = rt.ok(
        "agent.fork", {"window_id": 1, "source_pane_id": 1, "name": "Worker-A", "kind": "claude"}
    )
    assert_valid(forked, "#/methods/agent.fork/result")
    path = repo.parent / "proj-worktrees" / "worker-a"
    assert forked["worktree"] == {
        "repo_root": str(repo),
        "source_root": str(repo),
        "path": str(path),
        "branch": "pebrel/worker-a",
        "base_commit": head,
        "created": True,
    }
    assert (forked["name"], forked["kind"], forked["status"]) == ("Worker-A", "claude", "active")
    assert (path / "README").read_text() == "hello\n"
    assert git(repo, "rev-parse", "refs/heads/pebrel/worker-a") == head
    assert git(path, "rev-parse", "--abbrev-ref", "HEAD") == "pebrel/worker-a"
    assert pane_count(rt) == panes + 1
    assert forked["pane_id"] != 1
    assert agent_process_cwd(rt, forked["pane_id"]) == str(path)

    got = rt.ok("agent.get", {"agent": "Worker-A"})
    assert got["worktree"] == forked["worktree"]
    assert_valid(got, "#/methods/agent.get/result")
    # Fork never sends a task: the agent sits at its prompt with no turn taken.
    assert got["state"] != "running" and got["last_message"] is None
    assert "answer:" not in rt.read_text(forked["pane_id"])
    # A later agent.start in the same runtime has no worktree field.
    plain = rt.ok("agent.start", {"name": "plain", "kind": "codex"})
    assert "worktree" not in plain


def test_fork_from_source_cwd_with_branch_base_path_and_dirty_source(
    rt: Runtime, tmp_path: Path
) -> None:
    """R9.5: an absolute source_cwd (a subdirectory works), explicit branch/base/path, and
    allow_dirty_source skips the dirty check; the CLI verb drives the same method."""
    repo = make_repo(tmp_path)
    first = git(repo, "rev-parse", "HEAD")
    (repo / "sub").mkdir()
    (repo / "sub" / "file").write_text("x\n")
    git(repo, "add", "sub")
    git(repo, "commit", "-q", "-m", "second")
    (repo / "README").write_text("dirty\n")
    target = tmp_path.resolve() / "elsewhere" / "wt"
    refused = rt.error(
        "agent.fork", {"source_cwd": str(repo / "sub"), "name": "w2", "kind": "codex"}
    )
    assert refused["code"] == "dirty_source"

    result = rt.cli(
        "ctl", "agent-fork", "--window", "1", "--source-cwd", str(repo / "sub"),
        "--name", "w2", "--kind", "codex", "--branch", "feature/w2", "--base", "HEAD~1",
        "--path", str(target), "--allow-dirty-source",
    )  # fmt: skip
    assert result.code == 0, result.stdout
    forked = result.json["result"]
    assert forked["worktree"]["branch"] == "feature/w2"
    assert forked["worktree"]["base_commit"] == first
    assert forked["worktree"]["path"] == str(target)
    assert (target / "README").read_text() == "hello\n"  # the base, not the dirty file
    assert not (target / "sub").exists()
    assert (repo / "README").read_text() == "dirty\n"  # the source is untouched
    assert agent_process_cwd(rt, forked["pane_id"]) == str(target)
    usage = rt.cli("ctl", "agent-fork", "--name", "x", "--kind", "claude")
    assert usage.code == 2
    # A short ready timeout is agent_ready_timeout (not a dispatch timeout); the checkout stays.
    short = rt.error(
        "agent.fork",
        {"source_cwd": str(repo), "name": "w3", "kind": "pi", "ready_timeout_ms": 1,
         "allow_dirty_source": True},
    )  # fmt: skip
    assert short["code"] == "agent_ready_timeout", short
    assert Path(short["details"]["worktree"]["path"]).is_dir()


def test_refusals_change_nothing(rt: Runtime, tmp_path: Path) -> None:
    """R9.5: every check fails before anything exists: no branch, no directory, no tab, the
    same snapshot revision; existing branches and directories are never touched."""
    repo = make_repo(tmp_path)
    git(repo, "branch", "taken")
    occupied = repo.parent / "occupied"
    occupied.mkdir()
    (occupied / "keep").write_text("mine\n")
    not_repo = tmp_path.resolve() / "plain"
    not_repo.mkdir()
    at_prompt(rt)
    rt.ok("agent.start", {"name": "busy", "kind": "claude"})
    # Readiness may be seen from the process before the start hook lands; let it land.
    wait_for(
        lambda: rt.ok("agent.get", {"agent": "busy"})["state_source"] == "hook", 10, "the hook"
    )
    before, panes = repo_state(repo), pane_count(rt)
    revision = rt.snapshot()["revision"]
    src = {"source_cwd": str(repo), "kind": "claude"}
    cases: list[tuple[str, dict[str, Any]]] = [
        ("invalid_base", {**src, "name": "a", "base": "no-such-rev"}),
        ("invalid_base", {**src, "name": "a", "base": "-x"}),
        ("invalid_branch", {**src, "name": "a", "branch": "bad..name"}),
        ("invalid_branch", {**src, "name": "a", "branch": "-b"}),
        ("branch_conflict", {**src, "name": "a", "branch": "taken"}),
        ("branch_conflict", {**src, "name": "a", "branch": "main"}),
        ("worktree_path_conflict", {**src, "name": "a", "path": str(occupied)}),
        ("worktree_path_conflict", {**src, "name": "a", "path": str(repo)}),
        ("git_unavailable", {**src, "name": "a", "source_cwd": str(not_repo)}),
        ("agent_name_conflict", {**src, "name": "busy"}),
        ("invalid_params", {**src, "name": "a", "kind": "gpt"}),
        ("invalid_params", {"name": "a", "kind": "claude"}),
        ("invalid_params", {**src, "name": "a", "source_pane_id": 1}),
        ("invalid_params", {**src, "name": "a", "source_cwd": "relative/dir"}),
        ("invalid_params", {**src, "name": "a", "path": "relative/wt"}),
        ("invalid_params", {**src, "name": "a", "surprise": True}),
        ("target_not_found", {"source_pane_id": 42, "window_id": 1, "name": "a", "kind": "claude"}),
    ]
    for code, params in cases:
        error = rt.error("agent.fork", params)
        assert error["code"] == code, (params, error)
    (repo / "new-file").write_text("untracked\n")
    dirty = rt.error("agent.fork", {**src, "name": "a"})
    assert dirty["code"] == "dirty_source" and dirty["details"]["changes"] == 1
    (repo / "new-file").unlink()
    assert repo_state(repo) == before
    assert (occupied / "keep").read_text() == "mine\n"
    assert sorted(p.name for p in occupied.iterdir()) == ["keep"]
    assert pane_count(rt) == panes
    assert rt.snapshot()["revision"] == revision


def test_failure_after_creation_rolls_back_only_what_it_created(tmp_path: Path) -> None:
    """R9.5: the agent's start fails (its shell exits instead): the tab, the worktree, the
    branch and the `-worktrees` directory this fork created go; an existing branch and another
    worktree of the user stay."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("claude() { exit 7; }\n")
    repo = make_repo(tmp_path)
    git(repo, "branch", "keep-me")
    other = repo.parent / "proj-worktrees" / "mine"
    git(repo, "worktree", "add", "-q", "-b", "user-branch", str(other))
    with started_runtime(fake_agents_env(tmp_path)) as rt:
        at_prompt(rt)
        before, panes = repo_state(repo), pane_count(rt)
        error = rt.error(
            "agent.fork", {"source_cwd": str(repo), "name": "doomed", "kind": "claude"}
        )
        assert error["code"] == "action_failed", error
        assert error["details"]["rolled_back"] == {"worktree_removed": True, "branch_deleted": True}
        assert error["details"]["worktree"]["created"] is False
        assert repo_state(repo) == before
        assert not (repo.parent / "proj-worktrees" / "doomed").exists()
        assert (other / "README").exists()
        assert pane_count(rt) == panes
        got = rt.call("agent.get", {"agent": "doomed"})
        assert not got["ok"] or got["result"]["status"] == "exited", got


def test_dispatch_timeout_keeps_the_checkout(tmp_path: Path) -> None:
    """R9.5: the dispatch is never confirmed (tests/inject/fork_dispatch_hangs.py), so the
    answer is runtime_timeout with cleanup_deferred and the provenance; the checkout stays."""
    repo = make_repo(tmp_path)
    env = fake_agents_env(tmp_path, **inject_env("fork_dispatch_hangs"))
    with started_runtime(env) as rt:
        at_prompt(rt)
        error = rt.error("agent.fork", {"source_cwd": str(repo), "name": "late", "kind": "claude"})
        assert error["code"] == "runtime_timeout", error
        details = error["details"]
        assert details["cleanup_deferred"] is True
        worktree = details["worktree"]
        assert worktree["branch"] == "pebrel/late" and worktree["created"] is True
        assert (Path(worktree["path"]) / "README").exists()
        assert git(repo, "rev-parse", "refs/heads/pebrel/late") == worktree["base_commit"]


def test_agent_ready_timeout_keeps_the_checkout(tmp_path: Path) -> None:
    """R9.5: a readiness deadline too short for the agent (1 ms) gives agent_ready_timeout,
    and the checkout stays (the agent may be running in it) with its provenance."""
    repo = make_repo(tmp_path)
    env = fake_agents_env(tmp_path)
    with started_runtime(env) as rt:
        at_prompt(rt)
        params = {"source_cwd": str(repo), "name": "slow", "kind": "codex", "ready_timeout_ms": 1}
        error = rt.error("agent.fork", params)
        assert error["code"] == "agent_ready_timeout", error
        worktree = error["details"]["worktree"]
        assert error["details"]["cleanup_deferred"] is True
        path = Path(worktree["path"])
        assert (path / "README").exists()
        assert git(repo, "rev-parse", "refs/heads/pebrel/slow") == worktree["base_commit"]
        # The agent still comes up in its kept worktree, with the provenance on record.
        got = wait_for(
            lambda: (
                rt.ok("agent.get", {"agent": "slow"})["status"] == "active"
                and rt.ok("agent.get", {"agent": "slow"})
            ),
            20,
            "the agent to come up",
        )
        assert got["worktree"] == worktree
        assert agent_process_cwd(rt, got["pane_id"]) == str(path)
