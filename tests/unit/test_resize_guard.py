"""pane.resize checks its ratio before it changes the layout (R3.5): whatever reaches it (an
orchestrate step, say), a ratio out of range or NaN leaves the tab and the revision as they were.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pebrel import messages as m
from pebrel.errors import PebrelError
from pebrel.router import layout
from pebrel.router.handlers.layout_ops import RATIO_MAX, RATIO_MIN, resize_pane
from pebrel.router.state import Pane
from pebrel.schema import load_schema
from tests.unit.router_stub import one_pane_runtime

pytestmark = pytest.mark.timeout(30)


def _noop(message: m.Message) -> None:
    del message


@pytest.mark.parametrize("ratio", [float("nan"), float("inf"), float("-inf"), 0.0, 0.99])
def test_a_bad_ratio_changes_nothing(tmp_path: Path, ratio: float) -> None:
    async def scenario() -> None:
        rt, pane = one_pane_runtime(tmp_path, _noop)
        second = Pane(1, 2, "/bin/bash", "bash", "/", 40, 24)
        rt.state.panes[second.key] = second
        tab = rt.state.windows[1].tabs[0]
        tab.root = layout.split_leaf(tab.root, 1, 2, "right")
        rt.state.commit()
        root, revision = tab.root, rt.state.revision
        with pytest.raises(PebrelError) as caught:
            resize_pane(rt, pane, ratio)
        assert caught.value.code == "invalid_params"
        assert caught.value.details["field"] == "ratio"
        assert tab.root is root and rt.state.revision == revision
        resize_pane(rt, pane, 0.25)
        assert isinstance(tab.root, layout.Split) and tab.root.ratio == 0.25

    asyncio.run(scenario())


def test_the_ratio_range_is_the_schemas() -> None:
    ratio = load_schema()["methods"]["pane.resize"]["params"]["properties"]["ratio"]
    assert (ratio["minimum"], ratio["maximum"]) == (RATIO_MIN, RATIO_MAX)
