"""What every input method shares: liveness, the submit barrier, writes, the running edge.

pane.prompt, pane.run, pane.send_key and pane.paste all type into a pane's PTY. They refuse an
exited pane the same way, refuse a second input inside the submit barrier the same way
(`input_in_progress`, never interleaved), and establish the synchronous running edge of a
submission the same way, so the `state_change_seq` they return is a correct wait baseline
(DESIGN "Model"; TRAPS "Actors"). Their answers say what happened: `written` (bytes reached the
PTY), `submitted` (Enter was written), and the snapshot taken at the running edge, before any
later report of the worker is applied.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pebrel import messages as m
from pebrel.errors import ErrorCode, PebrelError
from pebrel.inputs import check_prompt_text
from pebrel.router import agents, links
from pebrel.router.runtime import Runtime
from pebrel.router.state import Pane


def pane_ids(pane: Pane) -> dict[str, int]:
    return {"window_id": pane.window_id, "pane_id": pane.pane_id}


def require_ssh_ready(pane: Pane, extra: dict[str, Any] | None = None) -> None:
    """Refuse to read or write an SSH pane before its connection is ready or after it failed
    (`ssh_not_ready`, R11.1): its screen then holds no remote output, only what the connection
    said (a prompt for a password, an error), which must never pass for the remote program's."""
    ssh = pane.ssh
    if ssh is not None and ssh["phase"] != "ready":
        error = ssh.get("error")
        raise PebrelError(
            ErrorCode.SSH_NOT_READY,
            f"SSH pane {pane.pane_id} is not ready ({ssh['phase']}"
            + (f": {error})" if error else ")"),
            {
                **pane_ids(pane),
                "host": ssh["host"],
                "phase": ssh["phase"],
                **({"error": error} if error else {}),
                **(extra or {}),
            },
        )


def remote_details(pane: Pane) -> dict[str, Any]:
    """The details of a refusal of what a local runtime cannot do for an SSH pane (R11.1)."""
    assert pane.ssh is not None
    return {**pane_ids(pane), "remote": True, "host": pane.ssh["host"]}


def require_live(pane: Pane, extra: dict[str, Any] | None = None) -> None:
    """Refuse input to an SSH pane that is not ready (`ssh_not_ready`), or to a pane whose
    shell has exited (`invalid_state`)."""
    require_ssh_ready(pane, extra)
    if pane.exited:
        raise PebrelError(
            ErrorCode.INVALID_STATE,
            f"pane {pane.pane_id} has exited: {pane.exit_reason}",
            {**pane_ids(pane), "exited": True, "exit_reason": pane.exit_reason, **(extra or {})},
        )


def require_unlocked(pane: Pane, extra: dict[str, Any] | None = None) -> None:
    """Refuse a second input inside the submit barrier (never interleave two inputs)."""
    if pane.writing or pane.tracker.input_blocked(time.monotonic()):
        raise PebrelError(
            ErrorCode.INPUT_IN_PROGRESS,
            f"pane {pane.pane_id} is still confirming the previous input",
            {**pane_ids(pane), "state_change_seq": pane.tracker.seq, **(extra or {})},
        )


def worker_link(rt: Runtime, pane: Pane) -> links.WorkerLink:
    link = rt.links.get(pane.key)
    if link is None:
        raise PebrelError(ErrorCode.INVALID_STATE, "the pane's worker is gone", pane_ids(pane))
    return link


@dataclass
class Sent:
    """What an input has done so far; its answer and its error details say exactly this."""

    #: Some of its bytes reached the PTY.
    written: bool = False
    #: Its Enter was written (a submission, not only typed text or another key).
    submitted: bool = False
    #: The wait baseline: the running edge's seq, or the seq at the write without an edge.
    baseline: int = 0
    #: The snapshot at the running edge (None without one: then the one after the write).
    snapshot: dict[str, Any] | None = None

    def details(self) -> dict[str, bool]:
        return {"submitted": self.submitted, "written": self.written}


def not_sent() -> dict[str, Any]:
    """The details of an input refused before any byte was written."""
    return Sent().details()


def checked_line(text: str, field: str = "text") -> bytes:
    """``check_prompt_text`` for a pane already found: a refusal says nothing was written."""
    try:
        return check_prompt_text(text, field)
    except PebrelError as exc:
        exc.details.update(not_sent())
        raise


def raise_write_error(pane: Pane, error: str | None, written: int) -> None:
    """Turn a worker's write failure into `action_failed`."""
    if error:
        raise PebrelError(
            ErrorCode.ACTION_FAILED,
            f"writing to pane {pane.pane_id} failed: {error}",
            {**pane_ids(pane), "written_bytes": written},
        )


async def write_input(rt: Runtime, pane: Pane, data: bytes, sent: Sent) -> None:
    """Write raw bytes to the pane's PTY; returns once the worker wrote them all."""
    link = worker_link(rt, pane)
    reply = await links.request(link, rt.send, lambda rid: m.WriteInput(request_id=rid, data=data))
    assert isinstance(reply, m.InputWritten)
    sent.written = sent.written or reply.written > 0
    raise_write_error(pane, reply.error, reply.written)


async def submit_at_prompt(
    rt: Runtime, pane: Pane, data: bytes, limit: float
) -> tuple[int, int] | None:
    """Have the worker type ``data`` and Enter as soon as the shell is at its prompt (at once
    if it is): the worker knows first when the prompt has been drawn, and it sends the
    prompt's marks, then the write's answer, then the command's marks. As that answer is
    handled here the running edge is set, and the command's number taken (the next C is this
    line's: every mark the worker saw before it typed has been handled by then). Returns the
    wait baseline and the command's number, or None when nothing was typed: no prompt by
    ``limit`` (time.monotonic()), or the pane exited (its PaneExited is handled first).
    """
    link = worker_link(rt, pane)
    typed: list[tuple[int, int]] = []

    def written(reply: m.Message) -> None:
        if isinstance(reply, m.InputWritten) and reply.written > 0:
            sent.written = True
            typed.append((mark_submitted(rt, pane), pane.tracker.commands_started + 1))

    def give_up(request_id: int) -> None:
        rt.send(link.identity, m.CancelAtPrompt(request_id=request_id))

    with writing(pane) as sent:  # the pane's input is this line's from here, connecting included
        if not link.started.done():  # a pane just created: no prompt before it connects
            loop = asyncio.get_running_loop()
            try:
                await links.connected(link, loop.time() + max(0.0, limit - time.monotonic()))
            except PebrelError as exc:
                if exc.code != ErrorCode.RUNTIME_TIMEOUT:
                    raise
                return None  # nothing was sent
        reply = await links.request(
            link,
            rt.send,
            lambda rid: m.WriteAtPrompt(request_id=rid, data=data + b"\r"),
            timeout_s=max(0.0, limit - time.monotonic()),
            on_reply=written,
            on_deadline=give_up,
        )
        assert isinstance(reply, m.InputWritten)
        if not typed and reply.error in (None, m.NOT_AT_PROMPT, m.PANE_EXITED):
            return None
        raise_write_error(pane, reply.error, reply.written)  # typed, or partly: the edge holds
    return typed[0] if typed else None


@contextmanager
def writing(pane: Pane) -> Iterator[Sent]:
    """Hold the pane's submit barrier while input is written; a failure inside is not
    submitted, and its details say whether any byte was written."""
    sent = Sent()
    pane.writing = True
    try:
        yield sent
    except PebrelError as exc:
        exc.details.update(submitted=False, written=sent.written)
        raise
    finally:
        pane.writing = False


def mark_submitted(rt: Runtime, pane: Pane) -> int:
    """Establish the synchronous running edge of a submission; return the wait baseline.

    The baseline is the seq right after the edge: a fast command's C and D marks can be
    processed before the write is acknowledged, so a later seq would miss the transition.
    """
    answered = agents.acknowledge_screen(pane.agents)
    if pane.tracker.submit(time.monotonic()):
        if answered and pane.tracker.pending is not None:
            pane.tracker.pending.previous = "idle"  # an unconfirmed edge falls back to idle
        rt.schedule_expiry(pane)
        rt.touched(pane)
    elif answered:
        rt.sync_agent_state(pane)
        rt.touched(pane)
    return pane.tracker.seq


def at_edge(rt: Runtime, pane: Pane, sent: Sent) -> None:
    """Set the running edge of ``sent``'s Enter and keep the snapshot of that moment: the
    answer shows the pane `running` at the baseline, even when the command's own marks are
    handled before Enter's write is acknowledged (R5.4, R5.5)."""
    sent.baseline = mark_submitted(rt, pane)
    rt.commit()
    sent.snapshot = rt.state.snapshot()


async def press_enter(rt: Runtime, pane: Pane, sent: Sent) -> None:
    """The running edge, then Enter as its own write."""
    at_edge(rt, pane, sent)
    await write_input(rt, pane, b"\r", sent)
    sent.submitted = True


async def submit_line(rt: Runtime, pane: Pane, data: bytes, submit: bool) -> Sent:
    """Type `data`, then Enter as a separate write (TUIs read text and Enter in one read as a
    paste); the running edge is set before any byte (pane.prompt; pane.run's line goes
    through :func:`submit_at_prompt`).

    Returns what was sent, with the `after_seq` baseline: the seq right after the edge (or at
    the write, when no edge was set).
    """
    with writing(pane) as sent:
        if submit:
            at_edge(rt, pane, sent)
        else:
            sent.baseline = pane.tracker.seq
        if data:
            await write_input(rt, pane, data, sent)
        if submit:
            await write_input(rt, pane, b"\r", sent)
            sent.submitted = True
    return sent


def submitted_result(rt: Runtime, pane: Pane, sent: Sent) -> dict[str, Any]:
    """Commit, then answer an input: `submitted`, `written`, its wait baseline and the
    snapshot at its running edge (without an edge, the one after the write)."""
    rt.commit()
    return {
        **sent.details(),
        "state_change_seq": sent.baseline,
        **pane_ids(pane),
        "snapshot": sent.snapshot if sent.snapshot is not None else rt.state.snapshot(),
    }
