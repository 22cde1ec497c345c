"""Metadata filters, compiled once into conditions that every backend evaluates.

A filter `{key: value, ...}` holds for a fact when every entry holds. An entry's value is
either a plain JSON value (the key is present with a typed-equal value, 0.1's equality
filter) or an operator expression: a non-empty mapping whose keys all start with `$`:

- `$eq`, `$ne`: typed JSON equality (`true`, `1`, `1.0` and `"1"` are four values);
- `$gt`, `$gte`, `$lt`, `$lte`: numbers with numbers (integers and floats compare by
  value, exactly), strings with strings (by code point, which is UTF-8 byte order); any
  other pairing, bool included (bool is not a number), never matches;
- `$in`, `$nin`: a list of values, typed-equal to one of them / to none;
- `$exists`: a bool.
Several operators in one mapping all apply. `$ne`, `$nin` and `$exists: false` hold for a
fact that lacks the key; every other operator needs the key. Keys are literal (`"a.b"` is
one key, `"$x"` at the top level is a key, not an operator).

The compiled form is a tuple of `Condition(key, op, arg)` with op one of `_OPS`' values:
`eq` (plain values and `$eq`), `in`/`nin` (`$ne` is `nin` of a one-value list),
`gt`/`gte`/`lt`/`lte` (arg a number or a string), `has`/`lacks` and `never` (an ordering
against another type: nothing matches). `Condition.holds` is the Python predicate (the
in-memory twin, the tests' reference), `conditions_json` the two bound parameters the
SQLite predicate (`sqlite/facts_sql._METADATA`) reads, so the SQL text never depends on
the filter.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NamedTuple

from ..errors import InvalidArgumentError
from .encoding import dumps_json, encode_metadata_json

__all__ = ["Condition", "compile_metadata", "conditions_json", "json_equal"]

#: Operator -> the compiled op (`_operator` checks the argument each one takes).
_OPS = {
    "$eq": "eq",
    "$ne": "nin",
    "$in": "in",
    "$nin": "nin",
    "$gt": "gt",
    "$gte": "gte",
    "$lt": "lt",
    "$lte": "lte",
    "$exists": "has",
}
_ORDERING = frozenset(("gt", "gte", "lt", "lte"))
_ABSENT_HOLDS = frozenset(("nin", "lacks"))


class Condition(NamedTuple):
    """One compiled test on one metadata key; `arg` is decoded JSON (as SQLite reads it)."""

    key: str
    op: str
    arg: Any

    def holds(self, metadata: Mapping[str, Any]) -> bool:
        if self.key not in metadata:
            return self.op in _ABSENT_HOLDS
        have, op, arg = metadata[self.key], self.op, self.arg
        if op == "eq":
            return json_equal(have, arg)
        if op == "in":
            return any(json_equal(have, v) for v in arg)
        if op == "nin":
            return not any(json_equal(have, v) for v in arg)
        if op == "has":
            return True
        if op in _ORDERING:
            if not _comparable(have, arg):
                return False
            if op == "gt":
                return bool(have > arg)
            if op == "gte":
                return bool(have >= arg)
            if op == "lt":
                return bool(have < arg)
            return bool(have <= arg)
        return False  # lacks (the key is there), never


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _comparable(have: Any, arg: Any) -> bool:
    if isinstance(arg, str):
        return isinstance(have, str)
    return _is_number(have)  # the compiler only lets numbers and strings through


def json_equal(a: Any, b: Any) -> bool:
    """Typed JSON equality of two decoded JSON values: same JSON type and value; objects
    equal when they hold the same keys with equal values (key order does not matter),
    arrays when they hold equal values in the same order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(map(json_equal, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def is_operator_expression(value: object) -> bool:
    """A non-empty mapping whose keys all start with `$` (an empty one is the value `{}`)."""
    return (
        isinstance(value, Mapping)
        and bool(value)
        and all(isinstance(k, str) and k.startswith("$") for k in value)
    )


def compile_metadata(
    metadata: Mapping[str, Any], *, literal: bool = False
) -> tuple[Condition, ...]:
    """The conditions of a metadata filter, or InvalidArgumentError naming the key.

    `metadata` is the caller's mapping with str keys (checked by the caller). Values go
    through the stored JSON encoding and back, so the Python predicate sees exactly the
    JSON types SQLite will see (a tuple becomes a list, a float stays a float).
    `literal`: every value is a plain value, operators included (`search_by_metadata`).
    """
    text = encode_metadata_json(dict(metadata), "metadata")
    decoded: dict[str, Any] = json.loads(text)
    out: list[Condition] = []
    for key, original in metadata.items():
        value = decoded[key]
        if literal or not is_operator_expression(original):
            if (
                not literal
                and isinstance(original, Mapping)
                and any(isinstance(k, str) and k.startswith("$") for k in original)
            ):
                raise InvalidArgumentError(
                    f"metadata[{key!r}] mixes operators ($...) and plain keys; an operator "
                    "expression holds operators only (to match a literal '$' key, "
                    "use {'$eq': {...}})"
                )
            out.append(Condition(key, "eq", value))
            continue
        for op, arg in value.items():
            out.append(_operator(key, op, arg, original[op]))
    return tuple(out)


def _operator(key: str, op: str, arg: Any, original: Any) -> Condition:
    compiled = _OPS.get(op)
    if compiled is None:
        raise InvalidArgumentError(
            f"metadata[{key!r}]: unknown operator {op!r}; expected one of {', '.join(_OPS)}"
        )
    if op == "$eq":
        return Condition(key, compiled, arg)
    if op == "$ne":
        return Condition(key, compiled, [arg])  # nin of one value
    if op in ("$in", "$nin"):
        if not isinstance(original, (list, tuple)):
            raise InvalidArgumentError(
                f"metadata[{key!r}][{op!r}] must be a list of values, got {type(original).__name__}"
            )
        return Condition(key, compiled, arg)
    if op == "$exists":
        if not isinstance(original, bool):
            raise InvalidArgumentError(
                f"metadata[{key!r}]['$exists'] must be true or false, got {type(original).__name__}"
            )
        return Condition(key, "has" if arg else "lacks", None)
    if isinstance(arg, str) or _is_number(arg):
        return Condition(key, compiled, arg)
    return Condition(key, "never", None)  # orders only numbers and strings


def conditions_json(conditions: tuple[Condition, ...]) -> tuple[str, str]:
    """The two bound parameters of the SQL predicate: the equalities as one JSON object
    `{key: value}` (a key has at most one: a plain value or one `$eq`), and the other
    conditions as `[[key, op, arg], ...]`."""
    equal = {c.key: c.arg for c in conditions if c.op == "eq"}
    others = [list(c) for c in conditions if c.op != "eq"]
    return dumps_json(equal), dumps_json(others)
