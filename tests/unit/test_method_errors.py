"""A method answers only the error codes its schema entry lists (R2.2, R1.6).

Each method's error list lives in the schema only (`methods.<name>.errors`, plus
`common_errors`, which any request may get from the transport and the dispatch). These tests
read the router's source with a static scan (tests/unit/error_scan.py: it follows every
reference from a handler, resolved exactly, and knows which `try` blocks swallow) and find each
code a method's handler can raise. They fail when a handler can raise a code its schema entry
does not list, when an entry lists a code no code path raises, and when the scan meets a call it
cannot follow whose name could raise. Where the scan finds a path that cannot happen at run
time, UNREACHABLE says why and the schema does not list the code.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from pebrel.router.methods import METHODS
from pebrel.schema import load_schema
from tests.unit.error_scan import (
    AS_DATA,
    FUTURE_FAILURES,
    RECEIVERS,
    SWALLOWED,
    Scanner,
)

pytestmark = pytest.mark.timeout(60)

#: A code the scan finds a path to, that cannot happen, and why (the schema does not list it).
UNREACHABLE: Mapping[tuple[str, str], str] = {
    ("agent.fork", "input_in_progress"): "the start command is typed into the tab the fork has "
    "just opened, before any other request can reach that pane",
}
#: Codes a method's stream may end with, sent by the adapter rather than the handler.
STREAM_ERRORS: Mapping[str, set[str]] = {"events.subscribe": {"slow_consumer"}}
#: Codes the dispatch answers for a method before its handler runs: it places the caller of a
#: method only the local user may call (router/handlers/user_input.py).
DISPATCH_ERRORS: Mapping[str, set[str]] = {"pane.user_input": {"caller_not_user"}}


@pytest.fixture(scope="module")
def scanner() -> Scanner:
    return Scanner()


def qualified(name: str) -> str:
    handler = METHODS[name]
    return f"{handler.__module__}.{handler.__qualname__}"


def listed(name: str) -> set[str]:
    schema = load_schema()
    return set(schema["methods"][name].get("errors", [])) | set(schema["common_errors"])


@pytest.mark.parametrize("name", sorted(METHODS))
def test_a_method_raises_only_the_codes_its_schema_lists(scanner: Scanner, name: str) -> None:
    """R2.2: every code the handler's code paths raise is in methods.<name>.errors (or common)."""
    unreachable = {code for (method, code) in UNREACHABLE if method == name}
    assert scanner.codes(qualified(name)) - unreachable - listed(name) == set()


@pytest.mark.parametrize("name", sorted(METHODS))
def test_a_method_lists_no_code_it_cannot_raise(scanner: Scanner, name: str) -> None:
    """The schema's list is exact: each listed code has a code path in the method's own work
    (invalid_params is listed only where the handler checks more than the schema)."""
    common = set(load_schema()["common_errors"]) - {"invalid_params"}
    specific = set(load_schema()["methods"][name].get("errors", [])) - common
    beside = STREAM_ERRORS.get(name, set()) | DISPATCH_ERRORS.get(name, set())
    assert specific - scanner.codes(qualified(name)) - beside == set()


def test_every_call_on_an_unknown_receiver_raises_nothing(scanner: Scanner) -> None:
    """No call the scan cannot follow could raise (else RECEIVERS needs its receiver)."""
    reached: set[str] = set()
    for name in METHODS:
        reached |= scanner.reachable(qualified(name))
    unknown = sorted(
        f"{function}: .{attr} at {where}"
        for function in reached
        for attr, where in scanner.functions[function].unknown
    )
    assert unknown == []


def test_the_common_codes_are_what_transport_and_dispatch_answer(scanner: Scanner) -> None:
    """R2.2: `common_errors` holds what the adapter and the envelope answer, and the dispatch
    around every handler (params validation, a stopping runtime, an unexpected failure)."""
    around: set[str] = set()
    for name in ("pebrel.router.app.RouterApp.dispatch", "pebrel.schema.validate_params"):
        for reached in scanner.reachable(name):
            around |= scanner.functions[reached].built
    for function in scanner.functions.values():
        if function.name.startswith(("pebrel.router.adapter.", "pebrel.envelope.")):
            around |= function.built
    around.discard("slow_consumer")  # ends an event stream; events.subscribe lists it
    around -= {code for codes in DISPATCH_ERRORS.values() for code in codes}  # listed by them
    assert set(load_schema()["common_errors"]) == around


def test_every_name_the_tables_give_is_scanned(scanner: Scanner) -> None:
    """A table naming a function that moved or was renamed would silently stop counting."""
    named = {
        *FUTURE_FAILURES,
        *(source for sources in FUTURE_FAILURES.values() for source in sources),
        *(name for edge in SWALLOWED for name in edge),
        *AS_DATA,
        *RECEIVERS.values(),
    }
    assert {name for name in named if name not in scanner.functions} - scanner.classes == set()
    assert {method for method, _ in UNREACHABLE} <= set(METHODS)


def test_the_scan_follows_references_and_try_blocks(scanner: Scanner) -> None:
    """The scan itself: a helper's code reaches its callers; a swallowing try hides it."""
    pane_read = scanner.codes("pebrel.router.handlers.pane_io.read")
    assert {"target_not_found", "ambiguous_target", "runtime_timeout"} <= pane_read
    closing = scanner.codes("pebrel.router.runtime.Runtime.stop_pane_processes")
    assert "runtime_timeout" not in closing  # its request's failure is caught: kill instead
    assert scanner.codes("pebrel.router.handlers.orchestrate.Workflow._ready") == set()
