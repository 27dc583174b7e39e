"""`pebrel attach PANE [--window W]`: one pane in your own terminal (#21).

The pane's screen is mirrored into the calling terminal (its alternate screen, raw mode) and
what you type goes to the pane through `pane.user_input`, the local user's own channel: bytes
as typed, no submit barrier, no running edge (typing into vim does not make the pane
`running`). Ctrl-] detaches; the pane keeps running.

- **Updates** come from the screen subscription (`events.subscribe` with `screens: true`):
  when the runtime says the pane published a new screen, attach asks `pane.screen` and
  redraws (so at most ten redraws a second while the pane floods). Snapshot events give the
  title and task state for the status line, and say when the pane exits or is closed.
- **Size.** The pane is shown at its own size (attach never resizes it: other panes share its
  tab); a smaller terminal shows its top-left part. A resize of your terminal redraws.
- **Inside a pane.** Run from a process inside a Pebrel pane, attach mirrors the screen but
  the runtime refuses its keystrokes (`caller_not_user`). Attach learns that at start (it
  sends an input of no bytes, which writes nothing: the runtime places the caller before the
  handler looks at the bytes), says "read-only" in the status line, and
  then also detaches on Ctrl-C or q: an agent cannot press Ctrl-] (pane.send_key has no such
  key).
- **Keys** are forwarded as your terminal sends them: a program that switched to application
  cursor keys still gets the normal-mode arrows (most programs take both).
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import sys
import termios
import tty
from collections.abc import Iterator
from types import FrameType
from typing import Any

import click

from pebrel.cli import params
from pebrel.cli.attach_draw import frame
from pebrel.cli.event_feed import EventFeed, FeedEnded, panes_named, snapshot_panes
from pebrel.cli.options import pane_arg, window_option
from pebrel.cli.output import EXIT_ERROR, EXIT_OK, EXIT_UNAVAILABLE, emit
from pebrel.client import Client, ClientTimeout, RuntimeUnavailable, unavailable_envelope
from pebrel.envelope import error_response
from pebrel.errors import ErrorCode, PebrelError

#: Ctrl-]: detach (as telnet's escape; free in shells, vim and the common AI CLIs).
DETACH_KEY = b"\x1d"
#: What else detaches a read-only attach: Ctrl-C and q.
READ_ONLY_DETACH = (b"\x03", b"q")
READ_BYTES = 4096


@click.command("attach")
@pane_arg
@window_option
def attach(pane_id: int, window_id: int | None) -> None:
    """Mirror one pane in this terminal and type into it; Ctrl-] detaches.

    For people: keystrokes go through pane.user_input, which the runtime refuses to callers
    inside a pane (attach then only shows the pane).
    """
    if not (os.isatty(0) and os.isatty(1)):
        refused = PebrelError(
            ErrorCode.INVALID_PARAMS, "pebrel attach needs a terminal on stdin and stdout", {}
        )
        emit(error_response(None, refused), False)
        sys.exit(EXIT_ERROR)
    try:
        client = Client(timeout_s=10.0)
        feed = Client(timeout_s=10.0)
    except (RuntimeUnavailable, OSError) as exc:
        emit(unavailable_envelope(str(exc)), False)
        sys.exit(EXIT_UNAVAILABLE)
    request = params.pane_screen(window_id=window_id, pane_id=pane_id)
    first = client.call(request.method, request.params)
    if not first.get("ok"):
        emit(first, False)
        sys.exit(EXIT_ERROR)
    session = Session(client, EventFeed(feed), first["result"])
    with raw_terminal():
        why = session.run()
    click.echo(f"[detached from pane {session.key[0]}:{session.key[1]}: {why}]")
    sys.exit(EXIT_OK)


@contextlib.contextmanager
def raw_terminal() -> Iterator[None]:
    """Raw mode on the alternate screen; everything as it was afterwards."""
    saved = termios.tcgetattr(0)
    tty.setraw(0)
    os.write(1, b"\x1b[?1049h\x1b[H\x1b[2J")
    try:
        yield
    finally:
        os.write(1, b"\x1b[0m\x1b[?25h\x1b[?1049l")
        termios.tcsetattr(0, termios.TCSADRAIN, saved)


class Session:
    """One attach: the feed's events, the user's keys, and redraws, in one select loop."""

    def __init__(self, client: Client, feed: EventFeed, screen: dict[str, Any]) -> None:
        self.client = client
        self.feed = feed
        self.screen = screen
        self.key = (int(screen["window_id"]), int(screen["pane_id"]))
        self.note = ""
        self.title = str(screen.get("title") or "")
        self.state = str(screen.get("task_state") or "")
        self.read_only = False
        self.wake_r, self.wake_w = os.pipe()
        self.signals: list[int] = []

    def run(self) -> str:
        """Until detached, the pane closed, or the runtime gone: the reason."""
        os.set_blocking(self.wake_w, False)  # a signal never blocks on a full pipe
        for sig in (signal.SIGWINCH, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, self._signalled)
        try:
            self.probe()
            self.draw()
            return self._loop()
        except (RuntimeUnavailable, OSError) as exc:
            return f"the runtime is gone ({exc})"
        except ClientTimeout as exc:
            return f"the runtime did not answer ({exc})"
        finally:
            self.client.close()
            self.feed.close()

    def _signalled(self, signum: int, frame: FrameType | None) -> None:
        self.signals.append(signum)
        with contextlib.suppress(BlockingIOError):  # already woken
            os.write(self.wake_w, b"!")

    def _loop(self) -> str:
        while True:
            feed = self.feed.fileno()
            ready, _, _ = select.select([0, feed, self.wake_r], [], [])
            if self.wake_r in ready:
                os.read(self.wake_r, 64)
                while self.signals:
                    if self.signals.pop() in (signal.SIGTERM, signal.SIGHUP):
                        return "signalled"
                self.draw()
            if 0 in ready:
                typed = os.read(0, READ_BYTES)
                if not typed:
                    return "end of input"
                if self.read_only:
                    if DETACH_KEY in typed or any(key in typed for key in READ_ONLY_DETACH):
                        return "detached"
                    continue
                before, detach, _ = typed.partition(DETACH_KEY)
                if before:
                    self.type(before)
                if detach:
                    return "detached"
            if feed in ready:
                ended = self._feed()
                if ended:
                    return ended

    def _feed(self) -> str | None:
        changed, status = False, False
        try:
            events = self.feed.read()
        except FeedEnded as exc:
            return str(exc)
        for event in events:
            if event["event"] == "pane.screens":
                changed = changed or self.key in panes_named(event)
            elif event["event"] == "runtime.snapshot":
                pane = find_pane(event["snapshot"], self.key)
                if pane is None:
                    return "the pane was closed"
                seen = (pane["title"], pane["task_state"])
                status = status or seen != (self.title, self.state)
                self.title, self.state = seen
                if pane["exited"]:
                    self.note = f"exited: {pane.get('exit_reason') or ''}"
                    status = True
        if changed:
            self.refresh()  # asks the pane's new screen, then draws
        elif status:
            self.draw()  # the status line only: the screen is the one already drawn
        return None

    def probe(self) -> None:
        """Whether this process may type into panes (not when it runs inside one)."""
        # An input of no bytes: the runtime refuses a caller inside a pane before it looks at
        # the bytes (`caller_not_user`), and the user's is refused as empty (`invalid_params`).
        window_id, pane_id = self.key
        probe = params.pane_user_input(window_id=window_id, pane_id=pane_id, data=b"")
        error = self.client.call(probe.method, probe.params).get("error", {})
        if error.get("code") == ErrorCode.CALLER_NOT_USER:
            self.read_only = True
            self.note = read_only_note(error)

    def type(self, data: bytes) -> None:
        window_id, pane_id = self.key
        for start in range(0, len(data), READ_BYTES):
            request = params.pane_user_input(
                window_id=window_id, pane_id=pane_id, data=data[start : start + READ_BYTES]
            )
            answer = self.client.call(request.method, request.params)
            if not answer.get("ok"):
                error = answer.get("error", {})
                self.read_only = error.get("code") == ErrorCode.CALLER_NOT_USER
                self.note = (
                    read_only_note(error)
                    if self.read_only
                    else f"not typed: {error.get('message', '')}"
                )
                self.draw()
                return

    def refresh(self) -> None:
        request = params.pane_screen(window_id=self.key[0], pane_id=self.key[1])
        answer = self.client.call(request.method, request.params)
        if answer.get("ok"):
            self.screen = answer["result"]
        self.draw()

    def draw(self) -> None:
        size = shutil.get_terminal_size()
        window_id, pane_id = self.key
        parts = [f" pane {window_id}:{pane_id}", self.title, self.state, "Ctrl-] detaches"]
        if self.note:
            parts.append(self.note)
        status = printable("  ".join(parts))  # a title is the pane program's own text
        os.write(1, frame(self.screen, size.columns, size.lines, status).encode())


def read_only_note(error: dict[str, Any]) -> str:
    caller = error.get("details", {}).get("caller", {})
    where = "inside a pane" if caller.get("kind") == "pane" else "(caller not placed)"
    return f"read-only {where}: Ctrl-C or q detaches"


def printable(text: str) -> str:
    """Text without control characters (C0, DEL, C1): nothing in it reaches the terminal as
    a sequence (a title could otherwise ask the terminal for a reply that attach would type)."""
    return "".join(ch if ch.isprintable() else " " for ch in text)


def find_pane(snapshot: dict[str, Any], key: tuple[int, int]) -> dict[str, Any] | None:
    return next(
        (p for p in snapshot_panes(snapshot) if (p["window_id"], p["pane_id"]) == key), None
    )
