"""The router's side of the answers the frontend adapter keeps (``router/answers.py``).

The router marks reusable answers, remembers what the adapter may hold (anything at all, and
the reads of which panes, by line count), and tells it, before anything else, when those go
stale (``AnswersStale``): a revision drops every kept answer, a resize the reads of that pane.
When a pane publishes a new screen (``workers/publisher.py``) whose reads the adapter holds and
gave in the last second, the router sends it the new answers instead (``AnswersRenewed``), so a
client polling busy panes is answered by the adapter without a hop to the router; reads of a
pane nobody polls any more are dropped (AnswersStale), costing nothing per publication after.
The adapter reports the kept reads it gives (``AnswerUsed``, at most every 0.25 s per request).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from pebrel import messages as m
from pebrel.envelope import EncodedResult
from pebrel.errors import PebrelError
from pebrel.router.handlers import pane_io
from pebrel.router.handlers.kept_reads import published_read
from pebrel.router.runtime import Runtime
from pebrel.router.state import Pane

#: A pane's new screen is passed on to the adapter only if one of the pane's kept reads was
#: given this recently; else the adapter's copies are dropped.
RENEW_IF_USED_S = 1.0


class AnswerSync:
    def __init__(self, rt: Runtime, to_frontend: Callable[[m.Message], None]) -> None:
        self.rt = rt
        self.to_frontend = to_frontend
        self.keeps = False  # the adapter may hold some reusable answer
        self.reads: dict[tuple[int, int], set[int]] = {}  # pane key -> line counts it may hold
        rt.on_answers_stale = self.stale
        rt.screen_listeners.append(self.published)

    def answered(self, request: m.HandleRequest, result: EncodedResult) -> bool:
        """Whether the answer to ``request`` may be kept by the adapter (noted if so)."""
        if not (result.reusable and request.cache_slot and not self.rt.closing):
            return False
        if result.read_of is not None:
            window_id, pane_id, lines = result.read_of
            pane = self.rt.state.panes.get((window_id, pane_id))
            if pane is None:  # closed while the read was on its way
                return False
            if "window_id" not in request.params and not self._resolves_to(pane):
                return False  # e.g. a pane with its id came meanwhile: ambiguous now
            self.reads.setdefault(pane.key, set()).add(lines)
            pane.read_used = time.monotonic()
        self.keeps = True
        return True

    def _resolves_to(self, pane: Pane) -> bool:
        """Whether a read naming only the pane's id still finds this pane."""
        try:
            return self.rt.state.pane(None, pane.pane_id) is pane
        except PebrelError:
            return False

    def stale(self, pane: Pane | None = None) -> None:
        """What the adapter kept (all of it, or a pane's reads) no longer holds."""
        if pane is None:
            if self.keeps:
                self.keeps = False
                self.reads.clear()
                self.to_frontend(m.AnswersStale())
        elif self.reads.pop(pane.key, None) is not None:
            self.to_frontend(m.AnswersStale(window_id=pane.window_id, pane_id=pane.pane_id))

    def published(self, pane: Pane) -> None:
        """The pane published a new screen: renew the reads of it the adapter holds and gave
        lately, or drop them."""
        held = self.reads.get(pane.key)
        if held is None:
            return
        if time.monotonic() - pane.read_used > RENEW_IF_USED_S:
            self.stale(pane)
            return
        counts = sorted(held)
        results = []
        for lines in counts:
            kept = published_read(pane, lines)
            if kept is None:  # a longer read, or a resize on its way: asked anew
                self.stale(pane)
                return
            results.append(pane_io.read_json(pane, lines, kept))
        self.to_frontend(
            m.AnswersRenewed(
                window_id=pane.window_id, pane_id=pane.pane_id, lines=counts, results=results
            )
        )

    def used(self, method: str, params: dict[str, Any]) -> None:
        """The adapter gives a kept answer to this request."""
        if method != "pane.read":
            return
        with contextlib.suppress(PebrelError):  # closed since: nothing to keep current
            self.rt.state.pane(
                params.get("window_id"), params["pane_id"]
            ).read_used = time.monotonic()
