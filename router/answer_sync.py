"""The router's side of the answers the frontend adapter keeps (``router/answers.py``).

The router marks reusable answers, remembers what the adapter may hold (anything at all, and
the reads of which panes), and tells it, before anything else, when those go stale
(``AnswersStale``): a revision drops every kept answer, a pane's new published screen
(``workers/publisher.py``) or a resize the reads of that pane.
"""

from __future__ import annotations

from collections.abc import Callable

from pebrel import messages as m
from pebrel.envelope import EncodedResult
from pebrel.errors import PebrelError
from pebrel.router.runtime import Runtime
from pebrel.router.state import Pane


class AnswerSync:
    def __init__(self, rt: Runtime, to_frontend: Callable[[m.Message], None]) -> None:
        self.rt = rt
        self.to_frontend = to_frontend
        self.keeps = False  # the adapter may hold some reusable answer
        self.reads: set[tuple[int, int]] = set()  # panes whose reads it may hold
        rt.on_answers_stale = self.stale

    def answered(self, request: m.HandleRequest, result: EncodedResult) -> bool:
        """Whether the answer to ``request`` may be kept by the adapter (noted if so)."""
        if not (result.reusable and request.cache_slot and not self.rt.closing):
            return False
        if result.read_of is not None:
            window_id, pane_id, _ = result.read_of
            pane = self.rt.state.panes.get((window_id, pane_id))
            if pane is None:  # closed while the read was on its way
                return False
            if "window_id" not in request.params and not self._resolves_to(pane):
                return False  # e.g. a pane with its id came meanwhile: ambiguous now
            self.reads.add(pane.key)
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
        elif pane.key in self.reads:
            self.reads.discard(pane.key)
            self.to_frontend(m.AnswersStale(window_id=pane.window_id, pane_id=pane.pane_id))
