"""`InMemoryFactStore`: the fact store without a file, for tests and throwaway programs.

It keeps the SQLite store's semantics, not just its signatures: the same front
(`sqlmem.stores.facts`: argument checks, filters, batches), the same tokens (documents go
through the FTS tokenizer via `QueryCompiler.tokens`, after the same `segment` step), and
FTS5's BM25 (`sqlmem.search.bm25`), so scores agree with the SQLite store's -bm25() up to
rounding, and the stateful test can compare them. `InMemoryFactPort` holds the facts
(`facts_docs.FactDoc`) in a dict.

Raw mode (FTS5 syntax) is not supported: re-implementing FTS5's query language would be
a second parser that drifts from the real one. It raises InvalidArgumentError; use the
SQLite store for raw queries.

Thread-safe: one lock around every operation (reads included, they are short).
"""

from __future__ import annotations

import copy
import json
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ..config import StoreConfig
from ..errors import InvalidArgumentError
from ..protocols import Embedder
from ..records import Fact
from ..rules.embedder import check_embedder
from ..rules.encoding import now_ms
from ..rules.filters import FactRow, Filters
from ..rules.hybrid import semantic_search
from ..rules.items import ItemFilters, merge_item
from ..search.bm25 import scores
from ..search.embedding import Embedding
from ..search.query import (
    MAX_QUERY_TERMS,
    Mode,
    QueryCompiler,
    Term,
    compiler_for,
    rarest_terms,
    tokens_of,
)
from ..stores.facts import FactStoreFront
from ..stores.facts_port import FactListing, FactQuery
from . import chains
from .facts_docs import FactDoc
from .facts_vectors import InMemoryFactVectors

__all__ = ["InMemoryFactPort", "InMemoryFactStore"]


class InMemoryFactPort:
    """The facts in a dict, under one lock (an `InMemoryDB` shares its own)."""

    raw_refusal: str | None = (
        "mode='raw' (FTS5 query syntax) needs the SQLite store; "
        "InMemoryFactStore supports 'any' and 'all'"
    )

    def __init__(self, config: StoreConfig, embedder: Embedder | None) -> None:
        self._compiler: QueryCompiler = compiler_for(config.tokenizer)
        self._docs: dict[str, FactDoc] = {}
        self._next_pk = 1
        self._lock = threading.RLock()
        embedding = Embedding(embedder) if check_embedder(embedder) is not None else None
        self.vectors = InMemoryFactVectors(self, embedding)
        #: This thread's open `atomic()` block of an InMemoryDB: its after-block work list
        #: (set by sqlmem.inmemory.db), None outside one.
        self._open_block: Callable[[], list[Callable[[], None]] | None] = lambda: None

    def __repr__(self) -> str:
        return f"<InMemoryFactStore {len(self._docs)} facts>"

    @property
    def compiler(self) -> QueryCompiler:
        return self._compiler

    # -- atomic blocks (sqlmem.inmemory.db) ---------------------------------------------------

    def _snapshot(self) -> object:
        """The facts as they are now: a stored `FactDoc` is replaced on change, never
        changed in place, so a copy of the dict (and of each entry, against future
        in-place edits) is enough."""
        return {key: copy.copy(doc) for key, doc in self._docs.items()}, self._next_pk

    def _restore(self, state: object) -> None:
        assert isinstance(state, tuple)
        self._docs, self._next_pk = state

    # -- writes -------------------------------------------------------------------------

    def write(self, rows: Sequence[FactRow], *, embed: bool) -> None:
        vectors = self.vectors.for_rows(rows) if embed else {}  # an import embeds after
        with self._lock:
            now = now_ms()
            for row in rows:
                self._put(row, now, vectors.get(row.id))

    def _put(self, row: FactRow, now: int, vector: Any = None) -> None:
        old = self._docs.get(row.id)
        if old is not None:  # an update: out of its chain when it moves (as on SQLite)
            new_from = old.valid_from if row.valid_from_ms is None else row.valid_from_ms
            chains.moved(self._docs, old, row.key, row.layer, new_from)
        self._store(row, now, vector)
        chains.place_keyed(self._docs, self._docs[row.id])

    def _store(self, row: FactRow, now: int, vector: Any = None) -> None:
        old = self._docs.get(row.id)
        if vector is None and old is not None and old.row.content == row.content:
            vector = old.vector  # a fact whose text did not change keeps its vector
        if old is None:
            pk, self._next_pk = self._next_pk, self._next_pk + 1
            created = now if row.created_ms is None else row.created_ms
        else:
            pk = old.pk
            created = old.created_ms if row.created_ms is None else row.created_ms
        tokens = self._compiler.tokens(row.search_text or row.content)
        self._docs[row.id] = FactDoc(
            pk=pk,
            row=row,
            created_ms=created,
            updated_ms=now if row.updated_ms is None else row.updated_ms,
            tag_set=frozenset(json.loads(row.tags)),
            meta=json.loads(row.metadata),
            tokens=tokens,
            counts=Counter(tokens),
            hits=(1 if old is None else old.hits) if row.hits is None else row.hits,
            vector=vector,
            chain=None if old is None else old.chain,
            valid_from=(None if old is None else old.valid_from)
            if row.valid_from_ms is None
            else row.valid_from_ms,
            valid_to=None if old is None else old.valid_to,
            superseded_by=None if old is None else old.superseded_by,
        )

    def remember(self, row: FactRow) -> str:
        vectors = self.vectors.for_rows([row])
        with self._lock:
            now = now_ms()
            if row.id not in self._docs and row.valid_from_ms is None:
                found = [
                    d
                    for d in self._docs.values()
                    if d.row.fingerprint == row.fingerprint
                    and d.row.layer == row.layer
                    and d.row.key == row.key
                    and d.live(now)
                ]
                if found:
                    return self._merge(min(found, key=lambda d: (d.created_ms, d.pk)), row, now)
            self._put(row, now, vectors.get(row.id))
        return row.id

    def _merge(self, doc: FactDoc, row: FactRow, now: int) -> str:
        r = doc.row
        stored = (r.tags, r.refs, r.metadata, r.confidence, r.salience, r.expires_ms)
        merged = merge_item(
            stored, row.tags, row.refs, row.metadata, row.confidence, row.salience, row.expires_ms
        )
        doc.row = r._replace(
            tags=merged.tags,
            refs=merged.refs,
            metadata=merged.metadata,
            confidence=merged.confidence,
            salience=merged.salience,
            expires_ms=merged.expires_ms,
        )
        doc.tag_set = frozenset(json.loads(merged.tags))
        doc.meta = json.loads(merged.metadata)
        doc.hits += 1
        doc.updated_ms = now
        return r.id

    def supersede(self, old_id: str, row: FactRow) -> str:
        vectors = self.vectors.for_rows([row])
        with self._lock:
            now = now_ms()
            row, chain = chains.prepare_supersede(self._docs, old_id, row, now)
            old = self._docs.get(row.id)
            if old is not None and old.chain is not None:
                chains.leave(self._docs, old)
            self._store(row, now, vectors.get(row.id))
            chains.relink(self._docs, self._docs[row.id], chain)
        return row.id

    def ids_where(self, derived: Callable[[str, str], bool]) -> list[str]:
        """Ids of the stored facts whose (references JSON, source) `derived` accepts."""
        with self._lock:
            return [i for i, d in self._docs.items() if derived(d.row.refs, d.row.source)]

    def rewrite_refs(self, rewrite: Callable[[str], str | None]) -> None:
        """Replace each fact's references JSON by `rewrite`'s answer when it gives one."""
        with self._lock:
            for doc in self._docs.values():
                new = rewrite(doc.row.refs)
                if new is not None:
                    doc.row = doc.row._replace(refs=new)

    def promote(self, fact_id: str, layer: str) -> Fact | None:
        with self._lock:
            now = now_ms()
            doc = self._docs.get(fact_id)
            if doc is None or not doc.unexpired(now):
                return None
            if doc.row.layer != layer:
                self._move(doc, layer, now)
            return doc.fact()

    def _move(self, doc: FactDoc, layer: str, now: int) -> None:
        """`doc` into `layer`: out of its chain, into its key's chain of that layer."""
        chains.moved(self._docs, doc, doc.row.key, layer, doc.valid_from)
        doc.row = doc.row._replace(layer=layer)
        doc.updated_ms = now
        chains.place_keyed(self._docs, doc)

    def promote_eligible(self, params: dict[str, Any]) -> list[str]:
        with self._lock:
            now = now_ms()
            found = [
                d
                for d in self._docs.values()
                if d.row.layer == params["from_layer"]
                and d.row.confidence >= params["min_confidence"]
                and d.hits >= params["min_hits"]
                and d.live(now)
            ]
            found.sort(key=lambda d: (d.created_ms, d.pk))
            for doc in found:
                self._move(doc, params["to_layer"], now)
            return [d.row.id for d in found]

    def expire(self) -> int:
        with self._lock:
            now = now_ms()
            gone = [i for i, d in self._docs.items() if not d.unexpired(now)]
            for fact_id in gone:
                self._delete_doc(fact_id)
        return len(gone)

    def delete(self, ids: Sequence[str]) -> int:
        with self._lock:
            found = {i for i in ids if i in self._docs}
            for fact_id in found:
                self._delete_doc(fact_id)
        return len(found)

    def _delete_doc(self, fact_id: str) -> None:
        chains.splice_out(self._docs, self._docs[fact_id])
        del self._docs[fact_id]

    # -- reads --------------------------------------------------------------------------

    def get(self, fact_id: str) -> Fact | None:
        with self._lock:
            doc = self._docs.get(fact_id)
            return doc.fact() if doc is not None and doc.unexpired(now_ms()) else None

    def count(self) -> int:
        with self._lock:
            now = now_ms()
            return sum(1 for d in self._docs.values() if d.live(now))

    def history_of_key(self, key: str) -> list[Fact]:
        with self._lock:
            return self._chain([d for d in self._docs.values() if d.chain == key])

    def history_of_fact(self, fact_id: str) -> list[Fact]:
        with self._lock:
            doc = self._docs.get(fact_id)
            if doc is None:
                return []
            if doc.chain is None:
                return self._chain([doc])
            chain, layer = doc.chain, doc.row.layer
            return self._chain(
                [d for d in self._docs.values() if d.chain == chain and d.row.layer == layer]
            )

    def _chain(self, docs: list[FactDoc]) -> list[Fact]:
        """The unexpired `docs` as a chain, oldest first."""
        now = now_ms()
        found = [d for d in docs if d.unexpired(now)]
        found.sort(key=lambda d: (chains.effective_from(d), d.pk))
        return [d.fact() for d in found]

    def ranked(self, query: FactQuery) -> list[Fact]:
        terms = query.terms
        mode: Mode = "all" if query.mode == "all" else "any"
        with self._lock:
            if len(terms) > MAX_QUERY_TERMS:  # the rarest, as the SQLite store keeps them
                docs = Counter[str]()
                wanted = tokens_of(terms)
                for doc in self._docs.values():
                    docs.update(wanted.intersection(doc.counts))
                terms = rarest_terms(terms, docs, mode)
                if not terms:
                    return []
            return self._ranked(terms, mode == "all", query.filters, query.items, query.limit)

    def _ranked(
        self,
        terms: Sequence[Term],
        every: bool,
        filters: Filters,
        items: ItemFilters,
        limit: int,
    ) -> list[Fact]:
        docs = list(self._docs.values())
        now = now_ms()
        # Every fact counts in N, n_t and avgdl (as in FTS5, expired ones too until
        # expire() deletes them); the filters only pick rows.
        ranked = scores(
            [[d.tf(t) for t in terms] for d in docs],
            [len(d.tokens) for d in docs],
            every=every,
            keep=lambda i: docs[i].accepted_by(filters, items, now),
        )
        # Best first; equal scores in insertion order (an arbitrary but stable choice).
        ranked.sort(key=lambda hit: (-hit[1], docs[hit[0]].pk))
        return [docs[i].fact(score) for i, score in ranked[:limit]]

    def semantic(self, query: FactQuery) -> list[Fact]:
        """Modes "vector" and "hybrid", as the SQLite store (rules.hybrid, search.vectors):
        candidates in pk order, so equal cosines rank alike in both."""
        return semantic_search(
            query.mode,
            query.limit,
            self.vectors.embedding.query(query.text),  # before the lock
            lambda vector, wanted: self.vectors.nearest(vector, wanted, query.filters, query.items),
            lambda wanted: (
                self.ranked(replace(query, mode="any", limit=wanted)) if query.terms else []
            ),
        )

    def listed(self, listing: FactListing) -> list[Fact]:
        with self._lock:
            now = now_ms()
            filters, items, state = listing.filters, listing.items, listing.state
            found = [d for d in self._docs.values() if d.listed_in(filters, items, now, state)]
            found.sort(key=lambda d: (d.created_ms, d.pk), reverse=not listing.oldest_first)
            if listing.limit is not None:
                found = found[listing.offset : listing.offset + listing.limit]
            return [d.fact() for d in found]

    def tags(self) -> dict[str, int]:
        with self._lock:
            now = now_ms()
            counts = Counter(t for d in self._docs.values() if d.live(now) for t in d.tag_set)
        return dict(sorted(counts.items()))

    def categories(self) -> list[str]:
        with self._lock:
            now = now_ms()
            return sorted(
                {d.row.category for d in self._docs.values() if d.row.category and d.live(now)}
            )


class InMemoryFactStore(FactStoreFront):
    """`FactStore` held in a dict: the fact store front over `InMemoryFactPort`; same
    protocol and semantics as `SQLiteFactStore`."""

    _port: InMemoryFactPort

    def __init__(self, config: StoreConfig | None = None, *, embedder: Embedder | None = None):
        """Only `config.tokenizer` matters here; the other settings concern files.
        `embedder`: vectors and search modes "vector" and "hybrid", as on SQLite."""
        if config is not None and not isinstance(config, StoreConfig):
            raise InvalidArgumentError("config must be a StoreConfig")
        super().__init__(InMemoryFactPort(config or StoreConfig(), embedder))

    def restore_many(self, facts: Sequence[Fact]) -> list[str]:
        """`index_many` that also writes each fact's `hits` (as the SQLite store's)."""
        return self._index_many(facts, keep_hits=True)

    def ids_where(self, derived: Callable[[str, str], bool]) -> list[str]:
        """Ids of the stored facts whose (references JSON, source) `derived` accepts
        (`InMemoryDB.forget`; not part of the FactStore protocol)."""
        return self._port.ids_where(derived)

    def rewrite_refs(self, rewrite: Callable[[str], str | None]) -> None:
        """Replace each fact's references JSON by `rewrite`'s answer when it gives one
        (`InMemoryDB.forget`; not part of the FactStore protocol)."""
        self._port.rewrite_refs(rewrite)

    def without_vectors(self) -> int:
        """Live facts without a vector (for `stats()`-like reporting)."""
        return self._port.vectors.without_vectors()

    # What `InMemoryDB` shares with its stores: one lock, the open `atomic()` block, and
    # the snapshots a failed block is rolled back to.

    @property
    def _lock(self) -> threading.RLock:
        return self._port._lock

    @_lock.setter
    def _lock(self, lock: threading.RLock) -> None:
        self._port._lock = lock

    @property
    def _open_block(self) -> Callable[[], list[Callable[[], None]] | None]:
        return self._port._open_block

    @_open_block.setter
    def _open_block(self, block: Callable[[], list[Callable[[], None]] | None]) -> None:
        self._port._open_block = block

    @property
    def _docs(self) -> dict[str, FactDoc]:
        return self._port._docs

    def _snapshot(self) -> object:
        return self._port._snapshot()

    def _restore(self, state: object) -> None:
        self._port._restore(state)
