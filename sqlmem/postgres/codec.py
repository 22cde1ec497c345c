"""Text as PostgreSQL stores it: reversible escaping of what `text` cannot hold.

PostgreSQL's text type refuses the NUL character, which sqlmem must store and give back
(NUL inside text comes back equal, as on SQLite). A value holding NUL, or starting with the
marker U+E000 (so that no plain value can look escaped), is stored as the marker followed by
the value with `\\` doubled and NUL written `\\0`. The mapping is injective, so equality
(session ids, fact ids, sources, tags) still works in SQL; ordering of escaped values does
not, so the few sorted reads sort in Python. Everything else (nearly all text) is stored as
it is, checked with one `in` test.
"""

from __future__ import annotations

import re
from decimal import Decimal
from json.encoder import encode_basestring as _json_string
from typing import Any

__all__ = ["decode", "encode", "encode_json_value", "jsonb_text"]

_MARK = "\ue000"
_ESCAPED = re.compile(r"\\(.)", re.DOTALL)


def encode(value: str) -> str:
    if "\x00" not in value and not value.startswith(_MARK):
        return value
    return _MARK + value.replace("\\", "\\\\").replace("\x00", "\\0")


def decode(value: str) -> str:
    if not value.startswith(_MARK):
        return value
    return _ESCAPED.sub(lambda m: "\x00" if m.group(1) == "0" else m.group(1), value[1:])


def encode_json_value(value: Any) -> Any:
    """A decoded JSON value with every string (keys too) encoded: jsonb refuses NUL too."""
    if isinstance(value, str):
        return encode(value)
    if isinstance(value, list):
        return [encode_json_value(v) for v in value]
    if isinstance(value, dict):
        return {encode(k): encode_json_value(v) for k, v in value.items()}
    return value


def jsonb_text(value: Any) -> str:
    """A decoded JSON value as the text sqlmem binds to a jsonb column or filter (for
    filtering only: what a store reads back is the JSON text column). Strings (keys too)
    go through `_ordered`, and each float is written as its exact decimal value with a
    fraction (`1e20` -> `100000000000000000000.0`).

    Why floats so: jsonb has one number type and prints a number as it was written, so a
    float written `1e+20` would read back as the integer 10**20 and compare equal to it,
    where the metadata filters' typed equality keeps them apart; and Python compares an int
    with a float exactly, by the float's binary value, which `numeric` only does given that
    value."""
    if isinstance(value, str):
        return _json_string(_ordered(value))
    if value is None or value is True or value is False:
        return "null" if value is None else ("true" if value else "false")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = format(Decimal(value), "f")
        return text if "." in text else text + ".0"
    if isinstance(value, list):
        return "[" + ",".join(map(jsonb_text, value)) + "]"
    items = (f"{_json_string(_ordered(k))}:{jsonb_text(v)}" for k, v in value.items())
    return "{" + ",".join(items) + "}"


def _ordered(value: str) -> str:
    """jsonb refuses NUL too, and metadata strings are ordered by `$gt`...: NUL becomes
    U+0001 U+0001 and U+0001 itself U+0001 U+0002, a mapping that is injective and keeps
    code point order (so byte order under COLLATE "C"), unlike `encode`'s."""
    if "\x00" not in value and "\x01" not in value:
        return value
    return value.replace("\x01", "\x01\x02").replace("\x00", "\x01\x01")
