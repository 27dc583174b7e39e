"""Hypothesis strategies for a method's params, read from the shipped JSON Schema.

:func:`valid_params` draws params the schema accepts (the keywords the schema's params use:
``type``, ``enum``, ``const``, ``anyOf``, ``$ref``, ranges, lengths, ``pattern``, objects with
``required`` and ``additionalProperties: false``, arrays); :func:`mutated_params` draws params a
hostile client would send instead: a wrong type, an unknown field, a missing required field,
a number out of range or beyond 64 bits, a huge string, control characters and NUL, a lone
surrogate, deep nesting, or params that are no object at all.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

from pebrel.schema import load_schema, resolve

#: Small ranges that hit the runtime's real windows, tabs and panes most of the time.
NEAR = 3
#: Strings drawn for a field without a tighter bound stay short (the runtime is real).
TEXT_MAX = 24
#: JSON values of every kind but the given one, for wrong-type mutations.
SCALARS: dict[str, st.SearchStrategy[Any]] = {
    "integer": st.integers(-5, 5),
    "number": st.floats(-1e6, 1e6, allow_nan=False),
    "string": st.text(max_size=8),
    "boolean": st.booleans(),
    "null": st.none(),
    "array": st.lists(st.integers(0, 3), max_size=3),
    "object": st.dictionaries(st.sampled_from("abc"), st.integers(0, 3), max_size=2),
}


def _integers(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    low = int(schema.get("minimum", -(2**63)))
    high = int(schema.get("maximum", 2**63 - 1))
    return st.one_of(st.integers(low, min(high, low + NEAR)), st.integers(low, high))


def _strings(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    low = int(schema.get("minLength", 0))
    high = min(int(schema.get("maxLength", TEXT_MAX)), max(low, TEXT_MAX))
    if "pattern" in schema:
        return st.from_regex(schema["pattern"], fullmatch=True).filter(
            lambda s: low <= len(s) <= high
        )
    return st.text(st.characters(codec="utf-8"), min_size=low, max_size=high)


def _of_type(name: str, schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    if name == "integer":
        return _integers(schema)
    if name == "number":
        return st.floats(schema.get("minimum", -1e9), schema.get("maximum", 1e9), allow_nan=False)
    if name == "string":
        return _strings(schema)
    if name == "object":
        return _object(schema)
    if name == "array":
        items = schema.get("items", {})
        low = int(schema.get("minItems", 0))
        return st.lists(
            valid(items), min_size=low, max_size=min(int(schema.get("maxItems", 4)), low + 4)
        )
    return SCALARS[name]


def _object(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    props: Mapping[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    return st.fixed_dictionaries(
        {key: valid(sub) for key, sub in props.items() if key in required},
        optional={key: valid(sub) for key, sub in props.items() if key not in required},
    )


def valid(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    """Values ``schema`` accepts."""
    schema = resolve(schema)
    if "anyOf" in schema:
        return st.one_of(*(valid(sub) for sub in schema["anyOf"]))
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    types = schema.get("type")
    if types is None:
        return SCALARS["string"]
    names = [types] if isinstance(types, str) else list(types)
    return st.one_of(*(_of_type(name, schema) for name in names))


def params_schema(method: str, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The method's params schema, with some fields' schemas replaced (``overrides``)."""
    schema = dict(load_schema()["methods"][method]["params"])
    props = dict(schema.get("properties", {}))
    for key, sub in (overrides or {}).items():
        if key in props:
            props[key] = sub
    schema["properties"] = props
    return schema


def valid_params(method: str, overrides: Mapping[str, Any] | None = None) -> st.SearchStrategy[Any]:
    return valid(params_schema(method, overrides))


def _deep(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def _hostile_value(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    """A value a field's schema refuses (or at least does not expect)."""
    schema = resolve(schema)
    types = schema.get("type")
    names = {types} if isinstance(types, str) else set(types or [])
    wrong = [strategy for name, strategy in SCALARS.items() if name not in names]
    if "integer" in names:
        names.add("number")  # 1.0 is an integer to the schema
    choices: list[st.SearchStrategy[Any]] = [
        st.one_of(*wrong),
        st.sampled_from(
            [2**64, -(2**64), 2**70, -1, 0, 1.5, 10**20, math.nan, math.inf, -math.inf]
        ),
        st.sampled_from(["\x00", "a\x1b[31m", "line\nbreak", "\ud800", "\udfff x", "\x7f"]),
        st.just("x" * 100_000),
        st.integers(2, 600).map(_deep),
    ]
    for bound, step in (("minimum", -1), ("maximum", 1)):
        if bound in schema:
            choices.append(st.just(schema[bound] + step))
    if "maxLength" in schema:
        choices.append(st.just("y" * (int(schema["maxLength"]) + 1)))
    return st.one_of(*choices)


@st.composite
def _mutate(draw: st.DrawFn, method: str, overrides: Mapping[str, Any] | None) -> Any:
    schema = params_schema(method, overrides)
    props: Mapping[str, Any] = schema.get("properties", {})
    base: dict[str, Any] = dict(draw(valid(schema)))
    kinds = ["extra", "not_object"]
    if props:
        kinds += ["field", "field", "field"]
    if schema.get("required"):
        kinds.append("missing")
    kind = draw(st.sampled_from(kinds))
    if kind == "not_object":
        return draw(st.one_of(st.lists(st.integers(), max_size=2), st.text(max_size=4)))
    if kind == "extra":
        base[draw(st.sampled_from(["zz", "", "\x00", "pane_id ", "ID"]))] = draw(
            st.one_of(*SCALARS.values())
        )
        return base
    if kind == "missing":
        base.pop(draw(st.sampled_from(sorted(schema["required"]))), None)
        return base
    key = draw(st.sampled_from(sorted(props)))
    base[key] = draw(_hostile_value(props[key]))
    return base


def mutated_params(
    method: str, overrides: Mapping[str, Any] | None = None
) -> st.SearchStrategy[Any]:
    """Params of ``method`` a hostile client would send (mostly refused, sometimes valid)."""
    return _mutate(method, overrides)


#: A short wait keeps pane.wait and agent.wait from parking an example for their default
#: timeout.
SHORT_WAIT = {"type": "integer", "minimum": 0, "maximum": 200}
WAITING_METHODS = ("pane.wait", "agent.wait")


def bounded(method: str, params: Any) -> Any:
    """Wait params that would wait long (no timeout, or a long valid one) wait briefly."""
    if method in WAITING_METHODS and isinstance(params, dict):
        timeout = params.get("timeout_ms")
        long_valid = isinstance(timeout, int | float) and 200 < timeout <= 86_400_000
        if "timeout_ms" not in params or (long_valid and not isinstance(timeout, bool)):
            params["timeout_ms"] = 100
    return params
