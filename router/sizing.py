"""Pane sizes: a tab's layout applied to its panes' sizes, and their workers told.

Each worker link remembers the size its worker was started with or last told, and a worker is
told whenever that differs from its pane's size, so nothing is sent twice and nothing is
missed whatever changed the sizes in between. A split tells the split pane's worker its new
size before the new pane's shell is started (:func:`presize`): that pane's shell redraws its
prompt (SIGWINCH) while the new shell starts, not while the split's answer is on its way to
the client, which on a busy machine then waits for a core. The router's sizes change only once
the split is applied (:func:`resize_tab`); a split that fails puts the size back
(:func:`restore`).

It needs only the router's state, the worker links and the send function (:class:`Sized`),
so it imports nothing of router.runtime, which calls it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from pebrel import messages as m
from pebrel.router import layout
from pebrel.router.links import WorkerLink
from pebrel.router.state import Pane, RouterState, Tab, Window


class Sized(Protocol):
    """What sizing uses of the router's Runtime."""

    @property
    def state(self) -> RouterState: ...
    @property
    def links(self) -> Mapping[tuple[int, int], WorkerLink]: ...
    @property
    def send(self) -> Callable[[bytes, m.Message], bool]: ...
    def drop_kept_reads(self, pane: Pane) -> None: ...


def resize_tab(rt: Sized, win: Window, tab: Tab) -> None:
    """Apply the tab's layout to its panes' sizes and tell the workers that need it."""
    for pane in rt.state.apply_sizes(win.window_id, tab):
        # Its kept reads show the old size until the worker, which gets the resize
        # first, answers or reports again.
        rt.drop_kept_reads(pane)
    restore(rt, ((win.window_id, pane_id) for pane_id in layout.leaves(tab.root)))


def presize(rt: Sized, win: Window, sizes: Mapping[int, tuple[int, int]]) -> list[tuple[int, int]]:
    """Tell the workers of ``win``'s panes the sizes a layout change about to be applied gives
    them (``sizes``: by pane id); return the panes told, for :func:`restore` if the change
    does not happen. Only connected workers: one still connecting gets its size later."""
    told = []
    for pane_id, size in sizes.items():
        pane = rt.state.panes.get((win.window_id, pane_id))
        link = rt.links.get((win.window_id, pane_id))
        if pane is None or link is None or not link.started.done() or link.size == size:
            continue
        rt.drop_kept_reads(pane)
        _send(rt, link, *size)
        told.append(pane.key)
    return told


def restore(rt: Sized, keys: Iterable[tuple[int, int]]) -> None:
    """Tell these panes' workers their pane's size where they were last told another."""
    for key in keys:
        pane = rt.state.panes.get(key)
        link = rt.links.get(key)
        if pane is None or link is None or link.size == (pane.cols, pane.rows):
            continue
        if link.started.done():
            rt.drop_kept_reads(pane)
            _send_size(rt, pane, link)
        else:  # not connected yet: send the size it has then
            link.started.add_done_callback(functools.partial(_send_size, rt, pane, link))


def _send_size(rt: Sized, pane: Pane, link: WorkerLink, _: object = None) -> None:
    if link.size != (pane.cols, pane.rows):  # a size told on connecting may be told already
        _send(rt, link, pane.cols, pane.rows)


def _send(rt: Sized, link: WorkerLink, cols: int, rows: int) -> None:
    if not link.dead and not link.started.cancelled() and link.started.exception() is None:
        rt.send(link.identity, m.ResizePty(request_id=0, cols=cols, rows=rows))
        link.size = (cols, rows)
