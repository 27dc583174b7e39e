"""The expected state of a runtime under stateful fuzzing, and the views of a snapshot that are
compared with it.

:class:`Model` holds what the accepted requests made: the windows, their tabs in order, each
tab's panes, custom name and zoomed pane, and every pane's shell pid (its `cat`) and pane
worker. It follows accepted requests from their results (a default target was resolved by the
runtime; the result names it) and checks that those results agree with it (a tab closed with
its last pane, the pane ids a close reports...).

Two views of a snapshot:

- :func:`structure`: what the model predicts (ids, tab order, panes per tab, custom names,
  zoom); compared after every step.
- :func:`stable`: everything a request could change, for the check that a refused request
  changed nothing. It leaves out what moves on its own: `task_state` and `state_change_seq`
  (an input's running edge reverts after 2 s; `cat` has no shell integration), `exited` and
  `exit_reason` (a pane's program may end on input sent earlier, or, for the `false` profile,
  at once), `title` and the tab `name` that follows it when no custom name is set (`cat`
  echoes what it reads, escape sequences included), and `revision` (which moves with any of
  them). Layout (ratios), focus, active tab, sizes, pids, cwd and shell are kept: nothing but
  a request moves them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Per-pane fields of a snapshot that change without a request (see the module doc).
MOVING_PANE_FIELDS = frozenset(
    {"task_state", "state_change_seq", "exited", "exit_reason", "last_exit_code", "title"}
)
PaneKey = tuple[int, int]  # (window_id, pane_id)


@dataclass
class Tab:
    panes: set[int]
    custom_name: str | None = None
    zoomed: int | None = None

    def view(self) -> tuple[frozenset[int], str | None, int | None]:
        return frozenset(self.panes), self.custom_name, self.zoomed


@dataclass
class Model:
    windows: dict[int, list[Tab]] = field(default_factory=dict)
    #: The shell (`cat`) pid of every pane, from the first snapshot that showed it.
    shells: dict[PaneKey, int] = field(default_factory=dict)
    #: The pane worker of every pane whose shell was alive when first seen.
    workers: dict[PaneKey, int] = field(default_factory=dict)
    #: Panes seen exited: they never come back.
    exited: set[PaneKey] = field(default_factory=set)

    @classmethod
    def from_snapshot(cls, snapshot: dict[str, Any]) -> Model:
        model = cls()
        for win in snapshot["windows"]:
            model.windows[win["window_id"]] = [
                Tab({p["pane_id"] for p in tab["panes"]}, tab["custom_name"], tab["zoomed_pane_id"])
                for tab in win["tabs"]
            ]
        return model

    def panes(self) -> list[tuple[int, int, int]]:
        """Every pane as (window_id, tab_index, pane_id)."""
        return [
            (window_id, index, pane_id)
            for window_id, tabs in sorted(self.windows.items())
            for index, tab in enumerate(tabs)
            for pane_id in sorted(tab.panes)
        ]

    def pane_keys(self) -> set[PaneKey]:
        return {(w, p) for w, _, p in self.panes()}

    def structure(self) -> dict[int, list[tuple[frozenset[int], str | None, int | None]]]:
        return {wid: [tab.view() for tab in tabs] for wid, tabs in self.windows.items()}

    def _tab_of(self, window_id: int, pane_id: int) -> tuple[int, Tab]:
        for index, tab in enumerate(self.windows[window_id]):
            if pane_id in tab.panes:
                return index, tab
        raise AssertionError(f"pane {window_id}:{pane_id} is not in the model")

    def _forget(self, window_id: int, pane_ids: set[int]) -> None:
        for pane_id in pane_ids:
            self.shells.pop((window_id, pane_id), None)
            self.workers.pop((window_id, pane_id), None)
            self.exited.discard((window_id, pane_id))

    def apply(self, method: str, params: Any, result: dict[str, Any]) -> None:
        """Follow an accepted request; assert its result agrees with the model."""
        handler = getattr(self, "_" + method.replace(".", "_"), None)
        if handler is not None:
            handler(params, result)

    def _window_create(self, params: Any, result: dict[str, Any]) -> None:
        assert result["window_id"] not in self.windows, result
        assert result["tab_index"] == 0, result
        self.windows[result["window_id"]] = [Tab({result["pane_id"]})]

    def _tab_new(self, params: Any, result: dict[str, Any]) -> None:
        self._check_new_pane(result)
        self.windows[result["window_id"]].insert(result["tab_index"], Tab({result["pane_id"]}))

    def _pane_split(self, params: Any, result: dict[str, Any]) -> None:
        self._check_new_pane(result)
        tab = self.windows[result["window_id"]][result["tab_index"]]
        tab.panes.add(result["pane_id"])
        tab.zoomed = None  # splitting in a zoomed tab unzooms it

    def _check_new_pane(self, result: dict[str, Any]) -> None:
        window_id, pane_id = result["window_id"], result["pane_id"]
        assert window_id in self.windows, result
        used = {p for tab in self.windows[window_id] for p in tab.panes}
        assert pane_id not in used, result

    def _pane_close(self, params: Any, result: dict[str, Any]) -> None:
        window_id, pane_id = result["window_id"], result["pane_id"]
        index, tab = self._tab_of(window_id, pane_id)
        tab.panes.discard(pane_id)
        if tab.zoomed == pane_id:
            tab.zoomed = None
        assert result["tab_closed"] == (not tab.panes), result
        if not tab.panes:
            del self.windows[window_id][index]
        assert result["window_closed"] == (not self.windows[window_id]), result
        if not self.windows[window_id]:
            del self.windows[window_id]
        self._forget(window_id, {pane_id})

    def _tab_close(self, params: Any, result: dict[str, Any]) -> None:
        window_id = result["window_id"]
        tab = self.windows[window_id].pop(result["tab_index"])
        assert set(result["closed_pane_ids"]) == tab.panes, (result, tab)
        if not self.windows[window_id]:
            del self.windows[window_id]
        self._forget(window_id, tab.panes)

    def _window_close(self, params: Any, result: dict[str, Any]) -> None:
        tabs = self.windows.pop(result["window_id"])
        panes = {p for tab in tabs for p in tab.panes}
        assert set(result["closed_pane_ids"]) == panes, (result, panes)
        self._forget(result["window_id"], panes)

    def _tab_move(self, params: Any, result: dict[str, Any]) -> None:
        tabs = self.windows[result["window_id"]]
        tabs.insert(result["tab_index"], tabs.pop(result["from_index"]))

    def _tab_rename(self, params: Any, result: dict[str, Any]) -> None:
        tab = self.windows[result["window_id"]][result["tab_index"]]
        tab.custom_name = params["name"]
        assert result["custom_name"] == params["name"], result

    def _pane_zoom(self, params: Any, result: dict[str, Any]) -> None:
        tab = self.windows[result["window_id"]][result["tab_index"]]
        pane_id = result["pane_id"]
        assert pane_id in tab.panes, result
        before = tab.zoomed
        if params["zoomed"]:
            tab.zoomed = pane_id
        elif tab.zoomed == pane_id:
            tab.zoomed = None
        assert result["changed"] == (before != tab.zoomed), (result, before)
        assert result["zoomed"] == (tab.zoomed == pane_id), result


def structure(snapshot: dict[str, Any]) -> dict[int, list[Any]]:
    """The part of a snapshot the model predicts (compare with :meth:`Model.structure`)."""
    return {
        win["window_id"]: [
            (
                frozenset(p["pane_id"] for p in tab["panes"]),
                tab["custom_name"],
                tab["zoomed_pane_id"],
            )
            for tab in win["tabs"]
        ]
        for win in snapshot["windows"]
    }


def stable(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The snapshot without what moves on its own (see the module doc)."""
    windows = []
    for win in snapshot["windows"]:
        tabs = []
        for tab in win["tabs"]:
            kept = {k: v for k, v in tab.items() if k != "panes"}
            if tab["custom_name"] is None:
                kept.pop("name")  # follows the focused pane's title
            kept["panes"] = [
                {k: v for k, v in pane.items() if k not in MOVING_PANE_FIELDS}
                for pane in tab["panes"]
            ]
            tabs.append(kept)
        windows.append({**win, "tabs": tabs})
    return {
        "runtime_id": snapshot["runtime_id"],
        "focused_window_id": snapshot["focused_window_id"],
        "windows": windows,
    }


def without_revision(snapshot: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in snapshot.items() if k != "revision"}


def panes_of(snapshot: dict[str, Any]) -> dict[PaneKey, dict[str, Any]]:
    return {
        (pane["window_id"], pane["pane_id"]): pane
        for win in snapshot["windows"]
        for tab in win["tabs"]
        for pane in tab["panes"]
    }
