"""Text as PostgreSQL stores it: reversible escaping of what `text` cannot hold.

PostgreSQL's text type refuses the NUL character, which sqlmem must store and give back
(SPEC 4: NUL inside text comes back equal). A value holding NUL, or starting with the
marker U+E000 (so that no plain value can look escaped), is stored as the marker followed by
the value with `\\` doubled and NUL written `\\0`. The mapping is injective, so equality
(session ids, fact ids, sources, tags) still works in SQL; ordering of escaped values does
not, so the few sorted reads sort in Python. Everything else (nearly all text) is stored as
it is, checked with one `in` test.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["decode", "encode", "encode_json_value"]

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
