"""The router's dependencies point one way: no import cycle runs through a router module.

Every import statement counts, wherever it stands: at the top, inside a function (a deferred
import hides a cycle, it does not remove it) or under TYPE_CHECKING (the types then depend on
each other as much as the code would). STYLE "Shape": dependencies point inward.
"""

from __future__ import annotations

import ast
import importlib.util
import pkgutil
from pathlib import Path

import pytest

import pebrel

pytestmark = pytest.mark.timeout(30)


def modules() -> dict[str, Path]:
    """Every module of the installed package, by the import system's own lookup (the repo's
    folders install as pebrel.router, pebrel.workers and pebrel.cli)."""
    found: dict[str, Path] = {"pebrel": Path(str(pebrel.__file__))}
    for info in pkgutil.walk_packages(pebrel.__path__, "pebrel."):
        spec = importlib.util.find_spec(info.name)
        if spec is not None and spec.origin is not None and spec.origin.endswith(".py"):
            found[info.name] = Path(spec.origin)
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([base] if base else [])])
            for alias in node.names:
                target = f"{base}.{alias.name}"
                if target in known:
                    found.add(target)
                elif base in known:
                    found.add(base)
    found.discard(name)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_runs_through_the_router() -> None:
    known = modules()
    assert "pebrel.router.handlers.agent" in known
    graph = {name: imports(name, path, known) for name, path in known.items()}
    through_router = [c for c in cycles(graph) if any(n.startswith("pebrel.router") for n in c)]
    assert through_router == []


def test_the_cycle_check_sees_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
