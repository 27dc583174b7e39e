"""pane.wait_any: the first of several panes to reach a task state (#20 item 3).

"Which of my agents needs me?": `{targets: [{window_id?, pane_id, after_seq?}, ...], state,
timeout_ms?}` answers the first target that reaches `state` after its own baseline, with the
rules of pane.wait (R5.3): an `after_seq` counts only later observations (none: the current
state counts), a baseline ahead of the pane's seq is `invalid_params` at once.

- Every target is resolved before anything waits (`target_not_found`, `ambiguous_target`,
  `details.index` naming the target); a pane named twice is `invalid_params`.
- When several already match, the first in the list wins; later, the first to change.
- A target that closes or exits meanwhile drops out; when none is left the wait ends
  `invalid_state` (`details.gone`). A timeout is `timeout` with each target's observed state.
- The answer is pane.wait's (`state`, `state_change_seq`, `window_id`, `pane_id`) plus the
  target's `index` in the list.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from pebrel.errors import ErrorCode, PebrelError
from pebrel.method_params import PaneWaitAnyParams
from pebrel.model import WAIT_DEFAULT_TIMEOUT_MS
from pebrel.router.handlers import Handler, Result
from pebrel.router.handlers.input_common import pane_ids
from pebrel.router.handlers.pane_io import check_baseline
from pebrel.router.runtime import Runtime
from pebrel.router.state import Pane


def resolve(rt: Runtime, params: PaneWaitAnyParams) -> list[tuple[Pane, int | None]]:
    found: list[tuple[Pane, int | None]] = []
    for index, target in enumerate(params["targets"]):
        try:
            pane = rt.state.pane(target.get("window_id"), target["pane_id"])
            after_seq = target.get("after_seq")
            check_baseline(pane, after_seq, {"index": index})
        except PebrelError as exc:
            exc.details.setdefault("index", index)
            raise
        if any(pane is seen for seen, _ in found):
            raise PebrelError(
                ErrorCode.INVALID_PARAMS,
                f"pane {pane.pane_id} is named twice in targets",
                {**pane_ids(pane), "field": "targets", "index": index},
            )
        found.append((pane, after_seq))
    return found


def observed(pane: Pane) -> dict[str, Any]:
    return {
        **pane_ids(pane),
        "observed_state": pane.tracker.state,
        "observed_state_change_seq": pane.tracker.seq,
    }


async def wait_any(rt: Runtime, params: PaneWaitAnyParams) -> Result:
    target = params["state"]
    waiting = resolve(rt, params)
    deadline = time.monotonic() + params.get("timeout_ms", WAIT_DEFAULT_TIMEOUT_MS) / 1000
    gone: list[dict[str, Any]] = []
    while True:
        live: list[tuple[int, Pane, int | None]] = []
        for index, (pane, after_seq) in enumerate(waiting):
            if any(g["index"] == index for g in gone):
                continue
            found = pane.tracker.observation(target, after_seq)
            if found is not None and rt.state.panes.get(pane.key) is pane:
                seq, state = found
                return {"state": state, "state_change_seq": seq, **pane_ids(pane), "index": index}
            if rt.state.panes.get(pane.key) is not pane or pane.exited:
                gone.append({**pane_ids(pane), "index": index, "exited": pane.exited})
                continue
            live.append((index, pane, after_seq))
        if not live:
            raise PebrelError(
                ErrorCode.INVALID_STATE,
                f"every target closed or exited; none will reach {target}",
                {"state": target, "gone": gone},
            )
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise PebrelError(
                ErrorCode.TIMEOUT,
                f"no target reached {target} in time",
                {
                    "state": target,
                    "targets": [
                        {**observed(pane), "index": i, "after_seq": a} for i, pane, a in live
                    ],
                    "gone": gone,
                },
            )
        await rt.next_change_any([pane for _, pane, _ in live], remaining)


METHODS: Mapping[str, Handler] = {"pane.wait_any": wait_any}
