"""The compact scrollback of a pane: rows of text with their soft-wrap flags, oldest first.

A read reports how many logical lines the scrollback holds (rows joined by soft wraps count
once), and a read during a flood comes every few milliseconds: counting the wrapped rows of
10,000 rows each time cost ~100 us a read. :class:`History` keeps that count as rows come and
go, so a read costs what it returns, not what the scrollback holds.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterable
from operator import itemgetter

Row = tuple[str, bool]
"""(text, soft-wrapped: the next row continues the same line)."""

_WRAPPED = itemgetter(1)


class History(deque[Row]):
    """A bounded deque of rows that counts its soft-wrapped rows (``wrapped``).

    Only ``append``, ``extend`` and ``clear`` change it (the screen and the fast ingestion use
    nothing else); the rows evicted at ``maxlen`` leave the count as they leave the deque.
    """

    def __init__(self, maxlen: int) -> None:
        super().__init__(maxlen=maxlen)
        self.wrapped = 0

    def append(self, row: Row) -> None:
        if not self.maxlen:
            return
        if len(self) == self.maxlen:
            self.wrapped -= self[0][1]
        super().append(row)
        self.wrapped += row[1]

    def extend(self, rows: Iterable[Row]) -> None:
        new = rows if isinstance(rows, list) else list(rows)
        maxlen = self.maxlen or 0
        overflow = len(self) + len(new) - maxlen
        if overflow > 0:
            if len(new) > maxlen:
                new = new[len(new) - maxlen :]  # only the newest fit
            dropped = len(self) - (maxlen - len(new))  # the oldest rows kept no longer
            self.wrapped -= sum(map(_WRAPPED, itertools.islice(self, dropped)))
        self.wrapped += sum(map(_WRAPPED, new))
        super().extend(new)

    def clear(self) -> None:
        super().clear()
        self.wrapped = 0

    def logical_lines_after(self, gained: list[Row]) -> int:
        """:meth:`logical_lines` as it would be after ``extend(gained)``, without extending (a
        read of rows held back from the screen)."""
        kept = min(len(self) + len(gained), self.maxlen or 0)
        if not kept:
            return 0
        evicted = len(self) + len(gained) - kept  # the oldest rows, ours first
        if evicted <= len(self):
            wrapped = sum(map(_WRAPPED, gained)) + self.wrapped
            wrapped -= sum(map(_WRAPPED, itertools.islice(self, evicted)))
        else:
            wrapped = sum(map(_WRAPPED, gained[evicted - len(self) :]))
        newest = gained[-1] if gained else self[-1]
        return int(kept - wrapped + (1 if newest[1] else 0))

    def logical_lines(self) -> int:
        """Logical lines starting in the scrollback (the oldest row always starts one)."""
        if not self:
            return 0
        # Every row that follows a wrapped row continues a line, except past the newest row.
        return len(self) - self.wrapped + (1 if self[-1][1] else 0)
