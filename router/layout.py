"""A tab's binary split tree: pure functions over immutable nodes (DESIGN "Result shapes")."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pebrel.model import Direction


@dataclass(frozen=True, slots=True)
class Leaf:
    pane_id: int


@dataclass(frozen=True, slots=True)
class Split:
    direction: Direction
    ratio: float
    first: Node
    second: Node


Node = Leaf | Split


def leaves(node: Node) -> Iterator[int]:
    if isinstance(node, Leaf):
        yield node.pane_id
    else:
        yield from leaves(node.first)
        yield from leaves(node.second)


def split_leaf(node: Node, target: int, new_pane: int, direction: Direction) -> Node:
    """Replace leaf `target` by a split whose second half is the new pane."""
    if isinstance(node, Leaf):
        if node.pane_id == target:
            return Split(direction, 0.5, node, Leaf(new_pane))
        return node
    return Split(
        node.direction,
        node.ratio,
        split_leaf(node.first, target, new_pane, direction),
        split_leaf(node.second, target, new_pane, direction),
    )


def remove_leaf(node: Node, target: int) -> Node | None:
    """The tree without leaf `target` (its sibling takes the parent's place)."""
    if isinstance(node, Leaf):
        return None if node.pane_id == target else node
    first = remove_leaf(node.first, target)
    second = remove_leaf(node.second, target)
    if first is None:
        return second
    if second is None:
        return first
    return Split(node.direction, node.ratio, first, second)


def sizes(node: Node, cols: int, rows: int) -> dict[int, tuple[int, int]]:
    """Cols and rows of every pane when the tab is `cols` x `rows` (headless: no borders)."""
    out: dict[int, tuple[int, int]] = {}

    def walk(n: Node, c: int, r: int) -> None:
        if isinstance(n, Leaf):
            out[n.pane_id] = (max(c, 1), max(r, 1))
            return
        total = c if n.direction == "right" else r
        first = min(max(round(total * n.ratio), 1), max(total - 1, 1))
        second = max(total - first, 1)
        if n.direction == "right":
            walk(n.first, first, r)
            walk(n.second, second, r)
        else:
            walk(n.first, c, first)
            walk(n.second, c, second)

    walk(node, cols, rows)
    return out


def to_wire(node: Node) -> dict[str, Any]:
    if isinstance(node, Leaf):
        return {"pane_id": node.pane_id}
    return {
        "split": node.direction,
        "ratio": node.ratio,
        "first": to_wire(node.first),
        "second": to_wire(node.second),
    }


def parent_split(node: Node, target: int) -> Split | None:
    """The split whose direct child is leaf `target` (None if it is the root)."""
    if isinstance(node, Leaf):
        return None
    for child in (node.first, node.second):
        if isinstance(child, Leaf) and child.pane_id == target:
            return node
    return parent_split(node.first, target) or parent_split(node.second, target)


def set_ratio(node: Node, target: int, share: float) -> Node:
    """Give leaf `target` the share `share` of its direct parent split."""
    if isinstance(node, Leaf):
        return node
    if isinstance(node.first, Leaf) and node.first.pane_id == target:
        return Split(node.direction, share, node.first, node.second)
    if isinstance(node.second, Leaf) and node.second.pane_id == target:
        return Split(node.direction, round(1 - share, 6), node.first, node.second)
    return Split(
        node.direction,
        node.ratio,
        set_ratio(node.first, target, share),
        set_ratio(node.second, target, share),
    )
