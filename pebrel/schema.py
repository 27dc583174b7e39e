"""The protocol's JSON Schema file, and params validation driven by it (FEATURES R1.6, R2.3).

The router validates every request's params against `methods.<name>.params` of
`runtime-api-v1.schema.json`, so the schema and the server cannot drift apart. The validator
covers the keywords the schema uses; jsonschema checks the whole file in the tests.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections import OrderedDict
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from pebrel.errors import CollabCode, ErrorCode, PebrelError

SCHEMA_FILE = Path(__file__).with_name("runtime-api-v1.schema.json")


@cache
def load_schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return loaded


def method_names() -> list[str]:
    return sorted(load_schema()["methods"])


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def _type_ok(value: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES[name])


def resolve(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with its ``$ref`` chain followed to the definition it names."""
    node: Any = schema
    ref = node.get("$ref")
    while ref is not None:
        node = load_schema()
        for part in ref.lstrip("#/").split("/"):
            node = node[part]
        ref = node.get("$ref")
    resolved: dict[str, Any] = node
    return resolved


def _check(value: Any, schema: dict[str, Any], path: str) -> str | None:
    schema = resolve(schema)
    if "anyOf" in schema and all(_check(value, s, path) for s in schema["anyOf"]):
        return f"{path}: does not match any allowed form"
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else types
        if not any(_type_ok(value, n) for n in names):
            return f"{path}: must be {' or '.join(names)}"
    if "const" in schema and value != schema["const"]:
        return f"{path}: must be {schema['const']!r}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{path}: must be one of {', '.join(map(str, schema['enum']))}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{path}: must be a finite number"  # NaN passes every range check
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            return f"{path}: must be >= {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{path}: must be <= {schema['maximum']}"
    if isinstance(value, str):
        if "pattern" in schema and not re.search(schema["pattern"], value):
            return f"{path}: does not match {schema['pattern']}"
        if "minLength" in schema and len(value) < schema["minLength"]:
            return f"{path}: must have at least {schema['minLength']} characters"
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"{path}: must have at most {schema['maxLength']} characters"
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            return f"{path}: must have at least {schema['minItems']} items"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            return f"{path}: must have at most {schema['maxItems']} items"
        items = schema.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(value):
                problem = _check(item, items, f"{path}[{index}]")
                if problem:
                    return problem
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                return f"{path}.{key}: is required"
        for key, item in value.items():
            if key in props:
                problem = _check(item, props[key], f"{path}.{key}")
                if problem:
                    return problem
            elif schema.get("additionalProperties") is False:
                return f"{path}.{key}: unknown field"
    return None


def invalid(method: str, problem: str) -> PebrelError:
    """invalid_params for ``problem`` ("params.<field>: what is wrong"); ``details.field`` names
    the field (its path below params: ``pane_id``, ``keys[2]``), absent for params itself."""
    details: dict[str, Any] = {"method": method, "problem": problem}
    where = problem.split(":", 1)[0]
    if where.startswith("params."):
        details["field"] = where.removeprefix("params.")
    return PebrelError(ErrorCode.INVALID_PARAMS, problem, details)


#: What the links between Pebrel's processes carry (msgpack): integers of 64 bits at most.
INT_MIN, INT_MAX = -(2**63), 2**64 - 1


def unencodable(value: Any, path: str) -> str | None:
    """The first value within ``value`` the processes' links cannot carry, as a problem."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value > INT_MAX:
            return f"{path}: must be <= {INT_MAX} (integers must fit in 64 bits)"
        if value < INT_MIN:
            return f"{path}: must be >= {INT_MIN} (integers must fit in 64 bits)"
    elif isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{path}: must be valid Unicode (it holds a lone surrogate)"
    elif isinstance(value, list):
        for index, item in enumerate(value):
            problem = unencodable(item, f"{path}[{index}]")
            if problem:
                return problem
    elif isinstance(value, dict):
        for key, item in value.items():
            problem = unencodable(key, f"{path} key") or unencodable(item, f"{path}.{key}")
            if problem:
                return problem
    return None


def unencodable_params(
    method: str, params: dict[str, Any], request_id: object = None
) -> PebrelError:
    """invalid_params for params the frontend could not pass on to the router: what the schema
    says of them if it refuses them, else the value out of the links' range, by field (an
    id or a method name the links cannot carry is invalid_request)."""
    for name, value in (("id", request_id), ("method", method)):
        problem = unencodable(value, name)
        if problem:
            return PebrelError(ErrorCode.INVALID_REQUEST, problem)
    try:
        validate_params(method, params)
    except PebrelError as exc:
        return exc
    except RecursionError:
        return invalid(method, "params: nested too deeply")
    problem = unencodable(params, "params") or (
        "params: hold a value out of range (integers must fit in 64 bits, "
        "strings must be valid Unicode)"
    )
    return invalid(method, problem)


#: Params already found valid, keyed with each value's type (True == 1, but a bool is no
#: integer), the least recently used first. Only requests that repeat (polling a pane, waiting
#: on one) gain from it; most keys of a busy runtime never come again (a command's text, an
#: after_seq, a new pane's id) and only pass through. In the soak (#15) the requests that
#: reached the router hit 512 kept keys as often as the 4096 of before (58%); 512 hold about
#: 280 KB, the 4096 held 1.9 MB at their peak and, emptied whenever full, left the
#: allocator's pages at that peak: the router's largest growth.
_VALID_MAX = 512
_valid: OrderedDict[tuple[Any, ...], None] = OrderedDict()


def validate_params(method: str, params: dict[str, Any]) -> None:
    """Raise method_not_found or invalid_params (with `details.problem`) before any action.

    Flat params of scalars that passed lately are remembered, so a client repeating a request
    (polling a pane, say) pays a dict lookup instead of a walk through the schema.
    """
    key: tuple[Any, ...] | None
    try:
        key = (method, *[(name, type(value), value) for name, value in params.items()])
        if key in _valid:
            _valid.move_to_end(key)
            return
    except TypeError:  # a list or object among the values: not hashable, not remembered
        key = None
    spec = load_schema()["methods"].get(method)
    if spec is None:
        raise PebrelError(
            ErrorCode.METHOD_NOT_FOUND, f"unknown method {method!r}", {"method": method}
        )
    problem = _check(params, spec["params"], "params")
    if problem:
        raise invalid(method, problem)
    if key is not None:
        if len(_valid) >= _VALID_MAX:
            _valid.popitem(last=False)
        _valid[key] = None


# ---- the error lines of docs/protocol.md ----------------------------------------------------

#: `<!-- errors: pane.read -->` (or several methods, or `common`) marks where docs/protocol.md
#: shows error lists; the lines after it, up to a blank line, are generated from the schema.
_ERRORS_MARK = re.compile(r"^<!-- errors: ([a-z_. ]+) -->$")
_DOC_WIDTH = 100


def _codes(codes: list[str]) -> str:
    """Codes in their tables' order: the runtime's (ErrorCode), then the collab layer's."""
    order = {str(code): index for index, code in enumerate([*ErrorCode, *CollabCode])}
    return ", ".join(f"`{code}`" for code in sorted(codes, key=order.__getitem__))


def _wrap(text: str, indent: str = "") -> list[str]:
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > _DOC_WIDTH:
            lines.append(line)
            line = indent + word
        else:
            line = f"{line} {word}" if line else word
    return [*lines, line]


def error_lines(names: list[str]) -> list[str]:
    """The generated lines for one mark: a method's list, several methods', or the common."""
    schema = load_schema()
    if names == ["common"]:
        return _wrap(f"Any request may also be answered with {_codes(schema['common_errors'])}.")
    if len(names) == 1:
        return _wrap(f"Errors: {_codes(schema['methods'][names[0]].get('errors', []))}.")
    return [
        "Errors:",
        *(
            line
            for name in names
            for line in _wrap(
                f"- `{name}`: {_codes(schema['methods'][name].get('errors', []))}", "  "
            )
        ),
    ]


def protocol_errors(text: str) -> str:
    """``text`` (docs/protocol.md) with every marked error list generated afresh."""
    out: list[str] = []
    lines = iter(text.split("\n"))
    for line in lines:
        out.append(line)
        mark = _ERRORS_MARK.match(line)
        if mark is None:
            continue
        out += error_lines(mark.group(1).split())
        for rest in lines:  # the old list, up to the paragraph's end
            if not rest:
                out.append(rest)
                break
    return "\n".join(out)


def main(argv: list[str]) -> int:
    """`python -m pebrel.schema --protocol-errors docs/protocol.md`: regenerate its error
    lists in place from the schema."""
    if len(argv) != 2 or argv[0] != "--protocol-errors":
        sys.stderr.write("usage: python -m pebrel.schema --protocol-errors docs/protocol.md\n")
        return 2
    path = Path(argv[1])
    path.write_text(protocol_errors(path.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
