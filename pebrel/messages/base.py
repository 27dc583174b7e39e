"""The bases of every actor message: a record with a ``type``, a worker's reply to a router
request, and a fact a worker reports about its pane."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pebrel.model import PaneId, WindowId


@dataclass(frozen=True, slots=True)
class Message:
    """A small frozen record; ``type`` names it on the wire (pebrel/messages/codec.py)."""

    type: ClassVar[str] = ""


@dataclass(frozen=True, slots=True)
class Reply(Message):
    """A pane worker's answer to one router request: the router matches it to the request it
    answers by ``request_id`` alone (router/links.py), whichever worker sent it."""

    request_id: int


@dataclass(frozen=True, slots=True)
class PaneFact(Message):
    """Something a pane worker saw about its pane and reports unasked (marks, cwd, exit); the
    router decides what it means (router/facts.py)."""

    window_id: WindowId
    pane_id: PaneId
