"""What a pane worker does with each router command: one function per command type, in one
table (a command costs a dict lookup on its type). Each answers with its Reply, at once or
once done (writes, execs); ClosePane ends the worker."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pebrel import messages as m
from pebrel.keys import encode_key
from pebrel.workers.exec import resolve_cwd

if TYPE_CHECKING:
    from pebrel.workers.app import Worker

PASTE_START = b"\x1b[200~"
PASTE_END = b"\x1b[201~"


def write_input(worker: Worker, command: m.WriteInput) -> None:
    worker.writer.queue(command.request_id, command.data)


def read_screen(worker: Worker, command: m.ReadScreen) -> None:
    worker.on_readable_all()
    result = worker.screen.read(command.lines, command.max_bytes)
    if worker.publisher.dirty:  # the publication goes first: ``reports`` counts it
        worker.publisher.flush()
    worker.send(
        m.ScreenRead(
            request_id=command.request_id,
            lines=result.lines,
            history_available=result.history_available,
            truncated=result.truncated,
            reports=worker.publisher.published,
            captured_at=time.time(),
        )
    )


def read_grid(worker: Worker, command: m.ReadGrid) -> None:
    worker.on_readable_all()
    grid = worker.screen.grid()
    worker.send(
        m.GridRead(
            request_id=command.request_id,
            cells=grid.cells,
            wrapped=grid.wrapped,
            cursor_row=grid.cursor_row,
            cursor_col=grid.cursor_col,
            cursor_visible=grid.cursor_visible,
            alt_screen=grid.alt_screen,
            history_available=grid.history_available,
        )
    )


def read_styled(worker: Worker, command: m.ReadStyled) -> None:
    worker.on_readable_all()
    shown = worker.screen.styled()
    worker.send(
        m.StyledRead(
            request_id=command.request_id,
            rows=shown.rows,
            styles=shown.styles,
            cols=worker.screen.size()[0],
            cursor_row=shown.cursor_row,
            cursor_col=shown.cursor_col,
            cursor_visible=shown.cursor_visible,
            alt_screen=shown.alt_screen,
            captured_at=time.time(),
            styles_cut=shown.styles_cut,
        )
    )


def write_at_prompt(worker: Worker, command: m.WriteAtPrompt) -> None:
    worker.on_readable_all()  # a prompt already written counts
    worker.prompt_writes.arm(command, worker.exited)


def cancel_at_prompt(worker: Worker, command: m.CancelAtPrompt) -> None:
    worker.prompt_writes.cancel(command.request_id)


def resize_pty(worker: Worker, command: m.ResizePty) -> None:
    worker.publisher.changing()
    worker.screen.resize(command.cols, command.rows)
    worker.screen_rules.screen_changed()
    if not worker.exited:
        with contextlib.suppress(OSError):
            worker.pty.resize(command.cols, command.rows)
    worker.send(m.PtyResized(request_id=command.request_id, cols=command.cols, rows=command.rows))


def send_key(worker: Worker, command: m.SendKey) -> None:
    """Encode a key for the mode the terminal is in after all output so far (DECCKM)."""
    worker.on_readable_all()
    try:
        data = encode_key(
            command.key,
            control=command.control,
            alt=command.alt,
            shift=command.shift,
            app_cursor=worker.screen.app_cursor_keys,
        )
    except ValueError as exc:
        worker.send(m.InputWritten(request_id=command.request_id, written=0, error=str(exc)))
        return
    worker.writer.queue(command.request_id, data * command.repeat)


def paste_text(worker: Worker, command: m.PasteText) -> None:
    """Bracketed paste, judged after all pending output; refused (nothing written) if off."""
    worker.on_readable_all()
    if not worker.screen.bracketed_paste:
        worker.send(
            m.PasteWritten(request_id=command.request_id, written=0, bracketed=False, error=None)
        )
        return
    worker.writer.queue(command.request_id, PASTE_START + command.data + PASTE_END, paste=True)


def run_exec(worker: Worker, command: m.RunExec) -> None:
    worker.on_readable_all()  # take in an OSC 7 cwd report that is already written
    pty = worker.pty
    shell_owns_tty = not worker.exited and pty.foreground_pgid() == pty.pid
    cwd = resolve_cwd(command.cwd, worker.osc.cwd, pty.pid, shell_owns_tty, worker.config.cwd)
    worker.execs.start(command, cwd)


def close_pane(worker: Worker, command: m.ClosePane) -> None:
    """Kill the pane's process tree, answer, and stop the worker."""
    # Commands run in the socket's reader callback: drop the PTY's reader and writer first,
    # or one already due in this loop turn would run on the closed fd.
    loop = asyncio.get_running_loop()
    loop.remove_reader(worker.pty.fd)
    loop.remove_writer(worker.pty.fd)
    worker.publisher.close()
    worker.close_tree()
    worker.send(m.PaneClosed(request_id=command.request_id))
    worker.stopped.set()


COMMANDS: Mapping[type[m.Message], Callable[[Worker, Any], None]] = {
    m.WriteInput: write_input,
    m.ReadScreen: read_screen,
    m.ReadGrid: read_grid,
    m.ReadStyled: read_styled,
    m.WriteAtPrompt: write_at_prompt,
    m.CancelAtPrompt: cancel_at_prompt,
    m.ResizePty: resize_pty,
    m.SendKey: send_key,
    m.PasteText: paste_text,
    m.RunExec: run_exec,
    m.ClosePane: close_pane,
}
