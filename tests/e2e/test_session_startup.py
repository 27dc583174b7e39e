"""Startup input conditions: a launch's first delivery waits for its screen (I4.4, #18).

The fake `claude` of tests/fakes (a stand-in, not Claude Code) is told to report itself
ready at once, then show `Loading model...` for a while and drop every byte typed meanwhile
(FAKE_AGENT_LOADING_MS), as some real TUIs do. A line typed while it loads is lost; with a
condition the first delivery waits until the visible screen matches, seen twice stableMs
apart, and arrives exactly once.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pebrel.integration_wire import token_hash
from tests.collab_fixtures import collab, received
from tests.conftest import Runtime, assert_never, wait_for
from tests.session_fixtures import (
    Launcher,
    group,
    launcher_runtime,
    profile,
    session_env,
    wrapper,
)

pytestmark = pytest.mark.timeout(180)

LOADING_MS = 3000
#: What the fake shows once it has loaded, and only then.
LOADED = {"allOf": ["? for shortcuts", ">"], "noneOf": ["Loading model"], "stableMs": 500}


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    with launcher_runtime(session_env(tmp_path)) as started:
        yield started


class Setup:
    """A group, principal `launcher` with the given profiles, and its connection."""

    def __init__(self, rt: Runtime, tmp_path: Path, profiles: list[dict[str, Any]]) -> None:
        self.rt = rt
        self.root = tmp_path / "work"
        self.root.mkdir(exist_ok=True)
        self.group_id = group(rt)
        self.policy = {
            "id": "launcher",
            "groupId": self.group_id,
            "permissions": ["session.create", "session.read", "session.restore", "task.create"],
            "launchProfiles": profiles,
        }
        token = secrets.token_urlsafe(32)
        rt.ok(
            "collab.integration.create", {"policy": self.policy, "token_sha256": token_hash(token)}
        )
        self.link = Launcher(rt, "launcher", token)

    def assign(self, session_id: str, content: str) -> str:
        """A task for the session, created by the user; its message id."""
        made = collab(
            self.rt, "task", "create", "--group", self.group_id, "--title", "t",
            "--content", content, "--assignee", session_id,
        )  # fmt: skip
        return str(made["message_id"])

    def receipt(self, message_id: str) -> dict[str, Any]:
        found: dict[str, Any] = collab(self.rt, "message", "get", message_id)["message"]["receipt"]
        return found


def loading_wrapper(tmp_path: Path, name: str, inbox: Path, extra: str = "") -> Path:
    env = f"FAKE_AGENT_LOADING_MS={LOADING_MS} FAKE_AGENT_RECEIVED_LOG={inbox} {extra}"
    return wrapper(tmp_path, name, tmp_path / f"{name}.argv", env=env)


def test_input_typed_while_loading_is_lost_without_the_condition_and_kept_with_it(
    rt: Runtime, tmp_path: Path
) -> None:
    plain_inbox, gated_inbox = tmp_path / "plain.log", tmp_path / "gated.log"
    setup = Setup(
        rt,
        tmp_path,
        [
            profile("plain", loading_wrapper(tmp_path, "plain", plain_inbox), [tmp_path]),
            profile(
                "gated",
                loading_wrapper(tmp_path, "gated", gated_inbox),
                [tmp_path],
                startupInput=LOADED,
            ),
        ],
    )
    try:
        caps = setup.link.ok("capabilities", {})
        assert caps["features"]["startup_input_conditions"] is True
        assert {
            p["id"]: p["startup_input_condition"] for p in caps["principal"]["launch_profiles"]
        } == {
            "plain": False,
            "gated": True,
        }
        # What the condition guards against: the agent says it is ready (its start hook), yet
        # a line typed while it loads is dropped.
        plain = setup.link.create("plain", setup.root, "plain-1")
        assert plain["startup_input"] is None
        bound = setup.link.until(plain["session_id"], "ready")["terminal_binding"]
        where = {"window_id": bound["window_id"], "pane_id": bound["pane_id"]}
        rt.wait_text(bound["pane_id"], "Loading model", window_id=bound["window_id"])
        rt.ok("pane.prompt", {**where, "text": "MARK-PLAIN", "submit": True})
        rt.wait_text(bound["pane_id"], "? for shortcuts", window_id=bound["window_id"])
        assert received(plain_inbox) == []  # typed while it loaded: dropped

        # With one: it waits for the loaded screen, then arrives exactly once.
        gated = setup.link.create("gated", setup.root, "gated-1")
        assert gated["startup_input"]["state"] == "pending"
        assert gated["startup_input"]["deadline"] >= gated["created_at"] + 120_000
        setup.link.until(gated["session_id"], "ready")
        kept = setup.assign(gated["session_id"], "MARK-GATED")
        wait_for(
            lambda: setup.receipt(kept).get("waiting_reason") == "SESSION_STARTUP_INPUT_PENDING",
            20,
            "the delivery waiting for the screen",
        )
        wait_for(lambda: received(gated_inbox), 30, "the task typed after loading")
        assert [r["text"] for r in received(gated_inbox)] == [received(gated_inbox)[0]["text"]]
        assert "MARK-GATED" in received(gated_inbox)[0]["text"]
        state = setup.link.get(gated["session_id"])["startup_input"]
        assert state["state"] == "observed" and state["observed_at"] - state["matched_since"] >= 500
        events = collab(rt, "events", "list", "--group", setup.group_id)["events"]
        startup = [e for e in events if e["kind"] == "session.startup_input"]
        assert [e["payload"]["session"]["startup_input"]["state"] for e in startup] == ["observed"]
        # Later deliveries of this launch go as usual.
        again = setup.assign(gated["session_id"], "MARK-AGAIN")
        wait_for(lambda: setup.receipt(again)["stage"] == "delivered", 30, "the second task")
    finally:
        setup.link.close()


def test_a_session_without_its_native_id_yet_takes_input_once_the_screen_matches(
    rt: Runtime, tmp_path: Path
) -> None:
    """`binding_pending` does not hold back a first input whose screen condition holds; the
    CLI makes its native id with that first prompt, and the session turns ready."""
    inbox = tmp_path / "late.log"
    late = loading_wrapper(tmp_path, "late", inbox, "FAKE_AGENT_SESSION_AFTER_PROMPT=1")
    setup = Setup(rt, tmp_path, [profile("late", late, [tmp_path], startupInput=LOADED)])
    try:
        made = setup.link.create("late", setup.root, "late-1")
        setup.link.until(made["session_id"], "binding_pending")
        message = setup.assign(made["session_id"], "MARK-FIRST")
        wait_for(lambda: received(inbox), 30, "the first input")
        assert len(received(inbox)) == 1 and setup.receipt(message)["stage"] == "delivered"
        assert setup.link.until(made["session_id"], "ready")["native_session_id"]
    finally:
        setup.link.close()


def test_a_timed_out_condition_never_writes_and_a_later_match_releases(
    rt: Runtime, tmp_path: Path
) -> None:
    """SESSION_STARTUP_INPUT_TIMEOUT: past timeoutMs nothing is typed; the delivery keeps
    looking, and a screen that matches later (twice, stableMs apart) releases it."""
    inbox = tmp_path / "slow.log"
    slow = wrapper(tmp_path, "slow", tmp_path / "slow.argv", env=f"FAKE_AGENT_RECEIVED_LOG={inbox}")
    condition = {"allOf": ["MARK-LATER"], "stableMs": 500, "timeoutMs": 1000}
    setup = Setup(rt, tmp_path, [profile("slow", slow, [tmp_path], startupInput=condition)])
    try:
        made = setup.link.create("slow", setup.root, "slow-1")
        ready = setup.link.until(made["session_id"], "ready")
        message = setup.assign(made["session_id"], "MARK-WAITING")
        wait_for(
            lambda: setup.receipt(message).get("waiting_reason") == "SESSION_STARTUP_INPUT_TIMEOUT",
            20,
            "the condition timed out",
        )
        assert setup.link.get(made["session_id"])["startup_input"]["state"] == "timed_out"
        assert_never(
            lambda: received(inbox), 2, "a blind write would come at the next look, 0.2 s apart"
        )
        # Something puts the awaited text on the screen: it is seen twice, then typed.
        pid = wait_for(
            lambda: setup.link.get(made["session_id"])["terminal_binding"]["agent_pid"], 10, "pid"
        )
        with open(f"/proc/{pid}/fd/1", "w", encoding="utf-8") as tty:
            tty.write("\r\nMARK-LATER\r\n")
        wait_for(lambda: received(inbox), 30, "the input once the screen matched")
        assert len(received(inbox)) == 1
        assert setup.link.get(made["session_id"])["startup_input"]["state"] == "observed"
        assert ready["native_session_id"]
    finally:
        setup.link.close()


def test_a_policy_update_adds_the_condition_at_the_next_real_restore(
    rt: Runtime, tmp_path: Path
) -> None:
    """I4.4: `integration update` leaves existing sessions alone (a restore of a running one
    changes nothing); the next restore that types a command waits for the new condition."""
    inbox = tmp_path / "upd.log"
    upd = wrapper(tmp_path, "upd", tmp_path / "upd.argv", env=f"FAKE_AGENT_RECEIVED_LOG={inbox}")
    setup = Setup(rt, tmp_path, [profile("upd", upd, [tmp_path])])
    try:
        made = setup.link.create("upd", setup.root, "upd-1")
        ready = setup.link.until(made["session_id"], "ready")
        policy = {
            **setup.policy,
            "launchProfiles": [profile("upd", upd, [tmp_path], startupInput=LOADED)],
        }
        rt.ok("collab.integration.update", {"policy": policy})
        assert setup.link.get(made["session_id"])["startup_input"] is None
        same = setup.link.ok(
            "session.restore", {"session": made["session_id"], "idempotency_key": "r-0"}
        )
        assert same["session"]["startup_input"] is None  # running exactly: untouched
        bound = ready["terminal_binding"]
        rt.ok(
            "pane.prompt",
            {
                "window_id": bound["window_id"],
                "pane_id": bound["pane_id"],
                "text": "/exit",
                "submit": True,
            },
        )
        wait_for(lambda: not setup.link.get(made["session_id"])["online"], 20, "the agent gone")
        restored = setup.link.ok(
            "session.restore", {"session": made["session_id"], "idempotency_key": "r-1"}
        )
        assert restored["session"]["startup_input"]["state"] == "pending"
        setup.link.until(made["session_id"], "ready")
        message = setup.assign(made["session_id"], "MARK-RESTORED")
        wait_for(lambda: setup.receipt(message)["stage"] == "delivered", 30, "delivered")
        assert setup.link.get(made["session_id"])["startup_input"]["state"] == "observed"
        typed = [r["text"] for r in received(inbox) if r["text"] != "/exit"]
        assert len(typed) == 1 and "MARK-RESTORED" in typed[0]
    finally:
        setup.link.close()


def test_a_restore_into_its_own_pane_waits_for_its_own_screen(rt: Runtime, tmp_path: Path) -> None:
    """The reused pane is cleared before the resume command: what the previous launch left on
    the screen (here the very text the condition waits for) cannot satisfy the new launch's
    condition while the resumed CLI still loads."""
    inbox = tmp_path / "again.log"
    again = loading_wrapper(tmp_path, "again", inbox)
    hint_only = {"allOf": ["? for shortcuts"], "stableMs": 500}
    setup = Setup(rt, tmp_path, [profile("again", again, [tmp_path], startupInput=hint_only)])
    try:
        made = setup.link.create("again", setup.root, "again-1")
        ready = setup.link.until(made["session_id"], "ready")
        first = setup.assign(made["session_id"], "MARK-ONE")
        wait_for(lambda: setup.receipt(first)["stage"] == "delivered", 30, "the first task")
        bound = ready["terminal_binding"]
        where = {"window_id": bound["window_id"], "pane_id": bound["pane_id"]}
        # Its turn ends (the stop hook) before anything else is typed: a line typed while the
        # runtime still confirms the delivered input would be refused (input_in_progress).
        wait_for(
            lambda: rt.pane(bound["pane_id"], bound["window_id"])["task_state"] == "completed",
            20,
            "the first turn done",
        )
        rt.ok("pane.prompt", {**where, "text": "/exit", "submit": True})
        wait_for(lambda: not setup.link.get(made["session_id"])["online"], 20, "the agent gone")
        assert "? for shortcuts" in rt.read_text(bound["pane_id"], bound["window_id"])
        setup.link.ok("session.restore", {"session": made["session_id"], "idempotency_key": "r-1"})
        second = setup.assign(made["session_id"], "MARK-TWO")
        wait_for(lambda: setup.receipt(second)["stage"] == "delivered", 30, "the second task")
        typed = [r["text"] for r in received(inbox) if r["text"] != "/exit"]
        assert len(typed) == 2 and "MARK-TWO" in typed[1]  # typed after loading, not lost
    finally:
        setup.link.close()
