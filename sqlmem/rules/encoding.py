"""How values are stored: compact JSON text and integer milliseconds since the epoch (UTC).

Every backend writes the same text and the same numbers, so a file, an export and the
in-memory twin agree byte for byte; the metadata depth rule is applied here, when a value
is encoded, by every store and filter alike. Reading timestamps back (`dt_from_ms`) is on
the hot path of every read, hence the cache.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from typing import Any

from ..errors import InvalidArgumentError

__all__ = [
    "EPOCH",
    "MAX_METADATA_DEPTH",
    "dt_from_ms",
    "dt_to_ms",
    "dumps_json",
    "encode_metadata_json",
    "now_ms",
]


def now_ms() -> int:
    """Milliseconds since the epoch (UTC), from the integer clock (no float, no datetime)."""
    return time.time_ns() // 1_000_000


def dt_to_ms(value: datetime) -> int:
    """Milliseconds since the epoch; a naive datetime is taken as UTC."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    delta = value - _EPOCH
    return delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
#: The unix epoch (UTC): `EPOCH + timedelta(0, 0, 0, ms)` is a stored timestamp inlined.
EPOCH = _EPOCH


#: Below 2**42 ms (the year 2109), `fromtimestamp(ms / 1000)` is exact to the millisecond:
#: ms / 1000 is off by at most half an ulp (< 0.5 µs below 2**33 s), and fromtimestamp
#: rounds to the nearest microsecond. It is ~2x cheaper than epoch + timedelta, which
#: stays the exact path for every other value (tests/unit/test_hot_paths.py checks both).
_FROMTIMESTAMP_EXACT_BELOW = 1 << 42
_fromtimestamp = datetime.fromtimestamp
_UTC = timezone.utc


#: Datetimes by their stored milliseconds. Building one costs ~0.3 µs, a third of a whole
#: Message read back; an agent re-reads most of its window every turn (get_recent), and a
#: batch of records shares one timestamp, so most reads find theirs here (~0.05 µs).
#: datetimes are immutable, so sharing them is safe; bounded by clearing.
_DATETIMES: dict[int, datetime] = {}
_DATETIMES_MAX = 16_384


def dt_from_ms(ms: int) -> datetime:
    value = _DATETIMES.get(ms)
    if value is None:
        value = _new_datetime(ms)
    return value


def _new_datetime(ms: int) -> datetime:
    if 0 <= ms < _FROMTIMESTAMP_EXACT_BELOW:
        value = _fromtimestamp(ms / 1000, _UTC)
    else:
        value = _EPOCH + timedelta(0, 0, 0, ms)
    if len(_DATETIMES) >= _DATETIMES_MAX:
        _DATETIMES.clear()
    _DATETIMES[ms] = value
    return value


#: One encoder for every write: `json.dumps` with options builds a new JSONEncoder per
#: call, which is about half its cost for small values (tags, metadata). `encode` keeps
#: no state between calls, so sharing it between threads is safe.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps_json(value: Any) -> str:
    """Compact JSON as stored; non-ASCII kept as is (smaller, still valid JSON)."""
    return _ENCODER.encode(value)


#: How deeply metadata may nest: the metadata object is level 1, each object or array
#: inside it one more. Deeper values are refused (InvalidArgumentError naming the field;
#: a ValueError when a record is built) by every store and filter alike. Why a limit:
#: without one a value nested ~1,000 levels raised RecursionError from Python's JSON
#: encoder, its exact depth depending on the caller's stack, and
#: SQLite's JSON functions refuse more than 1,000 levels. 64 is far beyond real metadata
#: and far inside both.
MAX_METADATA_DEPTH = 64


def encode_metadata_json(value: Any, field: str) -> str:
    """`value` (metadata, or a metadata filter) as stored JSON text, or
    InvalidArgumentError naming `field`: not JSON, or nested past `MAX_METADATA_DEPTH`.

    The depth walk runs only when the text holds more than `MAX_METADATA_DEPTH` brackets
    (two `str.count` calls otherwise: usual metadata costs nothing more).
    """
    try:
        text = dumps_json(value)
    except RecursionError as exc:
        raise _too_deep(field) from exc
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"{field} must be JSON-serialisable: {exc}") from None
    if text.count("{") + text.count("[") > MAX_METADATA_DEPTH and _deeper_than(
        value, MAX_METADATA_DEPTH
    ):
        raise _too_deep(field)
    return text


def _too_deep(field: str) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"{field} nests deeper than {MAX_METADATA_DEPTH} levels (sqlmem.records.MAX_METADATA_DEPTH)"
    )


def _deeper_than(value: Any, limit: int) -> bool:
    """True when `value` nests more than `limit` containers deep (no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[Any] = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
