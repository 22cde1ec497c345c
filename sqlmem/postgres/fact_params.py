"""Parameters and rows of the PostgreSQL fact store, in PostgreSQL's terms: a fact's upsert
values, the filters' bound values (escaped text, arrays, jsonb), decoded result rows."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..rules.encoding import now_ms
from ..rules.filters import FactRow, Filters
from ..rules.items import ItemFilters
from ..search.query import QueryCompiler, rarest_terms
from .codec import decode, encode, jsonb_text
from .items import meta_jsonb, tag_set
from .ranking import tsvector

__all__ = ["decoded", "filter_params", "rarest", "row_params"]


def decoded(rows: Iterable[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """Rows of FACT_COLUMNS with the escaped text columns decoded."""
    return [
        (
            *(decode(r[0]), decode(r[1]), decode(r[2])),
            *r[3:19],
            None if r[19] is None else decode(r[19]),  # superseded_by
            *r[20:],
        )
        for r in rows
    ]


def row_params(agent: str, compiler: QueryCompiler, row: FactRow) -> dict[str, Any]:
    """The UPSERT parameters of a checked row, tokenized (before any transaction)."""
    tokens = compiler.tokens(row.search_text or row.content)
    return {
        "agent": agent,
        "id": encode(row.id),
        "content": encode(row.content),
        "source": encode(row.source),
        "category": row.category,
        "tags": row.tags,
        "tag_set": tag_set(row.tags),
        "metadata": row.metadata,
        "meta": meta_jsonb(row.metadata),
        "created": row.created_ms,
        "updated": row.updated_ms,
        "doc_len": len(tokens),
        "tsv": tsvector(tokens),
        "layer": row.layer,
        "kind": row.kind,
        "confidence": row.confidence,
        "salience": row.salience,
        "refs": row.refs,
        "expires": row.expires_ms,
        "fingerprint": row.fingerprint,
        "hits": row.hits,
        "key": row.key,
        "valid_from": row.valid_from_ms,
    }


def filter_params(filters: Filters, item_filters: ItemFilters) -> dict[str, Any]:
    """`Filters.params()` and `ItemFilters.params()` in PostgreSQL's terms: escaped text,
    tags and layers as arrays, the metadata conditions as jsonb (`codec.jsonb_text`), and
    the clock of the expiry test."""
    params = filters.params()
    params["now"] = now_ms()
    if filters.tags:
        params["tags"] = [encode(t) for t in filters.tags]
    if filters.source is not None:
        params["source"] = encode(filters.source)
    if filters.metadata:
        conditions = filters.metadata
        params["meta"] = jsonb_text({c.key: c.arg for c in conditions if c.op == "eq"})
        params["mops"] = jsonb_text([list(c) for c in conditions if c.op != "eq"])
    if not item_filters.empty:
        params.update(item_filters.params())
        if item_filters.layers:
            params["layers"] = list(item_filters.layers)
    return params


def rarest(terms: Sequence[Any], rows: Sequence[Sequence[Any]], mode: Any) -> Any:
    """`rarest_terms` with each token's row count taken from the candidate rows."""
    docs: dict[str, int] = {}
    for row in rows:
        for token in row[2] or ():
            docs[token] = docs.get(token, 0) + 1
    return rarest_terms(terms, docs, mode)
