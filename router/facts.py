"""What the router does with each message a pane worker sends: a reply goes to the request it
answers (one pending map, router/links.py); a fact changes its pane's state.

The router decides what the facts mean (STYLE: workers report, the router decides). Each fact
type has one function in one table: a worker's message costs a dict lookup on its type.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pebrel import messages as m
from pebrel.router import agents, links
from pebrel.router import program_status as status_view
from pebrel.router.runtime import Runtime
from pebrel.router.state import Pane

#: What a fact does to its pane; True: something a client sees changed (a new revision).
Apply = Callable[[Runtime, Pane, Any], bool]
#: The router's handling of one message from a pane worker (the ZeroMQ identity that sent it).
Handler = Callable[[Runtime, Any, bytes], None]

F = TypeVar("F", bound=m.PaneFact)


def replied(rt: Runtime, reply: m.Reply, identity: bytes) -> None:
    links.resolve(reply)


def input_replied(rt: Runtime, reply: m.InputWritten | m.PasteWritten, identity: bytes) -> None:
    """An input write's answer: until the worker publishes a screen with output that came
    after it (the echo, say), the pane's reads go to the worker, as a read right after a
    write did before screens were published (workers/publisher.py)."""
    link = links.link_of(reply.request_id)
    pane = rt.state.panes.get((link.window_id, link.pane_id)) if link is not None else None
    if pane is not None and reply.written > 0:
        pane.inputs_written += 1
        rt.drop_kept_reads(pane)
    links.resolve(reply)


def start_reported(rt: Runtime, fact: m.PaneStarted | m.PaneStartFailed, identity: bytes) -> None:
    """A new worker connected (its shell runs), or could not start its shell."""
    key = (fact.window_id, fact.pane_id)
    link = rt.links.get(key)
    starting = rt.starting.get(key)
    if isinstance(fact, m.PaneStarted) and starting is not None:
        starting.pid = fact.shell_pid
        starting.worker_pid = fact.worker_pid
        starting.integrated = fact.integrated
        starting.tracker.integrated = fact.integrated
    if link is not None and not link.started.done():
        if isinstance(fact, m.PaneStarted):
            link.identity = identity
            if not link.proc.pid:  # before the fork server's reply was handled
                link.proc.pid = fact.worker_pid
        link.started.set_result(fact)


def shell_marked(rt: Runtime, pane: Pane, fact: m.ShellMarked) -> bool:
    pane.tracker.mark(fact.mark, fact.exit_code)
    return True


def cwd_reported(rt: Runtime, pane: Pane, fact: m.CwdReported) -> bool:
    pane.cwd = fact.cwd
    return True


def title_changed(rt: Runtime, pane: Pane, fact: m.TitleChanged) -> bool:
    pane.title = fact.title
    return True


def foreground_changed(rt: Runtime, pane: Pane, fact: m.ForegroundChanged) -> bool:
    pane.tracker.foreground(fact.shell_in_foreground)
    pane.foreground_pgid = 0 if fact.shell_in_foreground else fact.foreground_pgid
    rt.agent_foreground(pane, fact.agent_kind, fact.program)
    return True


def program_status(rt: Runtime, pane: Pane, fact: m.ProgramStatus) -> bool:
    state = agents.task_state(fact.state)
    if state is not None or fact.state == "end":
        rt.agent_evidence(pane, state, "program", fact.kind, fact.session_id, None)
    return True


def program_records(rt: Runtime, pane: Pane, fact: m.ProgramRecords) -> bool:
    """What the foreground program reports of itself (OSC 7501, OSC 9;4; #20): the pane
    record's ``program_status``, and the task state it implies, applied when that changes
    (the worker resends the records when a progress or text changes: that moves no state).
    A recognised agent takes it as its own program evidence."""
    status = status_view.summary(fact.records, fact.progress)
    changed = status != pane.program_status
    pane.program_status = status
    state = status_view.task_state(status)
    if state == pane.program_mapped and not fact.left:
        return changed
    pane.program_mapped = state
    before = pane.tracker.program_state
    pane.tracker.set_program(state, left=fact.left)
    sticky = state == "idle" and before in ("completed", "failed")  # the result stands
    if state is not None and not sticky:  # kept briefly for an agent not recognised yet
        # A turn's last message is what a done or error report says (a working one's text is
        # progress, not an answer).
        final = status["msg"] if status and status["state"] in ("done", "error") else None
        rt.agent_evidence(pane, state, "program", None, None, final)
    return True


def screen_published(rt: Runtime, pane: Pane, fact: m.ScreenPublished) -> bool:
    """The worker's new screen replaces every read answer kept for the pane; it answers reads
    unless it is older than a resize the worker was told of (another size) or than the output
    after the pane's last input write."""
    pane.screen_reports = fact.reports
    pane.reads.clear()
    link = rt.links.get(pane.key)
    size = link.size if link is not None and link.size is not None else (pane.cols, pane.rows)
    pane.screen = fact
    pane.screen_current = (fact.cols, fact.rows) == size and fact.inputs >= pane.inputs_written
    for listener in rt.screen_listeners:
        listener(pane)
    return False  # nothing a client sees in the snapshot changed


def screen_pending(rt: Runtime, pane: Pane, fact: m.ScreenPending) -> bool:
    """A publication is on its way: reads go to the worker until it arrives, and an answer
    the worker made before it is not kept."""
    pane.screen_reports = max(pane.screen_reports, fact.reports)
    rt.drop_kept_reads(pane)
    return False


def screen_matched(rt: Runtime, pane: Pane, fact: m.ScreenMatched) -> bool:
    if agents.apply_screen(pane.agents, fact.rule_id, fact.state, time.monotonic()):
        rt.sync_agent_state(pane)
    return True


def pane_exited(rt: Runtime, pane: Pane, fact: m.PaneExited) -> bool:
    rt.mark_exited(pane, fact.exit_code, fact.reason)
    return True


def ssh_phase(rt: Runtime, pane: Pane, fact: m.SshPhase) -> bool:
    """An SSH pane's phase: a revision of its own; reads and writes follow it (R11.1)."""
    if pane.ssh is None:
        return False
    pane.ssh["phase"] = fact.phase
    if fact.error is not None:
        pane.ssh["error"] = fact.error
    else:
        pane.ssh.pop("error", None)
    rt.drop_kept_reads(pane)
    return True


def _about_pane(cls: type[F], apply: Callable[[Runtime, Pane, F], bool]) -> Handler:
    """The handler of a fact about a pane the router has, or is starting (else dropped);
    ``cls`` is the table's key, named here so that mypy checks ``apply`` takes that type."""

    def handle(rt: Runtime, fact: F, identity: bytes) -> None:
        key = (fact.window_id, fact.pane_id)
        pane = rt.state.panes.get(key) or rt.starting.get(key)
        if pane is not None and apply(rt, pane, fact):
            rt.touched(pane)

    return handle


HANDLERS: Mapping[type[m.Message], Handler] = {
    m.InputWritten: input_replied,
    m.PasteWritten: input_replied,
    m.ScreenRead: replied,
    m.GridRead: replied,
    m.StyledRead: replied,
    m.PtyResized: replied,
    m.PaneClosed: replied,
    m.ExecFinished: replied,
    m.PaneStarted: start_reported,
    m.PaneStartFailed: start_reported,
    m.ShellMarked: _about_pane(m.ShellMarked, shell_marked),
    m.CwdReported: _about_pane(m.CwdReported, cwd_reported),
    m.TitleChanged: _about_pane(m.TitleChanged, title_changed),
    m.ForegroundChanged: _about_pane(m.ForegroundChanged, foreground_changed),
    m.ProgramStatus: _about_pane(m.ProgramStatus, program_status),
    m.ProgramRecords: _about_pane(m.ProgramRecords, program_records),
    m.ScreenPublished: _about_pane(m.ScreenPublished, screen_published),
    m.ScreenPending: _about_pane(m.ScreenPending, screen_pending),
    m.ScreenMatched: _about_pane(m.ScreenMatched, screen_matched),
    m.PaneExited: _about_pane(m.PaneExited, pane_exited),
    m.SshPhase: _about_pane(m.SshPhase, ssh_phase),
}


def on_worker_message(rt: Runtime, message: m.Message, identity: bytes = b"") -> None:
    """A reply or a fact from a pane worker; ``identity`` is the ZeroMQ peer that sent it."""
    handle = HANDLERS.get(type(message))
    if handle is not None:
        handle(rt, message, identity)
