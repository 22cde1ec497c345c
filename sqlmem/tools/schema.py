"""A JSON Schema checker for the subset the memory tools publish.

The schemas in `catalog.py` are what `MemoryTools.specs()` hands to the model AND what
`call()` checks the model's arguments against, so the two can never drift apart. The
subset is small on purpose (type, properties, required, additionalProperties, enum,
minimum/maximum, minLength/maxLength, items, maxItems): every keyword used in a catalog
schema must be one this module knows, which `check_schema` asserts once at import time.
The `jsonschema` package would do the same job, but the core must not depend on it, and
this is a few dozen lines that run in microseconds on the hot path.

A refusal is an `ArgumentError` whose message names the argument and says why, in words
a model can act on ("argument 'top_k' must be at most 50, got 500"); it never echoes
more than a short prefix of the offending value (a model may have sent 10 MB).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["KNOWN_KEYWORDS", "ArgumentError", "check_schema", "validate"]

#: Every keyword a catalog schema may use; the annotation-only ones are not checked.
KNOWN_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "enum",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "items",
        "maxItems",
        "description",
        "default",
    }
)

_TYPE_NAMES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
    type(None): "null",
}


_ARTICLE = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean (true or false)",
    "array": "an array",
    "object": "an object",
}


class ArgumentError(ValueError):
    """A tool call's arguments do not fit the tool's schema; the message says which and
    why."""


def _json_type(value: Any) -> str:
    name = _TYPE_NAMES.get(type(value))
    if name is not None:
        return name
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__


def _fits(value: Any, expected: str) -> bool:
    if expected == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and math.isfinite(value) and value.is_integer()
        )
    if expected == "number":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and math.isfinite(value)
        )
    if expected == "array":
        return isinstance(value, (list, tuple))
    if expected == "object":
        return isinstance(value, Mapping)
    return _json_type(value) == expected


def _shown(value: Any) -> str:
    if isinstance(value, int) and value.bit_length() > 200:  # repr may refuse huge ints
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validate(schema: Mapping[str, Any], value: Any, where: str = "arguments") -> Any:
    """`value` when it fits `schema` (integral floats given for an integer become ints);
    raises `ArgumentError` naming the first argument that does not."""
    expected = schema.get("type")
    if expected is not None:
        types = (expected,) if isinstance(expected, str) else tuple(expected)
        if not any(_fits(value, t) for t in types):
            got = _json_type(value)
            if got == "number" and isinstance(value, float) and not math.isfinite(value):
                got = "a non-finite number"
            wanted = " or ".join(_ARTICLE.get(t, t) for t in types)
            raise ArgumentError(f"{where} must be {wanted}, got {_ARTICLE.get(got, got)}")
        if "integer" in types and isinstance(value, float) and "number" not in types:
            value = int(value)
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(repr(v) for v in schema["enum"])
        raise ArgumentError(f"{where} must be one of {allowed}; got {_shown(value)}")
    if isinstance(value, str):
        _check_length(schema, value, where)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        _check_range(schema, value, where)
    elif isinstance(value, (list, tuple)):
        value = _check_items(schema, value, where)
    elif isinstance(value, Mapping):
        value = _check_object(schema, value, where)
    return value


def _check_length(schema: Mapping[str, Any], value: str, where: str) -> None:
    low = schema.get("minLength")
    if low is not None and len(value) < low:
        raise ArgumentError(
            f"{where} must not be empty" if low == 1 else f"{where} needs {low}+ characters"
        )
    high = schema.get("maxLength")
    if high is not None and len(value) > high:
        raise ArgumentError(f"{where} is {len(value)} characters long; at most {high} allowed")


def _check_range(schema: Mapping[str, Any], value: float, where: str) -> None:
    low = schema.get("minimum")
    if low is not None and value < low:
        raise ArgumentError(f"{where} must be at least {low}, got {_shown(value)}")
    high = schema.get("maximum")
    if high is not None and value > high:
        raise ArgumentError(f"{where} must be at most {high}, got {_shown(value)}")


def _check_items(schema: Mapping[str, Any], value: Any, where: str) -> list[Any]:
    most = schema.get("maxItems")
    if most is not None and len(value) > most:
        raise ArgumentError(f"{where} has {len(value)} items; at most {most} allowed")
    items = schema.get("items")
    if items is None:
        return list(value)
    return [validate(items, item, f"{where}[{i}]") for i, item in enumerate(value)]


def _check_object(
    schema: Mapping[str, Any], value: Mapping[Any, Any], where: str
) -> dict[str, Any]:
    properties: Mapping[str, Any] = schema.get("properties", {})
    top = where == "arguments"
    for name in schema.get("required", ()):
        if name not in value:
            what = f"argument '{name}'" if top else f"{where}.{name}"
            raise ArgumentError(f"missing required {what}")
    checked: dict[str, Any] = {}
    for key, item in value.items():
        sub = properties.get(key) if isinstance(key, str) else None
        if sub is None:
            if schema.get("additionalProperties", True) is False:
                allowed = ", ".join(properties) or "none"
                raise ArgumentError(f"unknown argument {_shown(key)} (allowed: {allowed})")
            checked[str(key)] = item
            continue
        checked[key] = validate(sub, item, f"argument '{key}'" if top else f"{where}.{key}")
    return checked


def check_schema(schema: Mapping[str, Any], where: str = "schema") -> None:
    """Asserts that `schema` uses only keywords `validate` enforces (or mere annotations),
    so a schema the model sees never promises a check that is not made."""
    unknown = set(schema) - KNOWN_KEYWORDS
    if unknown:
        raise AssertionError(f"{where} uses unsupported keywords {sorted(unknown)}")
    for name, sub in schema.get("properties", {}).items():
        check_schema(sub, f"{where}.{name}")
    if "items" in schema:
        check_schema(schema["items"], f"{where}[]")
