"""Each method's params TypedDict says what the schema says (R1.6, R2.3).

Handlers read their params through the TypedDicts of pebrel/method_params.py, after the router
has validated the request against `methods.<name>.params`. These tests keep the two in step:
every method of the table has a handler typed with a TypedDict whose keys, required keys and
value types are the schema's, recursively (nested objects, and each alternative of an
`anyOf`). Types map as JSON Schema reads them: str/int/float/bool/None to
string/integer/number/boolean/null, list[X] to an array of X, a Literal to an enum or const of
exactly its values; a string enum may also be typed `str`.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypedDict, Union, get_args, get_origin
from typing import get_type_hints as hints_of

import pytest

from pebrel import method_params
from pebrel.router.methods import METHODS
from pebrel.schema import load_schema

pytestmark = pytest.mark.timeout(30)

_JSON_TYPES: Mapping[object, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


def resolve(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    while "$ref" in schema:
        node: Any = load_schema()
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def alternatives(schema: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The forms a value may take: each `anyOf` branch, each of several `type`s."""
    schema = resolve(schema)
    if "anyOf" in schema:
        return [form for branch in schema["anyOf"] for form in alternatives(branch)]
    types_ = schema.get("type")
    if isinstance(types_, list):
        return [{**schema, "type": name} for name in types_]
    return [schema]


def members(annotation: Any) -> list[Any]:
    if get_origin(annotation) in (Union, types.UnionType):
        return list(get_args(annotation))
    return [annotation]


def is_typeddict(annotation: Any) -> bool:
    return (
        isinstance(annotation, type)
        and issubclass(annotation, dict)
        and hasattr(annotation, "__total__")
    )


def fields_of(typed: type) -> dict[str, tuple[Any, bool]]:
    """Each key's type and whether it is required (NotRequired read from the hints: on 3.11,
    `__required_keys__` is wrong under `from __future__ import annotations`)."""
    found: dict[str, tuple[Any, bool]] = {}
    for key, hint in hints_of(typed, include_extras=True).items():
        optional = get_origin(hint) is NotRequired
        found[key] = (get_args(hint)[0] if optional else hint, not optional)
    return found


def mismatch(annotation: Any, schema: Mapping[str, Any], path: str) -> list[str]:
    """What differs between one (non-union) Python type and one schema form."""
    schema = resolve(schema)
    if is_typeddict(annotation):
        if schema.get("type") != "object" or schema.get("additionalProperties") is not False:
            return [f"{path}: {annotation.__name__} is not a closed object in the schema"]
        fields = fields_of(annotation)
        props: Mapping[str, Any] = schema.get("properties", {})
        problems = []
        if set(fields) != set(props):
            problems.append(f"{path}: keys {sorted(fields)} != schema's {sorted(props)}")
        required = {key for key, (_, needed) in fields.items() if needed}
        if required != set(schema.get("required", [])):
            problems.append(
                f"{path}: required {sorted(required)} != schema's {sorted(schema['required'])}"
            )
        for key in set(fields) & set(props):
            problems += compare(fields[key][0], props[key], f"{path}.{key}")
        return problems
    if get_origin(annotation) is Literal:
        values = schema.get("enum", [schema["const"]] if "const" in schema else None)
        if values is None or sorted(map(str, values)) != sorted(map(str, get_args(annotation))):
            return [f"{path}: {annotation} != schema's enum {values}"]
        return []
    if get_origin(annotation) is list:
        if schema.get("type") != "array":
            return [f"{path}: a list, but the schema says {schema.get('type')}"]
        return compare(get_args(annotation)[0], schema["items"], f"{path}[]")
    expected = _JSON_TYPES.get(annotation)
    if expected is None:
        return [f"{path}: no JSON type for {annotation!r}"]
    if expected == "string" and "enum" in schema:
        return [] if all(isinstance(v, str) for v in schema["enum"]) else [f"{path}: enum"]
    if schema.get("type") != expected:
        return [f"{path}: {annotation.__name__} != schema's {schema.get('type')}"]
    return []


def compare(annotation: Any, schema: Mapping[str, Any], path: str) -> list[str]:
    """Each member of a union matches one schema form and each form is matched by one."""
    forms = alternatives(schema)
    kinds = members(annotation)
    if len(kinds) == 1 and len(forms) == 1:
        return mismatch(kinds[0], forms[0], path)
    unmatched = list(forms)
    problems = []
    for kind in kinds:
        fits = [form for form in unmatched if not mismatch(kind, form, path)]
        if len(fits) == 1:
            unmatched.remove(fits[0])
        elif fits:
            problems.append(f"{path}: {kind!r} matches {len(fits)} of the schema's forms")
        else:  # say how the nearest form differs
            nearest = min(forms, key=lambda form: len(mismatch(kind, form, path)))
            problems += [f"{path} ({kind!r}): {p}" for p in mismatch(kind, nearest, path)]
    if unmatched and not problems:
        problems.append(f"{path}: {len(unmatched)} schema forms have no Python type")
    return problems


def params_type(name: str) -> Any:
    handler = METHODS[name]
    hint = hints_of(handler).get("params")
    assert hint is not None, f"{name}: {handler.__qualname__} does not type its params"
    return hint


#: The schema's methods the router runs itself: `collab.*` ones are forwarded to the collab
#: service (router/collab_link.py; #16), which checks its own params.
ROUTER_METHODS = sorted(name for name in load_schema()["methods"] if not name.startswith("collab."))


def test_every_schema_method_has_a_handler() -> None:
    """R1.6: the method table and the schema name the same methods, but for the collab
    service's (#16)."""
    assert sorted(METHODS) == ROUTER_METHODS
    assert not any(name.startswith("collab.") for name in METHODS)


@pytest.mark.parametrize("name", ROUTER_METHODS)
def test_params_type_matches_the_schema(name: str) -> None:
    """R2.3: the handler's params TypedDict has the schema's keys, required keys and types."""
    typed = params_type(name)
    assert is_typeddict(typed), f"{name}: params typed {typed!r}, not a TypedDict"
    assert typed.__module__ == method_params.__name__
    assert mismatch(typed, load_schema()["methods"][name]["params"], name) == []


def test_the_check_sees_a_wrong_key_a_wrong_requirement_and_a_wrong_type() -> None:
    """The comparison itself: each kind of drift is reported."""
    schema = load_schema()["methods"]["pane.prompt"]["params"]

    class ExtraKey(TypedDict):
        window_id: NotRequired[int]
        pane_id: int
        text: str
        submit: NotRequired[bool]
        echo: NotRequired[bool]

    class OptionalText(TypedDict):
        window_id: NotRequired[int]
        pane_id: int
        text: NotRequired[str]
        submit: NotRequired[bool]

    class IntText(TypedDict):
        window_id: NotRequired[int]
        pane_id: int
        text: int
        submit: NotRequired[bool]

    for wrong in (ExtraKey, OptionalText, IntText):
        assert mismatch(wrong, schema, "pane.prompt") != [], wrong.__name__
    assert mismatch(method_params.PanePromptParams, schema, "pane.prompt") == []


def test_every_typed_dict_of_the_module_is_used() -> None:
    """No params type is left over from a method that changed."""
    used: set[str] = set()

    def walk(annotation: Any) -> None:
        for kind in members(annotation):
            if is_typeddict(kind) and kind.__name__ not in used:
                used.add(kind.__name__)
                for hint, _ in fields_of(kind).values():
                    walk(hint)
            elif get_origin(kind) is list:
                walk(get_args(kind)[0])

    for name in METHODS:
        walk(params_type(name))
    defined = {
        name
        for name, value in inspect.getmembers(method_params, is_typeddict)
        if value.__module__ == method_params.__name__
    }
    assert defined - used == {"LegacyAttachParams", "PaneTarget", "AgentTarget"}
