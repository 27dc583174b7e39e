"""The read answers the router gives for a pane (pane.read, agent.read; R4.4).

Reads of up to ``PUBLISH_LINES`` lines are the last lines of the pane's newest published
screen (``workers/publisher.py`` describes the whole mechanism: publication, the kept answers
here and the frontend adapter's copies); longer reads, and reads while a resize is on its way,
are asked of the pane's worker. Either answer is kept by line count until the next
publication. A pane whose worker is gone is read from what the router last had of it.
"""

from __future__ import annotations

from pebrel import messages as m
from pebrel.errors import ErrorCode, PebrelError
from pebrel.model import READ_LINES_MAX_BYTES
from pebrel.router import links
from pebrel.router.handlers.input_common import pane_ids, require_ssh_ready, worker_link
from pebrel.router.runtime import Runtime
from pebrel.router.state import KeptRead, Pane

#: Read answers the router keeps per pane (by line count) until the next publication.
READS_KEPT = 4


async def kept_read(rt: Runtime, pane: Pane, lines: int) -> KeptRead:
    """The answer to a read of ``lines`` lines of ``pane`` as the router has its screen."""
    require_ssh_ready(pane)
    kept = published_read(pane, lines)
    if kept is not None:
        return kept
    if pane.exited and pane.key not in rt.links:
        return last_read(pane, lines)
    kept = await _worker_read(rt, pane, lines)
    # A publication that arrived while the read was on its way is newer than the answer (it
    # counted the ones before): then the answer is given but not kept.
    if kept.reply.reports >= pane.screen_reports:
        _keep(pane, lines, kept)
    return kept


def published_read(pane: Pane, lines: int) -> KeptRead | None:
    """The kept answer to a read of ``lines`` lines, or one derived from the pane's published
    screen (and kept); None when only the worker can answer it."""
    kept = pane.reads.get(lines)
    if kept is not None:
        return kept
    screen = pane.screen
    if not (pane.screen_current and screen is not None and _answers(screen, lines)):
        return None
    kept = KeptRead(_slice(screen, lines), screen.captured_at)
    _keep(pane, lines, kept)
    return kept


def _keep(pane: Pane, lines: int, kept: KeptRead) -> None:
    if len(pane.reads) >= READS_KEPT:
        pane.reads.clear()  # a client varying `lines` must not pile up answers
    pane.reads[lines] = kept


def _answers(screen: m.ScreenPublished | m.ScreenRead, lines: int) -> bool:
    """Whether ``screen`` holds the answer to a read of ``lines`` lines: it has that many, or
    all there are (nothing was cut off)."""
    return lines <= len(screen.lines) or not screen.truncated


def _slice(screen: m.ScreenPublished | m.ScreenRead, lines: int) -> m.ScreenRead:
    """The last ``lines`` lines of ``screen``, as the worker's read of ``lines`` would answer
    (within the same byte budget: the publication's is smaller than a read's)."""
    return m.ScreenRead(
        request_id=0,
        lines=screen.lines[-lines:],
        history_available=screen.history_available,
        truncated=screen.truncated or lines < len(screen.lines),
        reports=screen.reports,
    )


async def _worker_read(rt: Runtime, pane: Pane, lines: int) -> KeptRead:
    link = worker_link(rt, pane)
    try:
        answer = await links.request(
            link,
            rt.send,
            lambda rid: m.ReadScreen(request_id=rid, lines=lines, max_bytes=READ_LINES_MAX_BYTES),
        )
    except PebrelError:
        if not link.dead:
            raise
        # The worker died with this read on its way (killed, or its pane closed): the pane is
        # read as any pane whose worker died, if it is still there.
        if rt.state.panes.get(pane.key) is not pane:
            raise PebrelError(
                ErrorCode.TARGET_NOT_FOUND, f"pane {pane.pane_id} was closed", pane_ids(pane)
            ) from None
        return last_read(pane, lines)
    assert isinstance(answer, m.ScreenRead)
    return KeptRead(answer, answer.captured_at)


def last_read(pane: Pane, lines: int) -> KeptRead:
    """A read of a pane whose worker is gone (killed, say): nothing holds its screen any more
    but what the router had, which stays as it was when the worker died: its newest
    publication, or a longer read kept since. Its last ``lines`` lines (the same a worker
    read of ``lines`` would have answered), or all of it when fewer. Not kept itself."""
    held: list[tuple[m.ScreenPublished | m.ScreenRead, float]] = [
        (kept.reply, kept.captured_at) for kept in pane.reads.values()
    ]
    if pane.screen is not None:
        held.append((pane.screen, pane.screen.captured_at))
    if not held:
        return KeptRead(
            m.ScreenRead(request_id=0, lines=[], history_available=0, truncated=False), 0.0
        )
    largest, captured_at = max(held, key=lambda item: len(item[0].lines))
    reply = _slice(largest, lines)
    return KeptRead(reply, captured_at)
