"""Git work for agent.fork (R9.5): checks, branch + worktree creation, and exact rollback.

Every git call is blocking, so it runs in a thread (`loop.run_in_executor`), never on the
router's loop. Calls use `git -C <dir>`, `GIT_TERMINAL_PROMPT=0` (never wait on a credential
prompt) and a deadline. Git takes lock files in the common git dir, so the whole
check-and-create sequence (and a rollback) holds one asyncio.Lock per repository root
(TRAPS "Git"). A rollback removes only what its own transaction created: the worktree it
added, the branch it created, and the parent directories that did not exist before; never an
existing branch, directory or another worktree.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import subprocess
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from pebrel import proctree
from pebrel.errors import ErrorCode, PebrelError

logger = logging.getLogger(__name__)

GIT_TIMEOUT_S = 20.0
BRANCH_PREFIX = "pebrel/"
_LOCKS: dict[str, asyncio.Lock] = {}


@dataclass(slots=True)
class Worktree:
    """One fork's checkout, and what its transaction created (for an exact rollback)."""

    repo_root: str
    source_root: str
    path: str
    branch: str
    base_commit: str
    branch_created: bool = False
    path_created: bool = False
    parents_created: list[str] = field(default_factory=list)

    def provenance(self) -> dict[str, Any]:
        return {
            "repo_root": self.repo_root,
            "source_root": self.source_root,
            "path": self.path,
            "branch": self.branch,
            "base_commit": self.base_commit,
            "created": self.path_created,
        }


def slug(name: str) -> str:
    """The agent-slug: the name lowercased, anything outside [a-z0-9._-] replaced by '-'."""
    return re.sub(r"[^a-z0-9._-]", "-", name.lower())


def git(cwd: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run `git -C cwd args...` with a deadline; missing git -> git_unavailable."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    argv = ["git", "-C", cwd, *args]
    try:
        # Registered as the router's own child: the orphan reaper must not kill it.
        done = proctree.run_owned(argv, GIT_TIMEOUT_S, env)
    except FileNotFoundError as exc:
        raise PebrelError(ErrorCode.GIT_UNAVAILABLE, "git is not installed", {}) from exc
    except subprocess.TimeoutExpired as exc:
        raise PebrelError(
            ErrorCode.ACTION_FAILED,
            f"git {args[0]} did not finish within {GIT_TIMEOUT_S:.0f} s",
            {"git": list(args), "timed_out": True},
        ) from exc
    if check and done.returncode != 0:
        raise PebrelError(
            ErrorCode.ACTION_FAILED,
            f"git {args[0]} failed: {done.stderr.strip()[:500]}",
            {"git": list(args), "exit_code": done.returncode},
        )
    return done


def repo_root(path: str) -> tuple[str, str]:
    """(main repository root, root of the worktree that holds `path`); git_unavailable if none."""
    if not os.path.isdir(path):
        raise PebrelError(
            ErrorCode.GIT_UNAVAILABLE, f"{path!r} is not a directory", {"source_cwd": path}
        )
    done = git(
        path,
        "rev-parse",
        "--show-toplevel",
        "--path-format=absolute",
        "--git-common-dir",
        check=False,
    )
    lines = done.stdout.splitlines() if done.returncode == 0 else []
    if done.returncode != 0 or len(lines) != 2:
        raise PebrelError(
            ErrorCode.GIT_UNAVAILABLE,
            f"{path!r} is not inside a git work tree",
            {"source_cwd": path, "git": done.stderr.strip()[:500]},
        )
    source_root, common = lines
    common = os.path.normpath(common)
    main = os.path.dirname(common) if os.path.basename(common) == ".git" else source_root
    return main, source_root


def check_clean(source_root: str) -> None:
    changes = git(source_root, "status", "--porcelain").stdout.splitlines()
    if changes:
        raise PebrelError(
            ErrorCode.DIRTY_SOURCE,
            f"{source_root} has {len(changes)} uncommitted change(s); "
            "commit them or pass allow_dirty_source: true",
            {"source_root": source_root, "changes": len(changes), "sample": changes[:10]},
        )


def resolve_base(source_root: str, base: str) -> str:
    done = (
        git(source_root, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}", check=False)
        if base and not base.startswith("-")
        else None
    )
    if done is None or done.returncode != 0 or not done.stdout.strip():
        raise PebrelError(
            ErrorCode.INVALID_BASE, f"{base!r} does not name a commit", {"base": base}
        )
    return done.stdout.strip()


def check_branch(root: str, branch: str) -> None:
    done = (
        git(root, "check-ref-format", "--branch", branch, check=False)
        if branch and not branch.startswith("-")
        else None
    )
    if done is None or done.returncode != 0 or done.stdout.strip() != branch:
        raise PebrelError(
            ErrorCode.INVALID_BRANCH, f"{branch!r} is not a valid branch name", {"branch": branch}
        )
    exists = git(root, "show-ref", "--verify", "--quiet", f"refs/heads/{branch}", check=False)
    if exists.returncode == 0:
        raise PebrelError(
            ErrorCode.BRANCH_CONFLICT, f"branch {branch!r} already exists", {"branch": branch}
        )


def check_path(root: str, path: str) -> None:
    registered = git(root, "worktree", "list", "--porcelain").stdout.splitlines()
    known = {os.path.realpath(line[9:]) for line in registered if line.startswith("worktree ")}
    if os.path.lexists(path) or os.path.realpath(path) in known:
        raise PebrelError(
            ErrorCode.WORKTREE_PATH_CONFLICT,
            f"{path} already exists; a fork never reuses a directory",
            {"path": path},
        )


def missing_parents(path: str) -> list[str]:
    """Ancestors of `path` that do not exist yet, deepest first."""
    found: list[str] = []
    parent = os.path.dirname(path)
    while parent and not os.path.lexists(parent) and parent != os.path.dirname(parent):
        found.append(parent)
        parent = os.path.dirname(parent)
    return found


def prepare_and_add(
    repo: str,
    source_root: str,
    name: str,
    branch: str | None,
    base: str | None,
    path: str | None,
    allow_dirty: bool,
) -> Worktree:
    """All checks, then `git worktree add -b`; on a failed add, undo only what it made."""
    if not allow_dirty:
        check_clean(source_root)
    base_commit = resolve_base(source_root, base or "HEAD")
    branch = branch if branch is not None else BRANCH_PREFIX + slug(name)
    check_branch(repo, branch)
    if path is None:
        path = os.path.join(
            os.path.dirname(repo), f"{os.path.basename(repo)}-worktrees", slug(name)
        )
    path = os.path.normpath(path)
    check_path(repo, path)
    wt = Worktree(repo, source_root, path, branch, base_commit)
    wt.parents_created = missing_parents(path)
    added = git(repo, "worktree", "add", "-b", branch, path, base_commit, check=False)
    wt.branch_created = branch_commit(repo, branch) == base_commit
    wt.path_created = os.path.isdir(path)
    if added.returncode != 0:
        undo(wt)
        raise PebrelError(
            ErrorCode.ACTION_FAILED,
            f"git worktree add failed: {added.stderr.strip()[:500]}",
            {"branch": branch, "path": path, "exit_code": added.returncode},
        )
    logger.info("worktree %s created on %s at %s", path, branch, base_commit)
    return wt


def branch_commit(root: str, branch: str) -> str | None:
    done = git(root, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def undo(wt: Worktree) -> dict[str, bool]:
    """Remove what this transaction created, and nothing else; report what was removed."""
    report = {"worktree_removed": False, "branch_deleted": False}
    if wt.path_created:
        done = git(wt.repo_root, "worktree", "remove", "--force", wt.path, check=False)
        report["worktree_removed"] = done.returncode == 0
        if done.returncode != 0:
            logger.warning("rollback: git worktree remove %s: %s", wt.path, done.stderr.strip())
    for parent in wt.parents_created:
        with contextlib.suppress(OSError):
            os.rmdir(parent)  # only when still empty
    if wt.branch_created:
        done = git(wt.repo_root, "branch", "-D", wt.branch, check=False)
        report["branch_deleted"] = done.returncode == 0
        if done.returncode != 0:
            logger.warning("rollback: git branch -D %s: %s", wt.branch, done.stderr.strip())
    wt.path_created = wt.branch_created = False
    return report


def _lock(repo: str) -> asyncio.Lock:
    return _LOCKS.setdefault(repo, asyncio.Lock())


async def create(
    source_cwd: str,
    name: str,
    branch: str | None,
    base: str | None,
    path: str | None,
    allow_dirty: bool,
) -> Worktree:
    """Check and create the fork's branch and worktree, serialised per repository."""
    loop = asyncio.get_running_loop()
    repo, source_root = await loop.run_in_executor(None, repo_root, source_cwd)
    async with _lock(repo):
        job = partial(prepare_and_add, repo, source_root, name, branch, base, path, allow_dirty)
        return await loop.run_in_executor(None, job)


async def rollback(wt: Worktree) -> dict[str, bool]:
    loop = asyncio.get_running_loop()
    async with _lock(wt.repo_root):
        return await loop.run_in_executor(None, undo, wt)
