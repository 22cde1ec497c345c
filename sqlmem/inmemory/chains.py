"""Facts that change in the in-memory twin: the chain operations of `sqlite.chains` over
the twin's dict of facts (the rules are `sqlmem.rules.chains`, shared by every backend).

Each stored fact (`_Doc`) holds its chain name, its explicit valid_from and its link to
the next member (valid_to, superseded_by), as the SQLite row does; the caller holds the
store's lock.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any, Protocol

from ..errors import FactNotFoundError, InvalidArgumentError
from ..rules.chains import Link, chain_name, place, supersede_valid_from
from ..rules.filters import FactRow
from ..rules.items import is_live

__all__ = [
    "ChainDoc",
    "leave",
    "moved",
    "place_keyed",
    "prepare_supersede",
    "relink",
    "splice_out",
]


class ChainDoc(Protocol):
    """What the chain operations read and set on a stored fact."""

    pk: int
    row: FactRow
    created_ms: int
    chain: str | None
    valid_from: int | None
    valid_to: int | None
    superseded_by: str | None


def effective_from(doc: ChainDoc) -> int:
    return doc.created_ms if doc.valid_from is None else doc.valid_from


def relink(docs: MutableMapping[str, Any], doc: ChainDoc, chain: str) -> None:
    """Put `doc` in `chain` (its layer's) where its valid_from falls."""
    layer = doc.row.layer
    members = [
        Link(d.row.id, effective_from(d), d.pk)
        for d in docs.values()
        if d.chain == chain and d.row.layer == layer and d.row.id != doc.row.id
    ]
    valid_from = effective_from(doc)
    placement = place(members, Link(doc.row.id, valid_from, doc.pk))
    nxt = placement.following
    doc.chain, doc.valid_from = chain, valid_from
    doc.valid_to = None if nxt is None else nxt.valid_from
    doc.superseded_by = None if nxt is None else nxt.id
    if placement.previous is not None:
        previous = docs[placement.previous.id]
        previous.valid_to, previous.superseded_by = valid_from, doc.row.id


def splice_out(docs: MutableMapping[str, Any], doc: ChainDoc) -> None:
    """The member before `doc` takes over its link (a delete, or `doc` leaving)."""
    if doc.chain is None:
        return
    for other in docs.values():
        if other.superseded_by == doc.row.id:
            other.valid_to, other.superseded_by = doc.valid_to, doc.superseded_by


def leave(docs: MutableMapping[str, Any], doc: ChainDoc) -> None:
    splice_out(docs, doc)
    doc.chain = doc.valid_to = doc.superseded_by = None


def moved(
    docs: MutableMapping[str, Any], doc: ChainDoc, key: str, layer: str, valid_from: int | None
) -> None:
    """The facts_chain_move trigger of the SQLite file: a chained fact whose key, layer
    or valid_from changed (to these) leaves its chain."""
    if doc.chain is not None and (
        doc.row.key != key or doc.row.layer != layer or doc.valid_from != valid_from
    ):
        leave(docs, doc)


def place_keyed(docs: MutableMapping[str, Any], doc: ChainDoc) -> None:
    """A keyed fact not in a chain joins its key's chain (as `sqlite.chains.place_keyed`)."""
    if doc.row.key and doc.chain is None:
        relink(docs, doc, doc.row.key)


def prepare_supersede(
    docs: MutableMapping[str, Any], old_id: str, row: FactRow, now: int
) -> tuple[FactRow, str]:
    """As `sqlite.chains.prepare_supersede`: the row to write and its chain."""
    old = docs.get(old_id)
    if old is None or not is_live(old.row.expires_ms, now):
        raise FactNotFoundError(f"no fact with id {old_id!r}")
    key, layer = old.row.key, old.row.layer
    if row.key and row.key != key:
        raise InvalidArgumentError(
            f"supersede keeps the old fact's key {key!r}; the new fact has key {row.key!r}"
        )
    if row.id == old_id:
        raise InvalidArgumentError("a fact cannot supersede itself: give the new fact its own id")
    if old.chain is None:
        old.chain, old.valid_from = chain_name(key, old_id), effective_from(old)
    valid_from = supersede_valid_from(row.valid_from_ms, effective_from(old), now)
    return row._replace(key=key, layer=layer, valid_from_ms=valid_from), str(old.chain)
