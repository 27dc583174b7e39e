"""A static scan of the router's source: which error codes each function can raise.

tests/unit/test_method_errors.py uses it to hold every method to its schema's error list.

- A function raises a code when it builds `PebrelError(ErrorCode.X, ...)` (every error in the
  router is built that way; the scan asserts it), and everything the functions it refers to
  raise: a call, or a function passed on (a callback, a task), counts alike.
- References are followed exactly: names defined in the module or imported from a scanned
  module, `module.function`, `Class(...)` (its `__init__`), `self.method`, and a method called
  on a receiver whose name says its class (`rt` is the Runtime, `rt.state` the RouterState,
  ...: RECEIVERS; the router's code spells them consistently). Calls on other receivers are
  recorded, so that a test can fail on one whose name some raising function has.
- A `try` whose handler catches PebrelError (or Exception, or everything) and raises nothing
  swallows what its body raises. A handler that raises anything re-raises all of it.
- An error built for data is not raised: one made into `.to_wire()`, one a function of AS_DATA
  makes (orchestrate's receipt), one put into a future (`set_exception`): that one counts for
  the functions FUTURE_FAILURES says await the future.
- SWALLOWED names a task whose failure becomes data (orchestrate's steps); FOREIGN names
  receivers of calls into other libraries (sockets, events) whose names match the router's.
"""

from __future__ import annotations

import ast
import importlib.util
import pkgutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pebrel
from pebrel.errors import ErrorCode

#: The class of a method's receiver, by the receiver's name (the last name before the dot).
RECEIVERS: Mapping[str, str] = {
    "rt": "pebrel.router.runtime.Runtime",
    "state": "pebrel.router.state.RouterState",
    "registry": "pebrel.router.agents.AgentRegistry",
    "delegations": "pebrel.router.delegation.Delegations",
    "forkserver": "pebrel.router.forkserver.ForkServer",
    "flow": "pebrel.router.handlers.orchestrate.Workflow",
}
#: Receivers (by name) of calls into other libraries, never into the scanned code.
FOREIGN = frozenset({"gone", "channel", "ours", "theirs", "proc"})  # proc: a Popen
#: A function awaiting futures that the functions after it fail (`set_exception`).
FUTURE_FAILURES: Mapping[str, tuple[str, ...]] = {
    # A worker that exits before it connects fails `link.started` (action_failed); one that
    # exits, or does not answer in time, fails its pending requests.
    "pebrel.router.links.connected": ("pebrel.router.links.fail_pending",),
    "pebrel.router.links.request": (
        "pebrel.router.links.fail_pending",
        "pebrel.router.links._expire",
    ),
    # The fork server's answer, or its exit, fails the spawn's future.
    "pebrel.router.forkserver.ForkServer._spawn": (
        "pebrel.router.forkserver.ForkServer._handle",
        "pebrel.router.forkserver.ForkServer._gone",
    ),
}
#: References whose failures do not propagate to the caller.
SWALLOWED: frozenset[tuple[str, str]] = frozenset(
    {
        # Each step runs as a task; its failure becomes the step's receipt entry.
        (
            "pebrel.router.handlers.orchestrate.orchestrate",
            "pebrel.router.handlers.orchestrate.Workflow.run_op",
        ),
    }
)
#: Functions that make an exception into an answer's error object (never raised).
AS_DATA = frozenset({"pebrel.router.handlers.orchestrate.wire"})
_BROAD = frozenset({"PebrelError", "Exception", "BaseException"})


@dataclass
class Function:
    name: str
    raises: set[str] = field(default_factory=set)
    #: Every code it builds, raised or not (the transport's and the dispatch's answers).
    built: set[str] = field(default_factory=set)
    #: Codes of errors it fails futures with (see FUTURE_FAILURES).
    fails: set[str] = field(default_factory=set)
    refs: set[str] = field(default_factory=set)
    #: (attribute, where) of calls on receivers RECEIVERS does not know.
    unknown: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    #: Local name -> the qualified name it stands for (a module, or module.attribute).
    names: dict[str, str] = field(default_factory=dict)


def scanned_modules() -> dict[str, Module]:
    """pebrel's own modules and the router's (the CLI, the workers and the collab service
    never run in the router; the collab service answers CollabCodes of its own, #16)."""
    found: dict[str, Module] = {}
    for info in pkgutil.walk_packages(pebrel.__path__, "pebrel."):
        if info.name.startswith(("pebrel.cli", "pebrel.workers", "pebrel.collab")):
            continue
        spec = importlib.util.find_spec(info.name)
        if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
            continue
        path = Path(spec.origin)
        found[info.name] = Module(info.name, path, ast.parse(path.read_text(encoding="utf-8")))
    for module in found.values():
        is_package = module.path.name == "__init__.py"
        package = module.name if is_package else module.name.rpartition(".")[0]
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    module.names[alias.asname or alias.name.partition(".")[0]] = (
                        alias.name if alias.asname else alias.name.partition(".")[0]
                    )
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parent, *([base] if base else [])])
                for alias in node.names:
                    module.names[alias.asname or alias.name] = f"{base}.{alias.name}"
        for node in module.tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                module.names[node.name] = f"{module.name}.{node.name}"
    return found


class Scanner:
    def __init__(self) -> None:
        self.modules = scanned_modules()
        self.functions: dict[str, Function] = {}
        self.classes: set[str] = set()
        for module in self.modules.values():
            self.scan_body(module, module.tree.body, prefix=module.name, cls=None)
        raising = {f.name.rpartition(".")[2] for f in self.functions.values() if f.raises}
        for function in self.functions.values():
            function.unknown = [(a, w) for a, w in function.unknown if a in raising]

    def scan_body(self, module: Module, body: list[ast.stmt], prefix: str, cls: str | None) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                self.classes.add(f"{prefix}.{node.name}")
                self.scan_body(module, node.body, f"{prefix}.{node.name}", f"{prefix}.{node.name}")
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.scan_function(module, node, f"{prefix}.{node.name}", cls, {})

    def scan_function(
        self,
        module: Module,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        name: str,
        cls: str | None,
        local: dict[str, str],
    ) -> None:
        function = Function(name)
        self.functions[name] = function
        # Functions defined inside are functions of their own, known here by their name.
        nested = {
            inner.name: f"{name}.<locals>.{inner.name}"
            for inner in walk_own(node)
            if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef) and inner is not node
        }
        scope = {**local, **nested}
        for inner in walk_own(node):
            if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef) and inner is not node:
                self.scan_function(module, inner, scope[inner.name], cls, scope)
        for child in node.body:
            self.visit(module, function, child, cls, scope, function.raises)

    def visit(
        self,
        module: Module,
        function: Function,
        node: ast.AST,
        cls: str | None,
        scope: dict[str, str],
        sink: set[str] | None,
    ) -> None:
        """Note what ``node`` raises and refers to; a code built goes to ``sink`` (the
        function's raises, its futures' failures, or nowhere for an error made into data)."""
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return  # scanned on its own
        if isinstance(node, ast.Try) and any(swallows(h) for h in node.handlers):
            function.built |= {code for part in node.body for code in built_in(part)}
            for part in (*node.handlers, *node.orelse, *node.finalbody):
                self.visit(module, function, part, cls, scope, sink)
            return
        if isinstance(node, ast.Call) and is_name(node.func, "PebrelError") and node.args:
            code = node.args[0]
            assert isinstance(code, ast.Attribute) and is_name(code.value, "ErrorCode"), (
                f"{function.name}: a PebrelError whose code is not ErrorCode.<NAME>"
            )
            function.built.add(ErrorCode[code.attr].value)
            if sink is not None:
                sink.add(ErrorCode[code.attr].value)
        if isinstance(node, ast.Attribute) and node.attr == "to_wire":
            sink = None  # an error object for an answer's data, not raised
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "set_exception":
                sink = function.fails
            elif self.attribute(module, function, node.func, cls) is None and not foreign(
                node.func.value
            ):
                function.unknown.append((node.func.attr, f"{module.path.name}:{node.lineno}"))
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            target = scope.get(node.id) or module.names.get(node.id)
            if target is not None:
                function.refs.add(target)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            self.attribute(module, function, node, cls)
        for child in ast.iter_child_nodes(node):
            self.visit(module, function, child, cls, scope, sink)

    def attribute(
        self, module: Module, function: Function, node: ast.Attribute, cls: str | None
    ) -> str | None:
        """Add what ``receiver.attr`` names, if its receiver is known; return it."""
        receiver = node.value
        if isinstance(receiver, ast.Name) and receiver.id in module.names:
            target = f"{module.names[receiver.id]}.{node.attr}"
            function.refs.add(target)
            return target
        last = (
            receiver.id
            if isinstance(receiver, ast.Name)
            else receiver.attr
            if isinstance(receiver, ast.Attribute)
            else None
        )
        owner = cls if last == "self" else RECEIVERS.get(last or "")
        if owner is None:
            return None
        function.refs.add(f"{owner}.{node.attr}")
        return f"{owner}.{node.attr}"

    def resolve(self, ref: str) -> str | None:
        """A reference as a scanned function (a class stands for its __init__)."""
        if ref in self.classes:
            ref = f"{ref}.__init__"
        return ref if ref in self.functions else None

    def codes(self, name: str) -> set[str]:
        """Every code the function ``name`` can raise, through what it refers to."""
        found: set[str] = set()
        for reached in self.reachable(name):
            found |= self.functions[reached].raises
            for source in FUTURE_FAILURES.get(reached, ()):
                found |= self.functions[source].fails
        return found

    def reachable(self, name: str) -> set[str]:
        seen: set[str] = set()
        todo = [name]
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            for ref in self.functions[current].refs:
                target = self.resolve(ref)
                if (
                    target is not None
                    and target not in AS_DATA
                    and (current, target) not in SWALLOWED
                ):
                    todo.append(target)
        return seen


def walk_own(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function, not descending into the functions defined inside it."""
    for child in ast.iter_child_nodes(node):
        yield child
        if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield from walk_own(child)


def built_in(node: ast.AST) -> Iterator[str]:
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call) and is_name(inner.func, "PebrelError") and inner.args:
            code = inner.args[0]
            if isinstance(code, ast.Attribute):
                yield ErrorCode[code.attr].value


def foreign(receiver: ast.expr) -> bool:
    name = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", None)
    return name in FOREIGN


def is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def swallows(handler: ast.ExceptHandler) -> bool:
    """Catches every PebrelError and raises nothing (a bare `raise` re-raises)."""
    caught = handler.type
    names = (
        {"BaseException"}
        if caught is None
        else {
            e.id
            for e in (caught.elts if isinstance(caught, ast.Tuple) else [caught])
            if isinstance(e, ast.Name)
        }
    )
    return bool(names & _BROAD) and not any(isinstance(n, ast.Raise) for n in ast.walk(handler))
