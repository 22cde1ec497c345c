"""LangGraph store filters: their meaning in Python, and the part SQL runs.

A filter `{key: want, ...}` holds for an item when every entry holds. The key is a literal
key of the value when the value has it, else a dotted path into nested objects
("user.access-level"); absent is None. `want`, as LangGraph's stores read it:
- a mapping with `$` keys: operators, all of which hold: `$eq`, `$ne` (Python equality:
  `1 == 1.0 == True`, as LangGraph's InMemoryStore and SqliteStore compare), `$gt $gte
  $lt $lte` (numbers with numbers, strings with strings; an ordering against anything
  else never holds rather than raising);
- another mapping: the value is an object matching it key by key (recursively, extra keys
  allowed); a list: a list of as many elements, each matching;
- anything else: equal.

`compile_filter` splits a filter into the conditions SQL evaluates exactly
(`sqlmem.sqlite.frameworks.kv_search`: scalar equality and the operators on scalars) and the
entries left to `matches` (nested objects, lists, integers past 2**53 where SQLite's
doubles would round). Filtering in SQL lets a search skip decoding items that fail, and
page in SQL when nothing is left for Python.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from ..errors import InvalidArgumentError
from ..rules.encoding import dumps_json

__all__ = ["CompiledFilter", "at", "compile_filter", "matches", "single_equality"]

#: (SQL conditions as bound JSON, the entries Python checks).
CompiledFilter = tuple[str, dict[str, Any]]

_BAD_KEY = re.compile(r"""['"\\\[\]$*\x00-\x1f\x7f]""")
_ORDER = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}
_EXACT_INT = 2**53  # SQLite compares JSON numbers past this as doubles


def compile_filter(conditions: Any) -> CompiledFilter:
    """Check a filter and split it (see the module's docstring). A key is a field name or
    a dotted path, so characters no JSON path label holds (quotes, brackets, `$`, `*`,
    backslash, control characters) mark a malformed key: refused ("Invalid filter key",
    as LangGraph's stores refuse it) rather than matched against nothing."""
    if conditions is None:
        return "[]", {}
    if not isinstance(conditions, Mapping):
        raise InvalidArgumentError(f"filter must be a mapping, not {type(conditions).__name__}")
    sql: list[list[Any]] = []
    rest: dict[str, Any] = {}
    for key, want in conditions.items():
        if not isinstance(key, str) or not key or _BAD_KEY.search(key):
            raise InvalidArgumentError(
                f"Invalid filter key: {key!r:.80}; a filter key is a field name or a "
                "dotted path (no quotes, brackets, '$', '*', backslash or control characters)"
            )
        compiled = _compile_entry(want)
        if compiled is None:
            rest[key] = want
            continue
        paths = ['$."' + key + '"', "$" + "".join('."' + part + '"' for part in key.split("."))]
        sql.extend([*paths, op, arg] for op, arg in compiled)
    return dumps_json(sql), rest


def single_equality(conditions: Any) -> tuple[str, str | int | float] | None:
    """(JSON path, value) when a filter `compile_filter` accepted is one equality on a
    top-level field with a string or exact number (`{"kind": 3}`, `{"kind": {"$eq":
    "a"}}`): `SQLiteKVSearch.page_equal` runs it faster. None otherwise."""
    if not isinstance(conditions, Mapping) or len(conditions) != 1:
        return None
    ((key, want),) = conditions.items()
    if "." in key:  # a dotted path falls back to nested objects: the general statement
        return None
    if _is_operators(want):
        if len(want) != 1 or "$eq" not in want:
            return None
        want = want["$eq"]
    compiled = _equality("eq", want) if not isinstance(want, (dict, list, tuple)) else None
    if compiled is None or compiled[0][0] == "eq_null":
        return None
    return '$."' + key + '"', compiled[0][1]


def _compile_entry(want: Any) -> list[tuple[str, Any]] | None:
    """The (op, arg) conditions of one entry, or None when SQL cannot say it exactly."""
    if not _is_operators(want):
        return _equality("eq", want)
    out: list[tuple[str, Any]] = []
    for op, arg in want.items():
        if op == "$eq" or op == "$ne":
            found = _equality(op[1:], arg)
        elif op in _ORDER:
            found = _ordering(op[1:], arg)
        else:
            raise InvalidArgumentError(f"filter: unknown operator {op!r}")
        if found is None:
            return None
        out.extend(found)
    return out


def _equality(op: str, arg: Any) -> list[tuple[str, Any]] | None:
    if arg is None:
        return [(op + "_null", None)]
    if isinstance(arg, str):
        return [(op + "_str", arg)]
    if isinstance(arg, bool):
        return [(op + "_num", int(arg))]
    if _exact_number(arg):
        return [(op + "_num", arg)]
    return None


def _ordering(op: str, arg: Any) -> list[tuple[str, Any]] | None:
    if isinstance(arg, str):
        return [(op + "_str", arg)]
    if isinstance(arg, bool) or not isinstance(arg, (int, float)):
        return [("never", None)]
    return [(op + "_num", arg)] if _exact_number(arg) else None


def _exact_number(value: Any) -> bool:
    if isinstance(value, int):
        return -_EXACT_INT <= value <= _EXACT_INT
    return isinstance(value, float) and math.isfinite(value) and abs(value) <= _EXACT_INT


def _is_operators(want: Any) -> bool:
    return isinstance(want, dict) and any(isinstance(k, str) and k.startswith("$") for k in want)


# -- in Python -----------------------------------------------------------------------------------


def at(value: dict[str, Any], key: str) -> Any:
    """The value at a filter key: the key itself when the value has it, else a dotted
    path into nested objects; None when absent."""
    if key in value:
        return value[key]
    node: Any = value
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def matches(have: Any, want: Any) -> bool:
    """Whether a value (`at` a key) matches one filter entry."""
    if _is_operators(want):
        return all(_operator(have, op, arg) for op, arg in want.items())
    if isinstance(want, dict):
        return isinstance(have, dict) and all(matches(have.get(k), v) for k, v in want.items())
    if isinstance(want, (list, tuple)):
        return isinstance(have, list) and len(have) == len(want) and all(map(matches, have, want))
    return bool(have == want)


def _operator(have: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return bool(have == arg)
    if op == "$ne":
        return bool(have != arg)
    compare = _ORDER.get(op)
    if compare is None:
        raise InvalidArgumentError(f"filter: unknown operator {op!r}")
    numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (have, arg))
    strings = isinstance(have, str) and isinstance(arg, str)
    return (numbers or strings) and bool(compare(have, arg))
