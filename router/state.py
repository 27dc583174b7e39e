"""The router's state: windows, tabs, panes, focus, revision (the only writer of the snapshot)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

from pebrel.agentkinds import DISPLAY_NAMES
from pebrel.envelope import dump_value
from pebrel.errors import ErrorCode, PebrelError
from pebrel.messages import ScreenPublished, ScreenRead
from pebrel.model import TaskState
from pebrel.router import layout, program_status
from pebrel.router.agents import AgentRegistry, PaneAgents
from pebrel.router.layout import Leaf, Node
from pebrel.taskstate import ShellTracker


@dataclass(slots=True)
class KeptRead:
    """A read answer the router keeps until the screen changes (pane.read): derived from the
    pane's published screen or asked of its worker; with the Unix time its screen was captured,
    and the JSON of the answer's unchanging part once one client has asked for it."""

    reply: ScreenRead
    captured_at: float
    head: bytes | None = None


@dataclass(slots=True)
class Pane:
    window_id: int
    pane_id: int
    shell: str
    shell_id: str
    cwd: str
    cols: int
    rows: int
    integrated: bool = False
    pid: int | None = None
    worker_pid: int | None = None
    title: str = ""
    exited: bool = False
    exit_reason: str | None = None
    exit_code: int | None = None
    tracker: ShellTracker = field(default_factory=ShellTracker)
    #: The terminal's foreground process group when a program other than the shell holds it,
    #: as last reported (0: the shell has it, or nothing was reported yet).
    foreground_pgid: int = 0
    started: bool = False
    writing: bool = False  # an input write is in flight (never interleave two inputs)
    closing: bool = False  # being closed (Runtime.close_panes): requests waiting on it end
    agents: PaneAgents = field(default_factory=PaneAgents)
    # The worker's newest published screen (workers/publisher.py), and whether reads may be
    # answered from it (not while a resize is on its way, nor after an input was written until
    # a publication shows output that followed it).
    screen: ScreenPublished | None = None
    screen_current: bool = False
    # Read answers by line count, derived from ``screen`` or asked of the worker (pane.read),
    # until the next publication.
    reads: dict[int, KeptRead] = field(default_factory=dict)
    # The worker's count of publications, as of its last one.
    screen_reports: int = 0
    # Input writes the worker reported done (InputWritten, PasteWritten with bytes written).
    inputs_written: int = 0
    # What the foreground program reports of itself (router/program_status.py; None: nothing),
    # and the task state it implied when last applied.
    program_status: dict[str, Any] | None = None
    program_mapped: TaskState | None = None
    # When a kept read of this pane was last given (by the router or, as reported, the adapter).
    read_used: float = float("-inf")
    #: An SSH pane's connection (R11.1): {host, port, user, phase, error?}; None: a local pane.
    ssh: dict[str, Any] | None = None

    @property
    def remote(self) -> bool:
        return self.ssh is not None

    @property
    def key(self) -> tuple[int, int]:
        return (self.window_id, self.pane_id)


@dataclass(slots=True)
class Tab:
    root: Node
    focused_pane: int
    cols: int
    rows: int
    custom_name: str | None = None
    zoomed_pane: int | None = None


@dataclass(slots=True)
class Window:
    window_id: int
    tabs: list[Tab] = field(default_factory=list)
    active_tab: int = 0
    next_pane_id: int = 1

    def allocate_pane_id(self) -> int:
        pane_id = self.next_pane_id
        self.next_pane_id += 1
        return pane_id


class RouterState:
    def __init__(self) -> None:
        self.runtime_id = secrets.token_hex(8)
        self.windows: dict[int, Window] = {}
        self.panes: dict[tuple[int, int], Pane] = {}
        self.focused_window: int | None = None
        self.next_window_id = 1
        self.revision = 0
        self.registry = AgentRegistry()
        self._last_projection: dict[str, Any] | None = None
        self._snapshot: dict[str, Any] = {}
        self._snapshot_json: bytes | None = None  # _snapshot's JSON, made on first use

    # -- ids -----------------------------------------------------------------------------
    def allocate_window_id(self) -> int:
        window_id = self.next_window_id
        self.next_window_id += 1
        return window_id

    # -- lookup --------------------------------------------------------------------------
    def window(self, window_id: int | None) -> Window:
        if window_id is None:
            if self.focused_window is None:
                raise PebrelError(ErrorCode.TARGET_NOT_FOUND, "no window is open")
            window_id = self.focused_window
        found = self.windows.get(window_id)
        if found is None:
            raise PebrelError(
                ErrorCode.TARGET_NOT_FOUND,
                f"window {window_id} does not exist",
                {"window_id": window_id},
            )
        return found

    def pane(self, window_id: int | None, pane_id: int | None) -> Pane:
        """Resolve a pane target (R2.8): never guess between windows."""
        if pane_id is None:
            win = self.window(window_id)
            tab = win.tabs[win.active_tab]
            return self.panes[(win.window_id, tab.focused_pane)]
        if window_id is not None:
            return self.pane_at(window_id, pane_id)
        candidates = [p for (w, pid), p in self.panes.items() if pid == pane_id]
        if not candidates:
            raise PebrelError(
                ErrorCode.TARGET_NOT_FOUND, f"pane {pane_id} does not exist", {"pane_id": pane_id}
            )
        if len(candidates) > 1:
            raise PebrelError(
                ErrorCode.AMBIGUOUS_TARGET,
                f"pane {pane_id} exists in several windows; pass window_id",
                {"pane_id": pane_id, "window_ids": sorted(p.window_id for p in candidates)},
            )
        return candidates[0]

    def pane_at(self, window_id: int, pane_id: int) -> Pane:
        """The pane of that id in that window (never ambiguous)."""
        self.window(window_id)
        found = self.panes.get((window_id, pane_id))
        if found is None:
            raise PebrelError(
                ErrorCode.TARGET_NOT_FOUND,
                f"pane {pane_id} does not exist in window {window_id}",
                {"window_id": window_id, "pane_id": pane_id},
            )
        return found

    def locate(self, pane: Pane) -> tuple[Window, int, Tab]:
        win = self.windows[pane.window_id]
        for index, tab in enumerate(win.tabs):
            if pane.pane_id in layout.leaves(tab.root):
                return win, index, tab
        raise KeyError(pane.key)

    def tab(self, window_id: int | None, tab_index: int) -> tuple[Window, Tab]:
        win = self.window(window_id)
        if not 0 <= tab_index < len(win.tabs):
            raise PebrelError(
                ErrorCode.TARGET_NOT_FOUND,
                f"window {win.window_id} has no tab {tab_index}",
                {"window_id": win.window_id, "tab_index": tab_index},
            )
        return win, win.tabs[tab_index]

    def tab_panes(self, window_id: int, tab: Tab) -> list[Pane]:
        return [self.panes[(window_id, pid)] for pid in layout.leaves(tab.root)]

    # -- layout sizes ---------------------------------------------------------------------
    def apply_sizes(self, window_id: int, tab: Tab) -> list[Pane]:
        """Recompute pane sizes of a tab; return the panes whose size changed."""
        new = layout.sizes(tab.root, tab.cols, tab.rows)
        if tab.zoomed_pane is not None:
            # Only the zoomed pane fills the tab; the hidden ones keep their layout size.
            new[tab.zoomed_pane] = (tab.cols, tab.rows)
        changed = []
        for pid, (cols, rows) in new.items():
            pane = self.panes.get((window_id, pid))
            if pane is not None and (pane.cols, pane.rows) != (cols, rows):
                pane.cols, pane.rows = cols, rows
                changed.append(pane)
        return changed

    # -- projection ------------------------------------------------------------------------
    def pane_record(self, pane: Pane, tab_index: int, focused: bool) -> dict[str, Any]:
        return {
            "window_id": pane.window_id,
            "tab_index": tab_index,
            "pane_id": pane.pane_id,
            "focused": focused,
            "title": pane.title,
            "cwd": pane.cwd,
            "shell": pane.shell,
            "pid": pane.pid,
            "cols": pane.cols,
            "rows": pane.rows,
            "task_state": pane.tracker.state,
            "state_change_seq": pane.tracker.seq,
            "exited": pane.exited,
            "exit_reason": pane.exit_reason,
            "last_exit_code": pane.tracker.last_exit_code,
            "remote": pane.ssh is not None,
            **({"ssh": dict(pane.ssh)} if pane.ssh is not None else {}),
            "program_status": pane.program_status,
            "progress": program_status.progress_of(pane.program_status),
            **({"agent": self.pane_agent(pane)} if pane.agents.session is not None else {}),
        }

    def pane_agent(self, pane: Pane) -> dict[str, Any]:
        session = pane.agents.session
        assert session is not None
        bound = pane.agents.bound
        return {
            "agent_id": session.agent_id,
            "name": bound.name if bound is not None else None,
            "kind": session.kind,
            "display_name": DISPLAY_NAMES.get(session.kind, session.kind),
            "session_id": session.session_id,
            "generation": session.generation,
            "state": pane.tracker.state,
            "ready": session.ready,
            "state_source": session.source,
            "state_rule": session.rule,
            "program": session.program,
            "pid": pane.foreground_pgid or None,
        }

    def _project(self) -> dict[str, Any]:
        windows = []
        for window_id in sorted(self.windows):
            win = self.windows[window_id]
            win_focused = window_id == self.focused_window
            tabs = []
            for index, tab in enumerate(win.tabs):
                active = index == win.active_tab
                panes = [
                    self.pane_record(
                        self.panes[(window_id, pid)],
                        index,
                        win_focused and active and pid == tab.focused_pane,
                    )
                    for pid in layout.leaves(tab.root)
                    if (window_id, pid) in self.panes
                ]
                tabs.append(
                    {
                        "tab_index": index,
                        "name": tab.custom_name or self._default_tab_name(window_id, tab),
                        "custom_name": tab.custom_name,
                        "active": active,
                        "focused_pane_id": tab.focused_pane,
                        "zoomed_pane_id": tab.zoomed_pane,
                        "cols": tab.cols,
                        "rows": tab.rows,
                        "layout": layout.to_wire(tab.root),
                        "panes": panes,
                    }
                )
            windows.append({"window_id": window_id, "focused": win_focused, "tabs": tabs})
        return {"focused_window_id": self.focused_window, "windows": windows}

    def _default_tab_name(self, window_id: int, tab: Tab) -> str:
        pane = self.panes.get((window_id, tab.focused_pane))
        if pane is None:
            return ""
        return pane.title or pane.shell.rsplit("/", 1)[-1]

    def commit(self) -> bool:
        """Recompute the projection; bump `revision` only if its content changed (R2.6)."""
        projection = self._project()
        if projection == self._last_projection:
            return False
        self._last_projection = projection
        self.revision += 1
        self._snapshot = {"runtime_id": self.runtime_id, "revision": self.revision, **projection}
        self._snapshot_json = None
        return True

    def snapshot(self) -> dict[str, Any]:
        return self._snapshot

    def snapshot_json(self) -> bytes:
        """The snapshot's JSON, encoded once per revision (every poller gets the same bytes)."""
        if self._snapshot_json is None:
            self._snapshot_json = dump_value(self._snapshot)
        return self._snapshot_json

    def snapshot_tab(self, window_id: int, tab_index: int) -> dict[str, Any]:
        for win in self._snapshot.get("windows", []):
            if win["window_id"] == window_id:
                tab: dict[str, Any] = win["tabs"][tab_index]
                return tab
        raise KeyError((window_id, tab_index))


def new_tab(pane_id: int, cols: int, rows: int) -> Tab:
    return Tab(root=Leaf(pane_id), focused_pane=pane_id, cols=cols, rows=rows)
