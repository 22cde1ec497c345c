"""Memory items (SPEC 12), decided once for every backend: the stored values of a fact's
item state, the `layer` / `kind` / `min_confidence` filters, and `remember`'s merge rule.

The SQLite store and the in-memory twin both call these, so a merge gives the same tags,
metadata and confidence everywhere (the stateful test compares them exactly).

Expiry: a fact is live while `expires_at` is None or later than now (milliseconds); from
`expires_at` on it is gone for every read (`is_live`, and `facts_sql.LIVE` in SQL).
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from json.encoder import encode_basestring as _json_string
from typing import Any, NamedTuple

from ..errors import InvalidArgumentError
from ..records import (
    LAYERS,
    MAX_REFERENCE_LEN,
    Fact,
    check_kind,
    check_references,
    check_unit_interval,
)
from .chains import check_as_of
from .encoding import dt_to_ms, dumps_json
from .identity import fingerprint

__all__ = [
    "NO_ITEM_FILTERS",
    "ItemFilters",
    "ItemValues",
    "Merged",
    "check_layer",
    "is_live",
    "item_values",
    "make_item_filters",
    "merge_item",
    "promotion",
]


class ItemValues(NamedTuple):
    """A fact's item state as stored (the tail of `filters.FactRow`, in its order)."""

    layer: str
    kind: str
    confidence: float
    salience: float
    refs: str  # JSON array text
    expires_ms: int | None
    fingerprint: str
    hits: int | None


def item_values(fact: Fact, *, keep_hits: bool = False) -> ItemValues:
    """Re-check the item fields (a model is mutable after construction) and encode them.

    The fingerprint is always computed from `content`: a caller's value is ignored.
    Values as the record validated them take a few type and range tests (the hot path
    of every write); anything else goes through `_checked_values`, which names the field.
    """
    layer: str = fact.layer
    kind, confidence, salience = fact.kind, fact.confidence, fact.salience
    refs, expires = fact.references, fact.expires_at
    if not (
        layer in _LAYER_SET
        and (kind == "" or (type(kind) is str and _kind_ok(kind)))
        and type(confidence) is float
        and 0.0 <= confidence <= 1.0
        and type(salience) is float
        and 0.0 <= salience <= 1.0
        and (refs == [] or _refs_ok(refs))
        and (expires is None or isinstance(expires, datetime))
    ):
        layer, confidence, salience = _checked_values(fact)
    hits = None
    if keep_hits:
        hits = fact.hits
        if isinstance(hits, bool) or not isinstance(hits, int) or not 1 <= hits <= 2**62:
            raise InvalidArgumentError("Fact.hits must be an integer from 1 to 2**62")
    return ItemValues(
        layer,
        kind,
        confidence,
        salience,
        "[" + ",".join(map(_json_string, refs)) + "]" if refs else "[]",
        None if expires is None else dt_to_ms(expires),
        fingerprint(fact.content),
        hits,
    )


_LAYER_SET = frozenset(LAYERS)


def _kind_ok(kind: str) -> bool:
    try:
        check_kind(kind)
    except ValueError:
        return False
    return True


def _refs_ok(refs: object) -> bool:
    return type(refs) is list and all(type(r) is str and len(r) <= MAX_REFERENCE_LEN for r in refs)


def _checked_values(fact: Fact) -> tuple[str, float, float]:
    """The slow path of `item_values`: each field checked, a refusal naming it."""
    try:
        layer = check_layer(fact.layer, "Fact.layer")
        if not isinstance(fact.kind, str):
            raise ValueError("Fact.kind must be a string")
        check_kind(fact.kind)
        confidence = _unit(fact.confidence, "Fact.confidence")
        salience = _unit(fact.salience, "Fact.salience")
        refs = fact.references
        if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
            raise ValueError("Fact.references must be a list of strings")
        check_references(refs)
    except ValueError as exc:
        raise InvalidArgumentError(str(exc)) from None
    if fact.expires_at is not None and not isinstance(fact.expires_at, datetime):
        raise InvalidArgumentError("Fact.expires_at must be a datetime or None")
    return layer, confidence, salience


def _unit(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} must be a number")
    return check_unit_interval(float(value), what)


def check_layer(value: object, what: str = "layer") -> str:
    if value not in LAYERS:
        raise InvalidArgumentError(f"{what} must be one of {', '.join(LAYERS)}; got {value!r:.80}")
    return str(value)


def is_live(expires_ms: int | None, now: int) -> bool:
    """Whether a fact is visible at `now` (ms): never expiring, or expiring later."""
    return expires_ms is None or expires_ms > now


# -- filters ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ItemFilters:
    """The item filters of `search` and `list`, validated. `key` says which are present
    (it picks the SQL predicates of `facts_sql`, after `Filters.key`'s); `accepts` is the
    same test in Python."""

    layers: tuple[str, ...] = ()
    kind: str | None = None
    min_confidence: float | None = None
    #: `as_of=`: facts valid at that time (ms) instead of now (`rules.chains`).
    as_of_ms: int | None = None

    @property
    def key(self) -> tuple[bool, bool, bool, bool]:
        return (
            bool(self.layers),
            self.kind is not None,
            self.min_confidence is not None,
            self.as_of_ms is not None,
        )

    @property
    def empty(self) -> bool:
        return not any(self.key)

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.layers:
            out["layers"] = dumps_json(list(self.layers))
        if self.kind is not None:
            out["kind"] = self.kind
        if self.min_confidence is not None:
            out["min_confidence"] = self.min_confidence
        if self.as_of_ms is not None:
            out["at"] = self.as_of_ms
        return out

    def accepts(self, layer: str, kind: str, confidence: float) -> bool:
        if self.layers and layer not in self.layers:
            return False
        if self.kind is not None and kind != self.kind:
            return False
        return self.min_confidence is None or confidence >= self.min_confidence


NO_ITEM_FILTERS = ItemFilters()


def make_item_filters(
    layer: str | Collection[str] | None = None,
    kind: str | None = None,
    min_confidence: float | None = None,
    as_of: datetime | None = None,
) -> ItemFilters:
    """`layer` is one layer or a collection of them (an empty one filters nothing, like
    `tags=[]`); `kind` is equal (`""` selects facts without a kind); `min_confidence`
    is inclusive; `as_of` selects the facts valid at that time instead of now."""
    if layer is None and kind is None and min_confidence is None and as_of is None:
        return NO_ITEM_FILTERS
    return ItemFilters(
        _layers(layer), _kind(kind), _min_confidence(min_confidence), check_as_of(as_of)
    )


def _layers(layer: object) -> tuple[str, ...]:
    if layer is None:
        return ()
    if isinstance(layer, str):
        return (check_layer(layer),)
    if isinstance(layer, bytes) or not isinstance(layer, Collection):
        raise InvalidArgumentError("layer must be a layer name or a list of layer names")
    return tuple(sorted({check_layer(v) for v in layer}))


def _kind(kind: object) -> str | None:
    if kind is None:
        return None
    if not isinstance(kind, str):
        raise InvalidArgumentError("kind must be a string")
    try:
        return check_kind(kind)
    except ValueError as exc:
        raise InvalidArgumentError(str(exc)) from None


def _min_confidence(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidArgumentError(f"min_confidence must be a finite number; got {value!r:.40}")
    return float(value)


def promotion(
    from_layer: object, to_layer: object, min_confidence: object, min_hits: object
) -> dict[str, Any]:
    """`promote_eligible`'s arguments, checked alike by every store, as SQL parameters."""
    params: dict[str, Any] = {
        "from_layer": check_layer(from_layer, "from_layer"),
        "to_layer": check_layer(to_layer, "to_layer"),
    }
    if from_layer == to_layer:
        raise InvalidArgumentError(f"from_layer and to_layer are both {from_layer!r}")
    confidence = min_confidence
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
        raise InvalidArgumentError("min_confidence must be a number")
    if not math.isfinite(confidence):
        raise InvalidArgumentError(f"min_confidence must be finite; got {confidence!r}")
    if isinstance(min_hits, bool) or not isinstance(min_hits, int):
        raise InvalidArgumentError("min_hits must be an integer")
    params["min_confidence"] = float(confidence)
    params["min_hits"] = max(min(min_hits, 2**62), -(2**62))
    return params


# -- remember's merge ---------------------------------------------------------------------


class Merged(NamedTuple):
    """The stored fact's new values after `remember` merged a new one into it."""

    tags: str
    refs: str
    metadata: str
    confidence: float
    salience: float
    expires_ms: int | None


def merge_item(
    stored: tuple[str, str, str, float, float, int | None],
    tags: str,
    refs: str,
    metadata: str,
    confidence: float,
    salience: float,
    expires_ms: int | None,
) -> Merged:
    """SPEC 12's merge of a new fact (its stored encoding) into a stored one, given as
    (tags, refs, metadata JSON text, confidence, salience, expires_ms).

    Tags and references: the union, stored order first, then the new ones not already
    there. Metadata: the stored object updated with the new keys. Confidence: two
    independent pieces of evidence, 1 - (1 - a)(1 - b). Salience: the larger. Expiry: the
    later of the two, None (never) winning.
    """
    old_tags, old_refs, old_meta, old_conf, old_sal, old_exp = stored
    expires = None if expires_ms is None or old_exp is None else max(expires_ms, old_exp)
    return Merged(
        _union(old_tags, tags),
        _union(old_refs, refs),
        _updated(old_meta, metadata),
        1.0 - (1.0 - old_conf) * (1.0 - confidence),
        max(old_sal, salience),
        expires,
    )


def _union(stored: str, new: str) -> str:
    if new == "[]" or new == stored:
        return stored
    values: list[str] = json.loads(stored)
    seen = set(values)
    for value in json.loads(new):
        if value not in seen:
            seen.add(value)
            values.append(value)
    return dumps_json(values)


def _updated(stored: str, new: str) -> str:
    if new == "{}" or new == stored:
        return stored
    values: dict[str, Any] = json.loads(stored)
    values.update(json.loads(new))
    return dumps_json(values)
