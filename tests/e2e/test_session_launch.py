"""Sessions from launch profiles: create, bind, exact restore (I4.2-I4.3, #18).

Driven as an outside system would: a principal on the integration socket (and the local user
through `pebrel collab`), against a real runtime whose panes run the fake `claude` of
tests/fakes (a stand-in: no real Claude Code or Codex runs here) behind a wrapper script
that logs the argv it was given.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.collab_fixtures import collab, received
from tests.conftest import Runtime, wait_for
from tests.e2e.test_schema import problems
from tests.integration_fixtures import listening
from tests.session_fixtures import (
    CLAUDE_ARGV,
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

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    with launcher_runtime(session_env(tmp_path)) as started:
        yield started


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    (root / "repo").mkdir(parents=True)
    return root


def journal_kinds(rt: Runtime, group_id: str, session_id: str) -> list[str]:
    events = collab(rt, "events", "list", "--group", group_id)["events"]
    return [
        e["kind"]
        for e in events
        if e["kind"].startswith("session.") and e["payload"]["session"]["session_id"] == session_id
    ]


def test_create_binds_the_agent_and_restore_resumes_exactly_that_conversation(
    rt: Runtime, tmp_path: Path, work: Path
) -> None:
    """I4.2/I4.3: a new single-pane window in the real cwd, starting -> ready with the native
    id the agent reported; the launch command never leaves the service; a repeat returns the
    same session; restore of the running session changes nothing; after the agent exits,
    restore types the resume template (original argv, cwd, wrapper) into its own pane; after
    the window is closed, into a new one."""
    log = tmp_path / "argv.log"
    launcher = wrapper(tmp_path, "claude-wrapper", log)
    group_id = group(rt)
    token = add_launcher(rt, group_id, [profile("claude", launcher, [work])])
    link = Launcher(rt, "launcher", token)
    try:
        before = set(windows(rt))
        started = link.create("claude", work / "repo" / ".." / "repo", "create-1")
        assert started["state"] in ("starting", "binding_pending", "ready"), started
        assert started["cwd"] == str((work / "repo").resolve())
        assert started["launch_profile"] == "claude" and started["principal_id"] == "launcher"
        assert started["agent_slug"] == "claude" and started["operation_id"]
        session_id = started["session_id"]
        ready = link.until(session_id, "ready")
        native = ready["native_session_id"]
        assert native and ready["agent_native_session_id"] == native
        bound = ready["terminal_binding"]
        (new_window,) = set(windows(rt)) - before
        assert bound["window_id"] == new_window and len(windows(rt)[new_window]) == 1
        pane = windows(rt)[new_window][0]
        assert bound["pane_id"] == pane["pane_id"] and bound["shell_pid"] == pane["pid"]
        assert pane["cwd"] == str((work / "repo").resolve())
        assert pane["agent"]["session_id"] == native and pane["agent"]["name"] == session_id
        wait_for(lambda: link.get(session_id)["terminal_binding"]["agent_pid"], 10, "agent pid")
        assert logged(log) == [CLAUDE_ARGV]
        # The launch snapshot is private: no executable or argv in records or events.
        events = collab(rt, "events", "list", "--group", group_id)
        assert str(launcher) not in json.dumps(events) + json.dumps(link.get(session_id))
        assert journal_kinds(rt, group_id, session_id)[0] == "session.starting"
        assert journal_kinds(rt, group_id, session_id)[-1] == "session.ready"

        # The same key and params: the session as it is now, not a second launch.
        again = link.create("claude", work / "repo" / ".." / "repo", "create-1")
        assert again["session_id"] == session_id and again["state"] == "ready"
        assert len(windows(rt)) == len(before) + 1 and len(logged(log)) == 1
        link.refused(
            "IDEMPOTENCY_CONFLICT",
            "session.create",
            {"launch_profile": "claude", "cwd": str(work / "repo"), "idempotency_key": "create-1"},
        )

        # Exactly running in its own pane: unchanged, nothing typed.
        same = link.ok("session.restore", {"session": session_id, "idempotency_key": "r-0"})
        assert same["session"]["operation_id"] == ready["operation_id"]
        assert len(logged(log)) == 1

        # The agent exits; restore resumes the same native id in the same pane.
        rt.ok(
            "pane.prompt",
            {"window_id": new_window, "pane_id": bound["pane_id"], "text": "/exit", "submit": True},
        )
        wait_for(lambda: "agent" not in windows(rt)[new_window][0], 20, "the agent to exit")
        # Something half-typed at the prompt never joins the resume command.
        rt.ok(
            "pane.prompt",
            {
                "window_id": new_window,
                "pane_id": bound["pane_id"],
                "text": "echo X; false && ",
                "submit": False,
            },
        )
        restored = link.ok("session.restore", {"session": session_id, "idempotency_key": "r-1"})
        assert restored["session"]["operation_id"] != ready["operation_id"]
        again_ready = link.until(session_id, "ready")
        assert again_ready["native_session_id"] == native
        assert again_ready["terminal_binding"]["window_id"] == new_window
        assert again_ready["terminal_binding"]["pane_id"] == bound["pane_id"]
        assert logged(log)[-1] == ["--resume", native, *CLAUDE_ARGV]

        # Its window closed: restore builds a new single-pane window in the original cwd.
        rt.ok("window.close", {"window_id": new_window, "confirm": True})
        wait_for(lambda: link.get(session_id)["online"] is False, 20, "the session offline")
        link.ok("session.restore", {"session": session_id, "idempotency_key": "r-2"})
        third = link.until(session_id, "ready")
        assert third["native_session_id"] == native
        assert third["terminal_binding"]["window_id"] not in (new_window, *before)
        assert windows(rt)[third["terminal_binding"]["window_id"]][0]["cwd"] == started["cwd"]
        assert logged(log)[-1] == ["--resume", native, *CLAUDE_ARGV]
        kinds = journal_kinds(rt, group_id, session_id)
        assert kinds.count("session.restoring") == 2 and kinds[-1] == "session.ready"
        # Each answer as the schema has it.
        for method, result in (
            ("collab.session.create", {"session": started}),
            ("collab.session.get", {"session": third}),
            ("collab.session.restore", restored),
        ):
            assert problems(result, f"#/methods/{method}/result") == []
    finally:
        link.close()


def test_the_local_user_creates_from_a_groups_profile(
    rt: Runtime, tmp_path: Path, work: Path
) -> None:
    """I4.2: `pebrel collab session create` as the user names the group whose identity holds
    the profile; without it, INVALID_ARGUMENT; an unknown profile, LAUNCH_PROFILE_DENIED. A
    task assigned to the launched session is typed into its agent once it is ready."""
    inbox = tmp_path / "received.log"
    launcher = wrapper(
        tmp_path, "claude-wrapper", tmp_path / "argv.log", env=f"FAKE_AGENT_RECEIVED_LOG={inbox}"
    )
    group_id = group(rt)
    add_launcher(rt, group_id, [profile("claude", launcher, [work])])
    done = rt.cli("collab", "session", "create", "--launch-profile", "claude", "--cwd", str(work))
    assert done.code == 1 and done.json["error"]["code"] == "INVALID_ARGUMENT", done
    done = rt.cli(
        "collab",
        "session",
        "create",
        "--launch-profile",
        "nope",
        "--cwd",
        str(work),
        "--group",
        group_id,
    )
    assert done.json["error"]["code"] == "LAUNCH_PROFILE_DENIED", done
    made = collab(
        rt,
        "session",
        "create",
        "--launch-profile",
        "claude",
        "--cwd",
        str(work),
        "--group",
        group_id,
    )["session"]
    assert made["principal_id"] == "launcher" and made["group_id"] == group_id

    def ready() -> dict[str, Any] | None:
        found: dict[str, Any] = collab(rt, "session", "get", made["session_id"])["session"]
        return found if found["state"] == "ready" else None

    wait_for(ready, 30, "the session ready")
    collab(
        rt,
        "task",
        "create",
        "--group",
        group_id,
        "--title",
        "t",
        "--content",
        "MARK-LAUNCHED",
        "--assignee",
        made["session_id"],
    )
    wait_for(lambda: received(inbox), 30, "the assignment typed")
    assert "MARK-LAUNCHED" in received(inbox)[0]["text"] and len(received(inbox)) == 1
    restored = collab(rt, "session", "restore", made["session_id"])["session"]
    assert restored["state"] == "ready"  # running exactly: unchanged
    assert os.path.samefile(restored["cwd"], work)


def test_restore_after_the_runtime_restarted(rt: Runtime, tmp_path: Path, work: Path) -> None:
    """I4.3: the runtime restarted (its panes are gone, the collab store kept): the session is
    offline with `runtime_restarted`, and restore resumes the same native id in a new
    single-pane window of the new runtime, with the original argv and cwd."""
    log = tmp_path / "argv.log"
    launcher = wrapper(tmp_path, "claude-wrapper", log)
    group_id = group(rt)
    token = add_launcher(rt, group_id, [profile("claude", launcher, [work])])
    link = Launcher(rt, "launcher", token)
    try:
        made = link.create("claude", work, "create-1")
        ready = link.until(made["session_id"], "ready")
    finally:
        link.close()
    assert rt.cli("runtime", "stop", timeout=60).code == 0
    assert rt.cli("runtime", "start", timeout=60).code == 0
    listening(rt)
    link = Launcher(rt, "launcher", token)
    try:
        wait_for(
            lambda: link.get(made["session_id"])["offline_reason"] == "runtime_restarted",
            20,
            "the session offline",
        )
        link.ok("session.restore", {"session": made["session_id"], "idempotency_key": "r-1"})
        again = link.until(made["session_id"], "ready")
        assert again["native_session_id"] == ready["native_session_id"]
        bound = again["terminal_binding"]
        assert bound["runtime_id"] != ready["terminal_binding"]["runtime_id"]
        assert len(windows(rt)[bound["window_id"]]) == 1
        assert logged(log)[-1] == ["--resume", ready["native_session_id"], *CLAUDE_ARGV]
        assert again["online"] is True
    finally:
        link.close()
