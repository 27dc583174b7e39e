"""A pane worker's table of router commands (workers/commands.py) and the frontend adapter's
table of router messages (router/adapter.py): no command or message is left unhandled."""

from __future__ import annotations

from pebrel import messages as m
from pebrel.messages import commands
from pebrel.router.adapter import Frontend
from pebrel.workers.commands import COMMANDS


def test_every_router_command_has_a_worker_handler() -> None:
    assert set(COMMANDS) == {*commands.MESSAGES, m.RunExec}


def test_the_adapter_handles_every_message_the_router_sends_it() -> None:
    sent_by_router = {
        m.RequestAnswered,
        m.AnswersStale,
        m.AnswersRenewed,
        m.SnapshotChanged,
        m.ScreensChanged,
        m.StopFrontend,
    }
    assert set(Frontend(-1, "token", "0").from_router) == sent_by_router
