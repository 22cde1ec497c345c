"""The compiled filter of a key-value search, evaluated in Python: what the SQLite file's
statement (`sqlmem.sqlite.frameworks.kv_search`) computes in SQL, for the backends that filter the
rows they read (PostgreSQL, the in-memory database).

Conditions are JSON text `[[path, fallback_path, op, arg], ...]`; each holds for an item
when the value at `path` (or at `fallback_path` when `path` is absent) passes `op`:
`eq_null`/`ne_null` (absent or JSON null / neither), `eq_num`/`ne_num` (a number or a
boolean equal to `arg`, true being 1 / not so), `eq_str`/`ne_str` (a string equal to
`arg` / not so), `gt_num gte_num lt_num lte_num` (a number, not a boolean, ordered
against `arg`), `gt_str gte_str lt_str lte_str` (a string, code point order); any other
op never holds. Paths are `$."label"."label"...` (labels hold no quote).
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Sequence
from typing import Any

from .kv_checks import prefix_upper_bound

__all__ = ["ItemTest", "compile_conditions", "equality_test", "in_prefix", "page_of", "range_of"]

#: Whether an item's value (UTF-8 JSON bytes) passes.
ItemTest = Callable[[bytes], bool]

_LABEL = re.compile(r'\."([^"]*)"')
_ABSENT = object()
_ORDER: dict[str, Callable[[Any, Any], bool]] = {
    "gt": operator.gt,
    "gte": operator.ge,
    "lt": operator.lt,
    "lte": operator.le,
}


def compile_conditions(conditions: str) -> ItemTest | None:
    """The test of the compiled conditions (None: no condition, every item passes)."""
    parsed: list[list[Any]] = json.loads(conditions)
    if not parsed:
        return None
    tests = [(_labels(p0), _labels(p1), str(op), arg) for p0, p1, op, arg in parsed]

    def passes(data: bytes) -> bool:
        doc = json.loads(data)
        for first, fallback, op, arg in tests:
            found = _at(doc, first)
            if found is _ABSENT and first != fallback:
                found = _at(doc, fallback)
            if not _holds(op, found, arg):
                return False
        return True

    return passes


def equality_test(path: str, value: str | int | float) -> ItemTest:
    """The one condition `eq_str` (str `value`) or `eq_num` (a number) at `path`."""
    labels = _labels(path)
    op = "eq_str" if isinstance(value, str) else "eq_num"
    return lambda data: _holds(op, _at(json.loads(data), labels), value)


def in_prefix(prefix: str) -> Callable[[str], bool]:
    """Whether a namespace starts with `prefix`."""
    return lambda namespace: namespace.startswith(prefix)


def page_of(rows: Sequence[Any], test: ItemTest | None, limit: int, offset: int) -> list[Any]:
    """The rows (newest first, their value at index 2) passing `test`, `offset` skipped,
    at most `limit` (-1: all)."""
    kept = [row for row in rows if test is None or test(row[2])]
    stop = None if limit < 0 else offset + limit
    return kept[offset:stop]


def range_of(prefix: str) -> tuple[str, str | None]:
    """[prefix, upper bound) of the namespaces under `prefix` (None: no upper bound)."""
    return prefix, prefix_upper_bound(prefix)


def _labels(path: str) -> tuple[str, ...]:
    return tuple(_LABEL.findall(path))


def _at(doc: Any, labels: tuple[str, ...]) -> Any:
    node = doc
    for label in labels:
        if not isinstance(node, dict) or label not in node:
            return _ABSENT
        node = node[label]
    return node


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _holds(op: str, have: Any, arg: Any) -> bool:
    if op in ("eq_null", "ne_null"):
        null = have is _ABSENT or have is None
        return null if op == "eq_null" else not null
    if op in ("eq_num", "ne_num"):
        equal = isinstance(have, (int, float)) and have == arg
        return equal if op == "eq_num" else not equal
    if op in ("eq_str", "ne_str"):
        equal = isinstance(have, str) and have == arg
        return equal if op == "eq_str" else not equal
    name, _, kind = op.partition("_")
    compare = _ORDER.get(name)
    if compare is None:
        return False
    if kind == "num":
        return _is_number(have) and _is_number(arg) and compare(have, arg)
    if kind == "str":
        return isinstance(have, str) and isinstance(arg, str) and compare(have, arg)
    return False
