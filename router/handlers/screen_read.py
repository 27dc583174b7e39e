"""pane.read and agent.read with ``screen``: the visible grid row by row (R4.4).

A plain read answers logical lines (soft-wrapped rows joined, blank rows at the bottom left
out). With ``screen: true`` it answers the visible screen exactly: ``lines`` has one entry per
screen row (its cells' text, trailing blanks trimmed, as tmux ``capture-pane -p`` prints it),
``screen`` the same rows cell by cell (``cols`` cells each, ``""`` for the second cell of a wide
character), ``wrapped`` each row's soft-wrap flag and ``cursor`` the cursor's cell. These reads
are never kept by the router: each one asks the pane's worker.

pane.screen (#21) answers the visible screen with how its cells look (colours, bold,
underline, inverse, ...: ``workers/styled.py``), for a view that renders it; it too asks the
pane's worker each time.

Like every read answer it stays within ``READ_MAX_BYTES`` encoded: a screen too large for that
(it takes a very wide pane full of text) loses its top rows, ``first_row`` says which row comes
first and ``truncated`` is set.
"""

from __future__ import annotations

from collections.abc import Mapping

from pebrel import messages as m
from pebrel.envelope import dump_value
from pebrel.method_params import PaneScreenParams
from pebrel.model import READ_LINES_MAX_BYTES
from pebrel.router import links
from pebrel.router.handlers import Method, Result
from pebrel.router.handlers.input_common import pane_ids, require_ssh_ready, worker_link
from pebrel.router.runtime import Runtime
from pebrel.router.state import Pane


async def grid_result(rt: Runtime, pane: Pane, state: Result) -> Result:
    """pane.read's result with ``screen: true``; ``state`` is the pane's state part."""
    require_ssh_ready(pane)
    answer = await links.request(
        worker_link(rt, pane), rt.send, lambda rid: m.ReadGrid(request_id=rid)
    )
    assert isinstance(answer, m.GridRead)
    rows = len(answer.cells)
    lines = ["".join(cells).rstrip(" ") for cells in answer.cells]
    result: Result = {
        **pane_ids(pane),
        "screen": answer.cells,
        "text": "\n".join(lines),
        "lines": lines,
        "wrapped": answer.wrapped,
        "cursor": {
            "row": answer.cursor_row,
            "col": answer.cursor_col,
            "visible": answer.cursor_visible,
        },
        "rows": rows,
        "cols": len(answer.cells[0]) if rows else 0,
        "alt_screen": answer.alt_screen,
        "first_row": 0,
        "requested_lines": rows,
        "returned_lines": rows,
        "history_available": answer.history_available,
        "truncated": False,
        **state,
    }
    return _within_cap(result)


async def screen(rt: Runtime, params: PaneScreenParams) -> Result:
    """pane.screen: the visible screen, runs of cells with their styles, and the cursor."""
    pane = rt.state.pane(params.get("window_id"), params["pane_id"])
    require_ssh_ready(pane)
    answer = await links.request(
        worker_link(rt, pane), rt.send, lambda rid: m.ReadStyled(request_id=rid)
    )
    assert isinstance(answer, m.StyledRead)
    return {
        **pane_ids(pane),
        "cols": answer.cols,
        "rows": len(answer.rows),
        "lines": answer.rows,
        "styles": answer.styles,
        "cursor": {
            "row": answer.cursor_row,
            "col": answer.cursor_col,
            "visible": answer.cursor_visible,
        },
        "alt_screen": answer.alt_screen,
        "styles_cut": answer.styles_cut,
        "title": pane.title,
        "screen_captured_at": answer.captured_at,
        "task_state": pane.tracker.state,
        "state_change_seq": pane.tracker.seq,
        "exited": pane.exited,
    }


METHODS: Mapping[str, Method] = {"pane.screen": screen}


def _within_cap(result: Result) -> Result:
    """Drop top rows until the answer fits in ``READ_LINES_MAX_BYTES`` (rarely needed)."""
    size = len(dump_value(result))
    limit = READ_LINES_MAX_BYTES
    if size <= limit:
        return result
    cells: list[list[str]] = result["screen"]
    lines: list[str] = result["lines"]
    first = 0
    while first < len(lines) and size > limit:
        # A row costs its cells, its line in `lines` and in `text`, and its wrap flag.
        size -= len(dump_value(cells[first])) + 2 * len(dump_value(lines[first])) + 8
        first += 1
    kept = lines[first:]
    return {
        **result,
        "screen": cells[first:],
        "text": "\n".join(kept),
        "lines": kept,
        "wrapped": result["wrapped"][first:],
        "first_row": first,
        "returned_lines": len(kept),
        "truncated": True,
    }
