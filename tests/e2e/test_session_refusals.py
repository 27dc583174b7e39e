"""Every refusal and failure of sessions from launch profiles, provoked (I4.2-I4.3, #18).

Against a real runtime whose panes run the fake `claude` of tests/fakes (a stand-in, not Claude
Code): each create refusal leaves no session and no new window; each restore refusal leaves
the session as it was. Failures found after the launch (a foreign native id, one that does
not look like an id, no agent by the deadline) turn the session `failed` with their code.
Launches cut short by a killed collab service are never typed twice.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agent_fixtures import FAKES_DIR
from tests.collab_fixtures import collab, serving
from tests.conftest import Runtime, inject_env, wait_for
from tests.session_fixtures import (
    Launcher,
    add_launcher,
    group,
    launcher_runtime,
    logged,
    profile,
    session_env,
    windows,
    wrapper,
)

pytestmark = pytest.mark.timeout(240)

FAKE_CLAUDE = shlex.quote(str(FAKES_DIR / "claude"))
OTHER_ID = "11111111-2222-3333-4444-555555555555"


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    env = session_env(tmp_path)
    env.update(inject_env("collab_dies_after_launch", "session_launch_line_fails"))
    with launcher_runtime(env) as started:
        yield started


class World:
    """A group, its launcher principal with one profile per behaviour, and a connection."""

    def __init__(self, rt: Runtime, tmp_path: Path) -> None:
        self.rt = rt
        self.root = tmp_path / "work"
        (self.root / "repo").mkdir(parents=True)
        self.outside = tmp_path / "outside"
        self.outside.mkdir()
        self.log = tmp_path / "argv.log"
        ok = wrapper(tmp_path, "claude-ok", self.log)
        late = wrapper(tmp_path, "claude-late", self.log, env="FAKE_AGENT_SESSION_AFTER_PROMPT=1")
        mute = wrapper(tmp_path, "claude-mute", self.log, body="exec sleep 300")
        liar = wrapper(
            tmp_path,
            "claude-liar",
            self.log,
            body=f"exec python3 {FAKE_CLAUDE} --session-id {OTHER_ID}",
        )
        bad = wrapper(tmp_path, "claude-bad", self.log, env="FAKE_AGENT_SESSION=.not-an-id")
        plain = tmp_path / "not-executable"
        plain.write_text("#!/bin/sh\n", encoding="utf-8")
        roots = [self.root]
        self.group_id = group(rt)
        profiles = [
            profile("ok", ok, roots),
            profile("late", late, roots),
            profile("mute", mute, roots),
            profile("liar", liar, roots, argv=["--session-id", "{sessionId}"]),
            profile("bad", bad, roots),
            profile("gone", tmp_path / "missing", roots),
            profile("plain", plain, roots),
            profile(
                "codex",
                ok,
                roots,
                agentSlug="codex",
                resumeArgv=["resume", "{sessionId}", "{launchArgs}"],
            ),
        ]
        self.token = add_launcher(rt, self.group_id, profiles)
        self.link = Launcher(rt, "launcher", self.token)
        self.keys = 0

    def reconnect(self) -> None:
        self.link.close()
        self.link = Launcher(self.rt, "launcher", self.token)

    def key(self) -> str:
        self.keys += 1
        return f"key-{self.keys}"

    def create_params(self, profile_id: str, cwd: Path | str) -> dict[str, Any]:
        return {"launch_profile": profile_id, "cwd": str(cwd), "idempotency_key": self.key()}

    def sessions(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = collab(self.rt, "session", "list")["sessions"]
        return found

    def refused_create(self, code: str, profile_id: str, cwd: Path | str) -> dict[str, Any]:
        """A refused create: no session and no window appeared."""
        before_sessions, before_windows = self.sessions(), set(windows(self.rt))
        answer = self.link.refused(code, "session.create", self.create_params(profile_id, cwd))
        assert self.sessions() == before_sessions
        assert set(windows(self.rt)) == before_windows
        return answer

    def refused_restore(self, code: str, session_id: str) -> dict[str, Any]:
        """A refused restore: the session is as it was."""
        before = self.link.get(session_id)
        params = {"session": session_id, "idempotency_key": self.key()}
        answer = self.link.refused(code, "session.restore", params)
        after = self.link.get(session_id)
        assert {k: v for k, v in after.items() if k not in ("online", "offline_reason")} == {
            k: v for k, v in before.items() if k not in ("online", "offline_reason")
        }
        return answer

    def create(self, profile_id: str) -> dict[str, Any]:
        return self.link.create(profile_id, self.root / "repo", self.key())

    def type_in(self, session: dict[str, Any], text: str) -> None:
        bound = session["terminal_binding"]
        self.rt.ok(
            "pane.prompt",
            {
                "window_id": bound["window_id"],
                "pane_id": bound["pane_id"],
                "text": text,
                "submit": True,
            },
        )

    def pane_of(self, session: dict[str, Any]) -> dict[str, Any]:
        bound = session["terminal_binding"]
        (pane,) = [
            p for p in windows(self.rt)[bound["window_id"]] if p["pane_id"] == bound["pane_id"]
        ]
        return pane

    def exit_agent(self, session: dict[str, Any]) -> None:
        self.type_in(session, "/exit")
        wait_for(lambda: "agent" not in self.pane_of(session), 20, "the agent to exit")


@pytest.fixture
def world(rt: Runtime, tmp_path: Path) -> Iterator[World]:
    made = World(rt, tmp_path)
    try:
        yield made
    finally:
        made.link.close()


def test_create_refusals_leave_nothing_behind(world: World, tmp_path: Path) -> None:
    """I4.2: each launch rule, refused before anything is stored or typed."""
    repo = world.root / "repo"
    world.refused_create("LAUNCH_PROFILE_DENIED", "nope", repo)
    world.refused_create("SESSION_CWD_MISSING", "ok", world.root / "missing")
    world.refused_create("SESSION_CWD_DENIED", "ok", world.outside)
    (world.root / "link").symlink_to(world.outside)
    world.refused_create("SESSION_CWD_DENIED", "ok", world.root / "link")  # a symlink out
    world.refused_create("SESSION_CWD_DENIED", "ok", f"{world.root}/../outside")  # `..` out
    world.refused_create("INVALID_ARGUMENT", "ok", "repo")  # not absolute
    world.refused_create("INVALID_ARGUMENT", "ok", f"{repo}\x1b[2J")  # a control character
    gone = world.refused_create("LAUNCHER_UNAVAILABLE", "gone", repo)
    assert str(tmp_path) not in gone["error"] + str(gone["details"])  # the admin's path
    world.refused_create("LAUNCHER_UNAVAILABLE", "plain", repo)
    codex = world.refused_create("COLLAB_AGENT_UNAVAILABLE", "codex", repo)
    assert "pebrel agent hooks install --kind codex" in codex["error"]
    # Without session.create: refused whatever the profile.
    other = add_launcher(
        world.rt, world.group_id, [], principal_id="reader", permissions=["session.read"]
    )
    reader = Launcher(world.rt, "reader", other)
    try:
        answer = reader.refused(
            "INTEGRATION_PERMISSION_DENIED", "session.create", world.create_params("ok", repo)
        )
        assert answer["details"]["missing"] == ["session.create"]
    finally:
        reader.close()


def test_the_session_limit_counts_live_sessions(rt: Runtime, world: World) -> None:
    """INTEGRATION_SESSION_LIMIT: policy maxSessions counts sessions being launched and those
    whose agent still runs; a session whose agent exited frees its place until restored."""
    launcher = wrapper(world.root.parent, "claude-one", world.log)
    token = add_launcher(
        rt,
        world.group_id,
        [profile("ok", launcher, [world.root])],
        principal_id="one",
        maxSessions=1,
    )
    one = Launcher(rt, "one", token)
    try:
        first = one.create("ok", world.root / "repo", "one-1")
        second = {
            "launch_profile": "ok",
            "cwd": str(world.root / "repo"),
            "idempotency_key": "one-2",
        }
        answer = one.refused("INTEGRATION_SESSION_LIMIT", "session.create", second)
        assert answer["details"]["max_sessions"] == 1
        assert [s["session_id"] for s in world.sessions()] == [first["session_id"]]
        # Its agent exited: it holds no place until it is restored.
        ready = one.until(first["session_id"], "ready")
        world.exit_agent(ready)
        wait_for(lambda: not one.get(first["session_id"])["online"], 20, "offline")
        one.create("ok", world.root / "repo", "one-3")
        third = {"session": first["session_id"], "idempotency_key": "one-4"}
        assert one.refused("INTEGRATION_SESSION_LIMIT", "session.restore", third)
    finally:
        one.close()


def test_failures_after_the_launch_fail_the_session_with_their_code(world: World) -> None:
    """NATIVE_SESSION_ID_MISMATCH (not the id Pebrel gave), NATIVE_SESSION_ID_INVALID (not an
    id); an agent that reports no id yet stays binding_pending, and its restore is
    NATIVE_SESSION_ID_MISSING; one still starting refuses a restore as in progress."""
    liar = world.create("liar")
    failed = world.link.until(liar["session_id"], "failed")
    assert failed["error_code"] == "NATIVE_SESSION_ID_MISMATCH"
    assert failed["native_session_id"] is None  # the foreign id is never taken
    bad = world.create("bad")
    assert (
        world.link.until(bad["session_id"], "failed")["error_code"] == "NATIVE_SESSION_ID_INVALID"
    )

    late = world.create("late")
    pending = world.link.until(late["session_id"], "binding_pending")
    assert pending["native_session_id"] is None and pending["online"] is True
    world.refused_restore("NATIVE_SESSION_ID_MISSING", late["session_id"])
    world.type_in(pending, "hello")  # the fake makes its id with its first prompt
    assert world.link.until(late["session_id"], "ready")["native_session_id"]

    mute = world.create("mute")  # its process never shows as an agent
    assert world.link.get(mute["session_id"])["state"] == "starting"
    world.refused_restore("SESSION_OPERATION_IN_PROGRESS", mute["session_id"])


def test_restore_refuses_what_is_not_exactly_its_conversation(world: World) -> None:
    """NATIVE_SESSION_ID_MISMATCH (another conversation in its pane: the session fails, and
    its restore is refused while that runs), SESSION_TARGET_NOT_SHELL (a busy
    pane), NATIVE_SESSION_ALREADY_RUNNING (its id runs elsewhere), SESSION_IDENTITY_MISMATCH
    (its window was split), EXACT_RESUME_UNSUPPORTED (a registered session),
    INTEGRATION_SESSION_NOT_FOUND."""
    made = world.create("ok")
    ready = world.link.until(made["session_id"], "ready")
    native = ready["native_session_id"]
    world.exit_agent(ready)

    world.type_in(ready, f"{FAKE_CLAUDE} --session-id {OTHER_ID}")
    failed = world.link.until(made["session_id"], "failed")  # not the conversation it names
    assert failed["error_code"] == "NATIVE_SESSION_ID_MISMATCH"
    assert failed["native_session_id"] == native
    assert world.pane_of(ready)["agent"]["session_id"] == OTHER_ID
    world.refused_restore("NATIVE_SESSION_ID_MISMATCH", made["session_id"])
    world.exit_agent(ready)

    world.type_in(ready, "sleep 300")
    wait_for(lambda: world.pane_of(ready)["task_state"] == "running", 20, "the pane busy")
    world.refused_restore("SESSION_TARGET_NOT_SHELL", made["session_id"])
    bound = ready["terminal_binding"]
    world.rt.ok(
        "pane.send_key",
        {
            "window_id": bound["window_id"],
            "pane_id": bound["pane_id"],
            "key": "c",
            "modifiers": {"control": True},
        },
    )
    wait_for(lambda: world.pane_of(ready)["task_state"] != "running", 20, "the pane idle")

    world.rt.ok(
        "pane.prompt",
        {"window_id": 1, "pane_id": 1, "text": f"{FAKE_CLAUDE} --resume {native}", "submit": True},
    )
    wait_for(
        lambda: windows(world.rt)[1][0].get("agent", {}).get("session_id") == native,
        20,
        "elsewhere",
    )
    answer = world.refused_restore("NATIVE_SESSION_ALREADY_RUNNING", made["session_id"])
    assert (answer["details"]["window_id"], answer["details"]["pane_id"]) == (1, 1)
    world.rt.ok("pane.prompt", {"window_id": 1, "pane_id": 1, "text": "/exit", "submit": True})
    wait_for(lambda: "agent" not in windows(world.rt)[1][0], 20, "the other agent to exit")

    world.rt.ok(
        "pane.split",
        {"window_id": bound["window_id"], "pane_id": bound["pane_id"], "direction": "left_right"},
    )
    # The runtime refuses to type into a pane that is no longer alone: nothing was typed, and
    # the session is put back as it was (still restorable once the window is its own again);
    # only its operation_id names the refused attempt.
    before = world.link.get(made["session_id"])
    params = {"session": made["session_id"], "idempotency_key": world.key()}
    answer = world.link.refused("SESSION_IDENTITY_MISMATCH", "session.restore", params)
    assert answer["details"]["session_id"] == made["session_id"]
    after = world.link.get(made["session_id"])
    kept = ("state", "error_code", "native_session_id", "terminal_binding", "startup_input")
    assert {k: after[k] for k in kept} == {k: before[k] for k in kept}
    assert after["native_session_id"] == native

    world.rt.ok(
        "agent.start", {"name": "registered", "kind": "claude", "window_id": 1, "pane_id": 1}
    )
    registered = collab(
        world.rt, "session", "register", "--agent", "registered", "--group", world.group_id
    )
    world.refused_restore("EXACT_RESUME_UNSUPPORTED", registered["session"]["session_id"])
    world.link.refused(
        "INTEGRATION_SESSION_NOT_FOUND",
        "session.restore",
        {"session": "ses_00000000000000000000", "idempotency_key": world.key()},
    )


def test_a_launch_the_runtime_could_not_type_fails_the_session(rt: Runtime, world: World) -> None:
    """SESSION_LAUNCH_FAILED: the runtime refused for another reason than the identity checks
    (here its write of the line failed); the window it opened is closed again."""
    flag = rt.data_dir / "launch-line-fails"
    flag.touch()
    before = set(windows(rt))
    answer = world.link.refused(
        "SESSION_LAUNCH_FAILED", "session.create", world.create_params("ok", world.root / "repo")
    )
    flag.unlink()
    session_id = answer["details"]["session_id"]
    failed = world.link.get(session_id)
    assert (failed["state"], failed["error_code"]) == ("failed", "SESSION_LAUNCH_FAILED")
    assert set(windows(rt)) == before and logged(world.log) == []


def test_a_service_killed_mid_launch_never_types_it_twice(rt: Runtime, world: World) -> None:
    """SESSION_CREATE_OUTCOME_UNKNOWN: the create's launch was typed, its outcome never
    written; the restarted service fails it and types nothing more. A restore cut short the
    same way is `launch_state unknown`: SESSION_OPERATION_IN_PROGRESS until `session get`
    looked (its id running: ready; nothing running: AGENT_NOT_RUNNING)."""
    flag = rt.data_dir / "collab-die-after-launch"
    flag.touch()
    done = rt.cli(
        "collab",
        "session",
        "create",
        "--launch-profile",
        "ok",
        "--cwd",
        str(world.root / "repo"),
        "--group",
        world.group_id,
    )
    assert done.code != 0, done
    wait_for(lambda: serving(rt), 30, "the collab service back")
    world.reconnect()
    (lost,) = [s for s in world.sessions() if s["launch_profile"] == "ok"]
    assert (lost["state"], lost["error_code"]) == ("failed", "SESSION_CREATE_OUTCOME_UNKNOWN")
    wait_for(lambda: len(logged(world.log)) == 1, 10, "the one launch")
    assert len(logged(world.log)) == 1

    made = world.create("ok")
    ready = world.link.until(made["session_id"], "ready")
    native = ready["native_session_id"]
    for outcome in ("ready", "failed"):
        world.exit_agent(ready)
        flag.touch()
        params = {"session": made["session_id"], "idempotency_key": world.key()}
        world.link.line.send({"id": "cut", "method": "session.restore", "params": params})
        assert world.link.line.closed(30)  # the service died before it answered
        wait_for(lambda: serving(rt), 30, "the collab service back")
        world.reconnect()
        wait_for(
            lambda: world.pane_of(ready).get("agent", {}).get("session_id") == native,
            20,
            "the resumed agent",
        )
        if outcome == "failed":  # what the restore started is gone before anyone looked
            world.exit_agent(ready)
        stored = collab(world.rt, "session", "list")["sessions"]
        (row,) = [s for s in stored if s["session_id"] == made["session_id"]]
        assert row["state"] == "restoring"
        params = {"session": made["session_id"], "idempotency_key": world.key()}
        world.link.refused("SESSION_OPERATION_IN_PROGRESS", "session.restore", params)
        settled = world.link.get(made["session_id"])
        if outcome == "ready":
            assert (
                settled["state"] == "ready"
                and settled["native_session_id"] == ready["native_session_id"]
            )
        else:
            assert (settled["state"], settled["error_code"]) == ("failed", "AGENT_NOT_RUNNING")


def test_an_agent_never_seen_fails_at_the_deadline(tmp_path: Path) -> None:
    """SESSION_BINDING_TIMEOUT (120 s; 4 s here through tests/inject/short_session_timeouts.py)."""
    env = session_env(tmp_path)
    env.update(inject_env("short_session_timeouts"))
    with launcher_runtime(env) as rt:
        world = World(rt, tmp_path)
        try:
            mute = world.create("mute")
            failed = world.link.until(mute["session_id"], "failed", timeout_s=30)
            assert failed["error_code"] == "SESSION_BINDING_TIMEOUT"
            events = collab(rt, "events", "list", "--group", world.group_id)["events"]
            assert [e["kind"] for e in events if e["kind"].startswith("session.")] == [
                "session.starting",
                "session.failed",
            ]
        finally:
            world.link.close()


def test_a_cwd_that_became_a_symlink_is_refused_at_restore(world: World) -> None:
    """SESSION_CWD_DENIED at restore: the session's directory was its real path inside the
    roots at create; replaced by a symbolic link (which could lead anywhere), it is refused."""
    (world.root / "moved").mkdir()
    made = world.link.create("ok", world.root / "moved", world.key())
    ready = world.link.until(made["session_id"], "ready")
    bound = ready["terminal_binding"]
    world.rt.ok("window.close", {"window_id": bound["window_id"], "confirm": True})
    wait_for(lambda: not world.link.get(made["session_id"])["online"], 20, "offline")
    (world.root / "moved").rename(world.root / "moved.bak")
    (world.root / "moved").symlink_to(world.outside)
    world.refused_restore("SESSION_CWD_DENIED", made["session_id"])
