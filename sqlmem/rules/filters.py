"""What callers hand a fact store, checked once for both implementations.

The SQLite store and its in-memory twin must agree on every edge: which arguments are
refused, what a filter means, how a batch with repeated ids resolves, how a record is
rebuilt. Keeping those decisions here (rather than in each store) is what lets the
contract suite and the stateful test demand identical behaviour.

Filter semantics:
- `tags`: every given tag is present on the fact (an empty list filters nothing).
- `category`: that path or anything below it; `""` is the root, so it filters nothing.
- `source`: equal (`""` selects facts stored without a source).
- `since` / `until`: inclusive bounds on `created_at` (naive datetimes are UTC; bounds
  are rounded inwards to the stored millisecond precision).
- `metadata`: every key present with an equal value. Keys are literal (`"a.b"` is one
  key). Values compare as typed JSON: `true`, `1`, `1.0` and `"1"` are four different
  values; objects are equal when they hold the same keys with equal values (key order does
  not matter), arrays when they hold equal values in the same order. 0.2: a value that is
  a mapping of `$` operators is an operator expression (`sqlmem.rules.metadata`, where
  the whole filter is compiled into conditions).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from json.encoder import encode_basestring as _json_string
from typing import Any, NamedTuple

from ..errors import InvalidArgumentError
from ..records import Fact, check_category
from ..search.query import segment
from .chains import check_key
from .encoding import dt_to_ms, dumps_json, encode_metadata_json
from .items import item_values
from .metadata import Condition, compile_metadata, conditions_json, json_equal

__all__ = [
    "MAX_FACT_ID_LEN",
    "FactRow",
    "Filters",
    "check_limit",
    "check_query",
    "is_fact_id",
    "json_equal",
    "make_filters",
    "merge_batch",
    "metadata_equal_filter",
    "prepare_fact",
]

MAX_FACT_ID_LEN = 512


# -- records in -------------------------------------------------------------------------


_KEY_CHARS = re.compile(r"[A-Za-z0-9._:-]{1,128}")


class FactRow(NamedTuple):
    """A validated fact as stored; `created_ms`/`updated_ms` are None when not given."""

    id: str
    content: str
    source: str
    category: str
    tags: str  # JSON array text
    metadata: str  # JSON object text
    created_ms: int | None
    updated_ms: int | None
    search_text: str | None
    # 0.2 memory items (checked by `rules.items.item_values`)
    layer: str = "semantic"
    kind: str = ""
    confidence: float = 1.0
    salience: float = 0.5
    refs: str = "[]"  # JSON array text of `references`
    expires_ms: int | None = None
    fingerprint: str = ""
    hits: int | None = None  # None: 1 for a new fact, unchanged for a stored one
    # facts that change (`rules.chains`)
    key: str = ""
    valid_from_ms: int | None = None  # None: not given (created_at, or kept on update)


def _utf8(value: str, what: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgumentError(
            f"{what} contains a lone surrogate, which UTF-8 cannot store"
        ) from None


#: Categories already checked (as exact `str`s; a subclass is checked each time): the
#: path check is a regex match, ~0.4 µs of every fact written, and a store's facts share
#: a few categories. Bounded: past the cap, new ones are checked each time.
_CHECKED_CATEGORIES: set[str] = {""}
_CHECKED_CATEGORIES_MAX = 4096


def prepare_fact(fact: object, *, keep_hits: bool = False) -> FactRow:
    """Re-check what pydantic checked at construction (models are mutable afterwards).

    `hits` is output only: written from the record only with `keep_hits` (import)."""
    if not isinstance(fact, Fact):
        raise InvalidArgumentError(f"expected a sqlmem.Fact, got {type(fact).__name__}")
    fact_id, content = fact.id, fact.content
    if not isinstance(fact_id, str) or not 0 < len(fact_id) <= MAX_FACT_ID_LEN:
        raise InvalidArgumentError(f"Fact.id must be a string of 1-{MAX_FACT_ID_LEN} characters")
    if not isinstance(content, str) or not content.strip():
        raise InvalidArgumentError("Fact.content must be a non-empty string")
    if not isinstance(fact.source, str):
        raise InvalidArgumentError("Fact.source must be a string")
    category = fact.category
    if type(category) is not str or category not in _CHECKED_CATEGORIES:
        category = _category(category, "Fact.category")
        if type(category) is str and len(_CHECKED_CATEGORIES) < _CHECKED_CATEGORIES_MAX:
            _CHECKED_CATEGORIES.add(category)
    tags = fact.tags
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise InvalidArgumentError("Fact.tags must be a list of strings")
    metadata = fact.metadata
    if not isinstance(metadata, dict) or (
        metadata and not all(isinstance(k, str) for k in metadata)
    ):
        raise InvalidArgumentError("Fact.metadata must be a dict with str keys")
    # Tags are strings (checked above): joining their JSON strings gives exactly what
    # dumps_json would, without the encoder's generic walk (~1 µs a fact in index_many).
    tags_json = "[" + ",".join(map(_json_string, tags)) + "]" if tags else "[]"
    meta_json = encode_metadata_json(metadata, "Fact.metadata") if metadata else "{}"
    # One encode over everything catches lone surrogates before anything is written
    # (ASCII text, the usual case, cannot hold one and skips the encode).
    items = item_values(fact, keep_hits=keep_hits)
    key = fact.key
    if key and (type(key) is not str or not _KEY_CHARS.fullmatch(key)):
        try:
            check_key(key)
        except ValueError as exc:
            raise InvalidArgumentError(f"Fact.key: {exc}") from None
    text = f"{fact_id}{content}{fact.source}{tags_json}{meta_json}{items[4]}"
    if not text.isascii():
        _utf8(text, f"Fact {fact_id!r}")
    return FactRow(
        fact_id,
        content,
        fact.source,
        category,
        tags_json,
        meta_json,
        _ms(fact.created_at, "Fact.created_at"),
        _ms(fact.updated_at, "Fact.updated_at"),
        segment(content),
        *items,
        key,
        _ms(fact.valid_from, "Fact.valid_from"),
    )


def _ms(value: object, what: str) -> int | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidArgumentError(f"{what} must be a datetime or None")
    return dt_to_ms(value)


def merge_batch(rows: Sequence[FactRow]) -> list[FactRow]:
    """One row per id, with exactly the effect of indexing `rows` one after another.

    An upsert statement must not touch the same row twice, so repeated ids are merged:
    the last row's values win, at the first row's position (where a sequential insert
    would have put it), and an explicit `created_at` given by an earlier row still counts
    when a later one gives none (the sequential update would have kept it).
    """
    merged: dict[str, FactRow] = {}
    for row in rows:
        prev = merged.get(row.id)
        if prev is not None and row.created_ms is None and prev.created_ms is not None:
            row = row._replace(created_ms=prev.created_ms)
        if prev is not None and row.valid_from_ms is None and prev.valid_from_ms is not None:
            row = row._replace(valid_from_ms=prev.valid_from_ms)
        merged[row.id] = row  # dict keeps the first insertion position
    return list(merged.values())


def is_fact_id(value: object) -> bool:
    """True for a string that could be a stored id; non-strings are a caller bug. A text
    with a lone surrogate is no stored id (records refuse it), and the drivers cannot even
    send it, so it is "not found" rather than an encoding error."""
    if not isinstance(value, str):
        raise InvalidArgumentError(f"fact ids are strings, got {type(value).__name__}")
    return 0 < len(value) <= MAX_FACT_ID_LEN and (value.isascii() or _encodable(value))


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


#: Every search mode; "vector" and "hybrid" need the store's embedder.
SEARCH_MODES = ("any", "all", "raw", "vector", "hybrid")


def check_query(query: object, mode: object) -> str:
    """The arguments every search takes, refused alike by both stores; returns the query."""
    if mode not in SEARCH_MODES:
        raise InvalidArgumentError(
            f"mode must be one of {', '.join(map(repr, SEARCH_MODES))}; got {mode!r}"
        )
    if not isinstance(query, str):
        raise InvalidArgumentError(f"query must be a string, got {type(query).__name__}")
    return query


def check_limit(value: object, what: str) -> int:
    if isinstance(value, bool):  # `search(q, True)` is a bug, not a request for 1 result
        raise InvalidArgumentError(f"{what} must be an integer, not bool")
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise InvalidArgumentError(f"{what} must be an integer") from None
    # SQLite binds 64-bit integers; nobody can read more rows than that anyway.
    return min(number, 2**62)


def check_page(limit: object, offset: object) -> tuple[int, int]:
    """`list()`'s paging arguments, checked alike by every FactStore."""
    limit, offset = check_limit(limit, "limit"), check_limit(offset, "offset")
    if offset < 0:
        raise InvalidArgumentError("offset must be >= 0")
    return limit, offset


# -- filters ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Filters:
    """Validated filters. `key` says which are present (it picks the SQL text); `params`
    are the values bound to it; `accepts` is the same predicate in Python."""

    tags: tuple[str, ...] = ()
    category: str = ""
    source: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    metadata: tuple[Condition, ...] = ()
    # The conditions as the SQL predicate reads them (rules.metadata.conditions_json):
    metadata_json: str = ""  # the equalities, one JSON object
    metadata_ops_json: str = ""  # the other operators, a JSON array

    @property
    def empty(self) -> bool:
        """True when no filter narrows anything, however it was spelt: None, `tags=[]`,
        `category=""` and `metadata={}` alike. Stores test this, never identity with
        `NO_FILTERS`, to take their unfiltered paths (an identity test once sent
        `tags=[]` past mode "any"'s shortcut)."""
        return not any(self.key)

    @property
    def key(self) -> tuple[bool, bool, bool, bool, bool, bool]:
        return (
            bool(self.tags),
            bool(self.category),
            self.source is not None,
            self.since_ms is not None,
            self.until_ms is not None,
            bool(self.metadata),
        )

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.tags:
            out["tags"] = dumps_json(list(self.tags))
            out["ntags"] = len(self.tags)
        if self.category:
            out["cat"] = self.category
            # Paths below `cat` sort in [cat + "/", cat + "0"): "0" follows "/" in ASCII.
            out["cat_lo"] = self.category + "/"
            out["cat_hi"] = self.category + "0"
        if self.source is not None:
            out["source"] = self.source
        if self.since_ms is not None:
            out["since"] = self.since_ms
        if self.until_ms is not None:
            out["until"] = self.until_ms
        if self.metadata:
            out["meta"], out["mops"] = self.metadata_json, self.metadata_ops_json
        return out

    def accepts(
        self,
        tags: Collection[str],
        category: str,
        source: str,
        created_ms: int,
        metadata: Mapping[str, Any],
    ) -> bool:
        # `self.tags` are distinct: a fact with fewer tags than wanted cannot hold them all
        # (so a filter of 500 tags costs a length test per fact, not 500 lookups).
        if self.tags and (len(self.tags) > len(tags) or not all(t in tags for t in self.tags)):
            return False
        cat = self.category
        if cat and category != cat and not category.startswith(cat + "/"):
            return False
        if self.source is not None and source != self.source:
            return False
        if self.since_ms is not None and created_ms < self.since_ms:
            return False
        if self.until_ms is not None and created_ms > self.until_ms:
            return False
        return all(c.holds(metadata) for c in self.metadata)


#: No filter at all; `make_filters` returns it when every argument is None (no work).
NO_FILTERS = Filters()


def make_filters(
    tags: Sequence[str] | None = None,
    category: str | None = None,
    source: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Filters:
    if all(v is None for v in (tags, category, source, since, until, metadata)):
        return NO_FILTERS
    return Filters(
        tags=_tags(tags),
        category=_category(category, "category") if category is not None else "",
        source=_text(source, "source"),
        since_ms=_bound(since, "since", ceil=True),
        until_ms=_bound(until, "until", ceil=False),
        **_metadata(metadata),
    )


def metadata_equal_filter(key: object, value: Any) -> Filters:
    """`search_by_metadata(key, value)`: the literal key equal to the literal value. A
    mapping of `$` keys is a value here, not an operator expression."""
    if not isinstance(key, str):
        raise InvalidArgumentError("search_by_metadata: key must be a string")
    return Filters(**_metadata({key: value}, literal=True))


def _tags(tags: object) -> tuple[str, ...]:
    if tags is None:
        return ()
    if isinstance(tags, (str, bytes)) or not isinstance(tags, Collection):
        raise InvalidArgumentError("tags must be a list of strings")
    for tag in tags:
        if not isinstance(tag, str):  # _text() lets None through (it means "no filter")
            raise InvalidArgumentError("tags must be a list of strings")
        _text(tag, "tags")
    return tuple(sorted(set(tags)))


def _category(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{what} must be a string")
    try:
        return check_category(value)
    except ValueError as exc:
        raise InvalidArgumentError(f"{what}: {exc}") from None


def _text(value: object, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{what} must be a string")
    _utf8(value, what)
    return value


def _bound(value: object, what: str, *, ceil: bool) -> int | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidArgumentError(f"{what} must be a datetime")
    ms = dt_to_ms(value)
    if ceil and value.microsecond % 1000:
        ms += 1  # created_at is whole milliseconds: the first one not before `since`
    return ms


def _metadata(metadata: object, *, literal: bool = False) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping) or not all(isinstance(k, str) for k in metadata):
        raise InvalidArgumentError("metadata must be a mapping with string keys")
    if not metadata:
        return {}
    conditions = compile_metadata(metadata, literal=literal)
    equal, others = conditions_json(conditions)
    _utf8(equal + others, "metadata")
    return {"metadata": conditions, "metadata_json": equal, "metadata_ops_json": others}
