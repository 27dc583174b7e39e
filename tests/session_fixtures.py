"""Helpers for tests of sessions from launch profiles (I4.2-I4.3, #18).

A runtime whose HOME has Pebrel's Claude Code hooks installed (so a launched `claude` can
report its native session id) and whose panes find the fake AI CLIs of tests/fakes: stand-ins,
not real agents. `wrapper` writes a launcher script that logs the argv it was given and runs
the fake `claude` with it, as an administrator's wrapper would.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pebrel.integration_wire import token_hash
from tests.agent_fixtures import FAKES_DIR, fake_agents_env
from tests.conftest import Runtime, started_runtime, wait_for
from tests.integration_fixtures import Line, group, listening, signed_in

SESSION_RIGHTS = ["session.create", "session.read", "session.restore", "events.read"]
#: Claude Code's shape: its own session id at launch, `--resume ID` to resume (stand-in).
CLAUDE_ARGV = ["--model", "sonnet"]
CLAUDE_RESUME = ["--resume", "{sessionId}", "{launchArgs}"]


def session_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return fake_agents_env(tmp_path, **extra)


def install_hooks(rt: Runtime) -> None:
    done = rt.cli("agent", "hooks", "install", "--kind", "claude")
    assert done.code == 0, done


def wrapper(directory: Path, name: str, log: Path, env: str = "", body: str = "") -> Path:
    """An executable that appends its argv (one JSON line) to ``log``, then runs the fake
    `claude` with it (``env``: assignments before it; ``body``: replaces the run)."""
    path = directory / name
    run = body or f'{env} exec python3 {shlex.quote(str(FAKES_DIR / "claude"))} "$@"'
    record = "python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' \"$@\""
    path.write_text(
        f"#!/bin/bash\n{record} >> {shlex.quote(str(log))}\n{run}\n",
        encoding="utf-8",
    )
    path.chmod(0o755)
    return path


def profile(
    profile_id: str, executable: Path, roots: list[Path], **override: Any
) -> dict[str, Any]:
    return {
        "id": profile_id,
        "agentSlug": "claude",
        "executable": str(executable),
        "argv": CLAUDE_ARGV,
        "cwdRoots": [str(root) for root in roots],
        "resumeArgv": CLAUDE_RESUME,
        **override,
    }


def add_launcher(
    rt: Runtime,
    group_id: str,
    profiles: list[dict[str, Any]],
    principal_id: str = "launcher",
    permissions: list[str] | None = None,
    **policy: Any,
) -> str:
    """A principal holding ``profiles``; its token."""
    token = secrets.token_urlsafe(32)
    body = {
        "id": principal_id,
        "groupId": group_id,
        "permissions": SESSION_RIGHTS if permissions is None else permissions,
        "launchProfiles": profiles,
        **policy,
    }
    rt.ok("collab.integration.create", {"policy": body, "token_sha256": token_hash(token)})
    return token


class Launcher:
    """A principal's connection to the integration socket, with numbered requests."""

    def __init__(self, rt: Runtime, principal_id: str, token: str) -> None:
        self.rt = rt
        self.line = signed_in(rt, principal_id, token)
        self.next_id = 0

    def close(self) -> None:
        self.line.close()

    def call(self, method: str, params: dict[str, Any], timeout_s: float = 60) -> dict[str, Any]:
        self.next_id += 1
        self.line.send({"id": self.next_id, "method": method, "params": params})
        answer = self.line.read(timeout_s)
        assert answer.get("id") == self.next_id, answer
        return answer

    def ok(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        answer = self.call(method, params)
        assert answer["ok"] is True, answer
        result: dict[str, Any] = answer["result"]
        return result

    def refused(self, code: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        answer = self.call(method, params)
        assert answer["ok"] is False and answer["code"] == code, answer
        return answer

    def create(self, profile_id: str, cwd: Path, key: str) -> dict[str, Any]:
        params = {"launch_profile": profile_id, "cwd": str(cwd), "idempotency_key": key}
        session: dict[str, Any] = self.ok("session.create", params)["session"]
        return session

    def get(self, session_id: str) -> dict[str, Any]:
        session: dict[str, Any] = self.ok("session.get", {"session": session_id})["session"]
        return session

    def until(self, session_id: str, state: str, timeout_s: float = 30) -> dict[str, Any]:
        """The session's record once it is in ``state`` (failing fast on `failed`)."""

        def reached() -> dict[str, Any] | None:
            found = self.get(session_id)
            if found["state"] == "failed" and state != "failed":
                raise AssertionError(f"session failed: {found}")
            return found if found["state"] == state else None

        found: dict[str, Any] = wait_for(reached, timeout_s, f"{session_id} {state}")
        return found


@contextlib.contextmanager
def launcher_runtime(env: dict[str, str]) -> Iterator[Runtime]:
    """A started runtime with the Claude hooks installed in its HOME."""
    with started_runtime(env) as rt:
        install_hooks(rt)
        listening(rt)
        yield rt


def logged(log: Path) -> list[list[str]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def windows(rt: Runtime) -> dict[int, list[dict[str, Any]]]:
    """Each window's panes (all tabs)."""
    out: dict[int, list[dict[str, Any]]] = {}
    for window in rt.snapshot()["windows"]:
        out[window["window_id"]] = [p for tab in window["tabs"] for p in tab["panes"]]
    return out


__all__ = ["Line", "group"]
