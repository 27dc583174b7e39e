"""Case tables for `router.layout`, a tab's binary split tree (R3.4, R3.5, DESIGN "Result shapes").

The end-to-end tests in tests/e2e/test_layout.py check the same sizes through `stty size`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest

from pebrel.router.layout import Leaf, Node, Split, leaves, remove_leaf, sizes, split_leaf, to_wire

L1, L2, L3, L4 = Leaf(1), Leaf(2), Leaf(3), Leaf(4)
SIDE = Split("right", 0.5, L1, L2)
NESTED = Split("right", 0.3, L1, Split("down", 0.5, L2, L3))


class SplitCase(NamedTuple):
    id: str
    tree: Node
    target: int
    new: int
    direction: str
    expected: Node


SPLITS = [
    SplitCase("leaf-right", L1, 1, 2, "right", SIDE),
    SplitCase("leaf-down", L1, 1, 2, "down", Split("down", 0.5, L1, L2)),
    SplitCase(
        "second-child-down",
        SIDE,
        2,
        3,
        "down",
        Split("right", 0.5, L1, Split("down", 0.5, L2, L3)),
    ),
    SplitCase(
        "first-child-keeps-parent-ratio",
        NESTED,
        1,
        4,
        "down",
        Split("right", 0.3, Split("down", 0.5, L1, L4), NESTED.second),
    ),
    SplitCase("missing-target-unchanged", SIDE, 9, 3, "right", SIDE),
]


@pytest.mark.parametrize("case", SPLITS, ids=[c.id for c in SPLITS])
def test_split_leaf(case: SplitCase) -> None:
    """R3.4: the target becomes a 0.5 split with the new pane second."""
    assert split_leaf(case.tree, case.target, case.new, case.direction) == case.expected  # type: ignore[arg-type]


class RemoveCase(NamedTuple):
    id: str
    tree: Node
    target: int
    expected: Node | None


REMOVALS = [
    RemoveCase("only-leaf", L1, 1, None),
    RemoveCase("other-leaf", L1, 2, L1),
    RemoveCase("second-of-split", SIDE, 2, L1),
    RemoveCase("first-of-split", SIDE, 1, L2),
    RemoveCase("nested-sibling-moves-up", NESTED, 2, Split("right", 0.3, L1, L3)),
    RemoveCase("nested-first-leaves-subtree", NESTED, 1, Split("down", 0.5, L2, L3)),
    RemoveCase("missing-unchanged", NESTED, 9, NESTED),
]


@pytest.mark.parametrize("case", REMOVALS, ids=[c.id for c in REMOVALS])
def test_remove_leaf(case: RemoveCase) -> None:
    """R3.4: closing a pane gives its place to its sibling; the last one empties the tab."""
    assert remove_leaf(case.tree, case.target) == case.expected


class SizeCase(NamedTuple):
    id: str
    tree: Node
    cols: int
    rows: int
    expected: dict[int, tuple[int, int]]


SIZES = [
    SizeCase("leaf", L1, 200, 50, {1: (200, 50)}),
    SizeCase("right-half", SIDE, 200, 50, {1: (100, 50), 2: (100, 50)}),
    SizeCase("down-half", Split("down", 0.5, L1, L2), 200, 50, {1: (200, 25), 2: (200, 25)}),
    SizeCase("odd-cols", SIDE, 201, 50, {1: (100, 50), 2: (101, 50)}),
    SizeCase("odd-rows", Split("down", 0.5, L1, L2), 80, 51, {1: (80, 26), 2: (80, 25)}),
    SizeCase("ratio-0.3", Split("right", 0.3, L1, L2), 200, 50, {1: (60, 50), 2: (140, 50)}),
    SizeCase(
        "ratio-0-keeps-a-column", Split("right", 0.0, L1, L2), 80, 24, {1: (1, 24), 2: (79, 24)}
    ),
    SizeCase(
        "ratio-1-keeps-a-column", Split("right", 1.0, L1, L2), 80, 24, {1: (79, 24), 2: (1, 24)}
    ),
    SizeCase("nested", NESTED, 200, 50, {1: (60, 50), 2: (140, 25), 3: (140, 25)}),
    SizeCase("two-columns", SIDE, 2, 1, {1: (1, 1), 2: (1, 1)}),
]


@pytest.mark.parametrize("case", SIZES, ids=[c.id for c in SIZES])
def test_sizes(case: SizeCase) -> None:
    """R2.5: pane cols/rows of a headless tab (no borders)."""
    assert sizes(case.tree, case.cols, case.rows) == case.expected


class SumCase(NamedTuple):
    id: str
    direction: str
    ratio: float


SUMS = [
    SumCase(f"{direction}-{ratio}", direction, ratio)
    for direction in ("right", "down")
    for ratio in (0.0, 0.1, 0.25, 0.333, 0.5, 0.6, 0.99, 1.0)
]


@pytest.mark.parametrize("case", SUMS, ids=[c.id for c in SUMS])
def test_split_sizes_add_up_to_the_parent(case: SumCase) -> None:
    """R2.5: for every tab size of at least 2 along the split, the two halves fill it exactly."""
    tree = Split(case.direction, case.ratio, L1, L2)  # type: ignore[arg-type]
    axis = 0 if case.direction == "right" else 1
    for total in range(2, 301):
        cols, rows = (total, 7) if axis == 0 else (7, total)
        got = sizes(tree, cols, rows)
        assert got[1][axis] + got[2][axis] == total, (total, got)
        assert got[1][axis] >= 1 and got[2][axis] >= 1
        assert got[1][1 - axis] == got[2][1 - axis] == 7


class WireCase(NamedTuple):
    id: str
    tree: Node
    wire: dict[str, Any]


WIRES = [
    WireCase("leaf", L1, {"pane_id": 1}),
    WireCase(
        "split",
        SIDE,
        {"split": "right", "ratio": 0.5, "first": {"pane_id": 1}, "second": {"pane_id": 2}},
    ),
    WireCase(
        "nested",
        NESTED,
        {
            "split": "right",
            "ratio": 0.3,
            "first": {"pane_id": 1},
            "second": {
                "split": "down",
                "ratio": 0.5,
                "first": {"pane_id": 2},
                "second": {"pane_id": 3},
            },
        },
    ),
]


@pytest.mark.parametrize("case", WIRES, ids=[c.id for c in WIRES])
def test_to_wire(case: WireCase) -> None:
    """DESIGN Result shapes: `{"pane_id"}` or `{"split", "ratio", "first", "second"}`."""
    assert to_wire(case.tree) == case.wire


class LeavesCase(NamedTuple):
    id: str
    tree: Node
    order: list[int]


LEAVES = [
    LeavesCase("leaf", L1, [1]),
    LeavesCase("split", SIDE, [1, 2]),
    LeavesCase("nested", NESTED, [1, 2, 3]),
]


@pytest.mark.parametrize("case", LEAVES, ids=[c.id for c in LEAVES])
def test_leaves_in_layout_order(case: LeavesCase) -> None:
    """R2.5: snapshot panes are listed first-to-second, depth first."""
    assert list(leaves(case.tree)) == case.order
