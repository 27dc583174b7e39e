"""Pane sizes: a tab's layout applied to its panes' sizes, and their workers told.

A split tells the split pane's worker its new size before the new pane's shell is started
(:func:`presize`): that pane's shell redraws its prompt (SIGWINCH) while the new shell
starts, not while the split's answer is on its way to the client, which on a busy machine
then waits for a core. The router's sizes change only once the split is applied
(:func:`resize_tab`, which sends nothing a pane already has); a split that fails puts the
sizes back (:func:`restore`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pebrel import messages as m
from router.links import WorkerLink
from router.state import Pane, Tab, Window

if TYPE_CHECKING:
    from router.runtime import Runtime

Sizes = Mapping[tuple[int, int], tuple[int, int]]


def resize_tab(rt: Runtime, win: Window, tab: Tab, sent: Sizes | None = None) -> None:
    """Apply the tab's layout to its panes' sizes and tell their workers; ``sent``: the sizes
    :func:`presize` sent ahead (not sent again; one that no longer holds is corrected)."""
    sent = sent or {}
    changed = rt.state.apply_sizes(win.window_id, tab)
    for pane in changed:
        # Its kept reads show the old size until the worker, which gets the resize
        # first, answers or reports again.
        rt.drop_kept_reads(pane)
        if sent.get(pane.key) != (pane.cols, pane.rows):
            _tell(rt, pane)
    moved = {pane.key for pane in changed}
    restore(rt, {key: size for key, size in sent.items() if key not in moved})


def presize(
    rt: Runtime, win: Window, sizes: Mapping[int, tuple[int, int]]
) -> dict[tuple[int, int], tuple[int, int]]:
    """Send the panes of ``win`` the sizes a layout change about to be applied gives them
    (``sizes``: by pane id); return what was sent, for :func:`resize_tab` or :func:`restore`.
    Only to connected workers: one still connecting gets its size from :func:`resize_tab`."""
    sent = {}
    for pane_id, size in sizes.items():
        pane = rt.state.panes.get((win.window_id, pane_id))
        link = rt.links.get((win.window_id, pane_id))
        if pane is None or link is None or not link.started.done():
            continue
        if (pane.cols, pane.rows) != size:
            rt.drop_kept_reads(pane)
            _send(rt, link, *size)
            sent[pane.key] = size
    return sent


def restore(rt: Runtime, sent: Sizes) -> None:
    """Tell the workers sent a size ahead the size they have after all (a failed split)."""
    for key, size in sent.items():
        pane = rt.state.panes.get(key)
        if pane is not None and (pane.cols, pane.rows) != size:
            rt.drop_kept_reads(pane)
            _tell(rt, pane)


def _tell(rt: Runtime, pane: Pane) -> None:
    link = rt.links.get(pane.key)
    if link is None:
        return
    if link.started.done():
        _send_size(rt, pane, link)
    else:  # not connected yet: send the size it has then
        link.started.add_done_callback(functools.partial(_send_size, rt, pane, link))


def _send_size(rt: Runtime, pane: Pane, link: WorkerLink, _: object = None) -> None:
    _send(rt, link, pane.cols, pane.rows)


def _send(rt: Runtime, link: WorkerLink, cols: int, rows: int) -> None:
    if not link.dead and not link.started.cancelled() and link.started.exception() is None:
        rt.send(link.identity, m.ResizePty(request_id=0, cols=cols, rows=rows))
