"""`FactStoreFront`: the FactStore protocol once, over a backend's `FactStorePort`.

What a fact store call means is decided here, the same for SQLite, PostgreSQL and the
in-memory store: which arguments are refused and with which error, how the filter keywords
become one `Filters` and one `ItemFilters` value, that a batch is all-or-nothing and
merged by id before it is written, that a resolver is asked before any write, when a
search has nothing to look for. Then one call into the port, which only executes.

Vector and hybrid search (and `embed_pending`) import their rules only when used: numpy
loads only with an embedder.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ..errors import FactNotFoundError, InvalidArgumentError
from ..protocols import Embedder, FactState, SearchMode
from ..records import Fact
from ..rules.chains import check_state
from ..rules.filters import (
    check_limit,
    check_page,
    check_query,
    is_fact_id,
    make_filters,
    merge_batch,
    metadata_equal_filter,
    prepare_fact,
)
from ..rules.items import NO_ITEM_FILTERS, check_layer, make_item_filters, promotion
from ..rules.resolve import Resolver, check_history_args, no_such_fact, resolve_supersession
from ..search.query import check_raw_query
from .facts_port import FactListing, FactQuery, FactStorePort

__all__ = ["FactStoreFront", "raw_match"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def raw_match(query: str) -> str | None:
    """A `mode="raw"` query as MATCH text (FTS5 syntax, passed through), or None when it
    is blank. Lone surrogates (which UTF-8 cannot hold) are dropped; more than
    `MAX_QUERY_TERMS` words raise `InvalidQueryError` (`query.check_raw_query`)."""
    text = _SURROGATE.sub("", query)
    check_raw_query(text)
    return text if text.strip() else None


class FactStoreFront:
    """`FactStore` over a port; thread-safe as its port is."""

    def __init__(self, port: FactStorePort) -> None:
        self._port = port

    @property
    def port(self) -> FactStorePort:
        """The backend operations this front runs on."""
        return self._port

    @property
    def embedder(self) -> Embedder | None:
        """The embedder vectors come from (None: BM25 only)."""
        return self._port.vectors.embedder

    def __repr__(self) -> str:
        return repr(self._port)

    # -- writes -------------------------------------------------------------------------

    def index(self, fact: Fact) -> str:
        row = prepare_fact(fact)
        self._port.write([row], embed=True)
        return row.id

    def index_many(self, facts: Iterable[Fact]) -> builtins.list[str]:
        return self._index_many(facts, keep_hits=False)

    def _index_many(self, facts: Iterable[Fact], *, keep_hits: bool) -> builtins.list[str]:
        """`keep_hits`: each fact's `hits` is written too, and vectors are left for later
        (an import restores both)."""
        if isinstance(facts, (str, bytes, Mapping)) or not isinstance(facts, Iterable):
            raise InvalidArgumentError("index_many takes an iterable of Fact")
        # every fact checked before any is written: all or nothing
        rows = [prepare_fact(f, keep_hits=keep_hits) for f in facts]
        if rows:
            self._port.write(merge_batch(rows), embed=not keep_hits)
        return [r.id for r in rows]

    def remember(self, fact: Fact, *, resolver: Resolver | None = None) -> str:
        """The upsert for memory writers: a repeated text merges into the stored fact, a
        fact with a key takes its place in its key's chain; `resolver` (for a fact without
        a key) may name a live fact it supersedes, asked before anything is written."""
        row = prepare_fact(fact)
        if resolver is not None and not row.key:
            old_id = resolve_supersession(self, resolver, fact)
            if old_id is not None:
                return self.supersede(old_id, fact)
        return self._port.remember(row)

    def supersede(self, old_id: str, fact: Fact) -> str:
        """Store `fact` right after `old_id` in its chain (the old fact's key and layer):
        from then on `fact` is live and `old_id` is history."""
        is_fact_id(old_id)
        return self._port.supersede(old_id, prepare_fact(fact))

    def promote(self, fact_id: str, layer: str) -> Fact:
        layer = check_layer(layer)
        found = self._port.promote(fact_id, layer) if is_fact_id(fact_id) else None
        if found is None:
            raise FactNotFoundError(f"no fact with id {fact_id!r}")
        return found

    def promote_eligible(
        self,
        *,
        from_layer: str = "episodic",
        to_layer: str = "semantic",
        min_confidence: float = 0.75,
        min_hits: int = 2,
    ) -> builtins.list[str]:
        params = promotion(from_layer, to_layer, min_confidence, min_hits)
        return self._port.promote_eligible(params)

    def expire(self) -> int:
        """Delete the expired facts (every read already skipped them)."""
        return self._port.expire()

    def delete(self, fact_id: str) -> None:
        if not is_fact_id(fact_id) or self._port.delete([fact_id]) == 0:
            raise FactNotFoundError(f"no fact with id {fact_id!r}")

    def delete_many(self, fact_ids: Iterable[str]) -> int:
        if isinstance(fact_ids, (str, bytes)) or not isinstance(fact_ids, Iterable):
            raise InvalidArgumentError("delete_many takes an iterable of fact ids")
        ids = [i for i in fact_ids if is_fact_id(i)]
        return self._port.delete(ids) if ids else 0

    def embed_pending(
        self, *, batch_size: int = 64, progress: Callable[[int, int], object] | None = None
    ) -> int:
        """Vectors for the facts that have none (or one of another model): those stored
        while the embedder failed, imported, or written by another program. Returns how
        many were added; `progress(done, total)` is called after each batch."""
        from ..rules.hybrid import check_batch_size

        batch_size = check_batch_size(batch_size)
        if progress is not None and not callable(progress):
            raise InvalidArgumentError("progress must be callable or None")
        self._require_embedder("embed_pending")
        return self._port.vectors.embed_pending(batch_size, progress)

    def _require_embedder(self, what: str) -> None:
        if self._port.vectors.embedder is None:
            raise InvalidArgumentError(f"{what} needs an embedder: {self._port.vectors.hint}")

    # -- reads --------------------------------------------------------------------------

    def get(self, fact_id: str) -> Fact | None:
        return self._port.get(fact_id) if is_fact_id(fact_id) else None

    def count(self) -> int:
        return self._port.count()

    def __len__(self) -> int:
        return self._port.count()

    def history(self, *, key: str | None = None, id: str | None = None) -> builtins.list[Fact]:
        """A chain, oldest first: the facts of `key` (every layer), or the chain of the
        fact `id` (just that fact when it is in none; [] when unknown)."""
        chain_key = check_history_args(key, id)
        if no_such_fact(id):
            return []
        if chain_key is not None:
            return self._port.history_of_key(chain_key)
        return self._port.history_of_fact(str(id))

    def search(
        self,
        query: str,
        top_k: int = 10,
        *,
        mode: SearchMode = "any",
        tags: Sequence[str] | None = None,
        category: str | None = None,
        source: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        layer: str | Sequence[str] | None = None,
        kind: str | None = None,
        min_confidence: float | None = None,
        as_of: datetime | None = None,
    ) -> builtins.list[Fact]:
        if mode == "vector" or mode == "hybrid":
            from ..rules.hybrid import filter_args

            by_name = filter_args(
                tags, category, source, since, until, metadata, layer, kind, min_confidence
            )
            by_name["as_of"] = as_of
            return self._semantic(query, top_k, mode, by_name)
        text = check_query(query, mode)
        terms: tuple[Any, ...] = ()
        if mode == "raw":
            if self._port.raw_refusal is not None:
                raise InvalidArgumentError(self._port.raw_refusal)
            text = raw_match(text) or ""
        else:
            terms = self._port.compiler.terms(text)
        limit = check_limit(top_k, "top_k")
        filters = make_filters(tags, category, source, since, until, metadata)
        items = make_item_filters(layer, kind, min_confidence, as_of)
        if limit <= 0 or not (terms or (mode == "raw" and text)):
            return []
        return self._port.ranked(FactQuery(text, mode, limit, filters, items, terms))

    def _semantic(
        self, query: str, top_k: int, mode: SearchMode, filter_args: dict[str, Any]
    ) -> builtins.list[Fact]:
        """Modes "vector" and "hybrid": the same checks as a lexical search, and an
        embedder; filters apply before ranking in both legs."""
        from ..rules.hybrid import check_semantic  # numpy: only with vectors

        text, limit, filters, items = check_semantic(query, top_k, mode, filter_args)
        self._require_embedder(f"mode={mode!r}")
        if limit <= 0 or not text.strip():
            return []
        terms = self._port.compiler.terms(text) if mode == "hybrid" else ()
        return self._port.semantic(FactQuery(text, mode, limit, filters, items, terms))

    def search_by_metadata(
        self, key: str, value: Any, *, limit: int | None = None
    ) -> builtins.list[Fact]:
        filters = metadata_equal_filter(key, value)
        if limit is None:  # every match, oldest first
            return self._port.listed(FactListing(filters, NO_ITEM_FILTERS, None, oldest_first=True))
        limit = check_limit(limit, "limit")  # bounded: the newest `limit` matches
        if limit <= 0:
            return []
        return self._port.listed(FactListing(filters, NO_ITEM_FILTERS, limit))

    def list(
        self,
        *,
        tags: Sequence[str] | None = None,
        category: str | None = None,
        source: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        limit: int = 20,
        offset: int = 0,
        layer: str | Sequence[str] | None = None,
        kind: str | None = None,
        min_confidence: float | None = None,
        as_of: datetime | None = None,
        state: FactState = "live",
    ) -> builtins.list[Fact]:
        """A page of facts, newest first. `state` says which stored facts: "live" (what
        every read shows), "superseded" (taken over by a later fact of their chain),
        "expired" (past `expires_at`, stored until `expire()`) or "all"; an inspector's
        view of what the agent no longer sees. `as_of` keeps the facts valid then."""
        filters = make_filters(tags, category, source, since, until, metadata)
        items = make_item_filters(layer, kind, min_confidence, as_of)
        limit, offset = check_page(limit, offset)
        state = check_state(state)
        if limit <= 0:
            return []
        return self._port.listed(FactListing(filters, items, limit, offset, state=state))

    def tags(self) -> dict[str, int]:
        return self._port.tags()

    def categories(self) -> builtins.list[str]:
        return self._port.categories()
