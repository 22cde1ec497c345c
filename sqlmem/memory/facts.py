"""`InMemoryFactStore`: the fact store without a file, for tests and throwaway programs.

It keeps the SQLite store's semantics, not just its signatures: the same argument checks
and filters (`sqlmem.rules.filters`), the same tokens (documents go through the FTS
tokenizer via `QueryCompiler.tokens`, after the same `segment` step), and FTS5's BM25
(`sqlmem.search.bm25`), so scores agree with the SQLite store's -bm25() up to rounding, and
the stateful test can compare them.

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from ..config import StoreConfig
from ..errors import FactNotFoundError, InvalidArgumentError
from ..protocols import Embedder, SearchMode
from ..records import Fact
from ..rules.chains import is_valid
from ..rules.embedder import check_embedder
from ..rules.encoding import now_ms
from ..rules.filters import (
    FactRow,
    Filters,
    check_limit,
    check_page,
    check_query,
    is_fact_id,
    make_filters,
    merge_batch,
    metadata_equal_filter,
    prepare_fact,
)
from ..rules.hybrid import check_batch_size, check_semantic, filter_args, semantic_search
from ..rules.items import (
    NO_ITEM_FILTERS,
    ItemFilters,
    check_layer,
    is_live,
    make_item_filters,
    merge_item,
    promotion,
)
from ..rules.resolve import Resolver, check_history_args, no_such_fact, resolve_supersession
from ..rules.rows import build_fact
from ..search.bm25 import occurrences, scores
from ..search.embedding import Embedding
from ..search.query import (
    MAX_QUERY_TERMS,
    QueryCompiler,
    Term,
    compiler_for,
    rarest_terms,
    tokens_of,
)
from ..search.vectors import Vector, rank_by_cosine
from . import chains

__all__ = ["InMemoryFactStore"]


@dataclass
class _Doc:
    """One stored fact, as the SQLite row holds it, plus its tokens."""

    pk: int
    row: FactRow
    created_ms: int
    updated_ms: int
    tag_set: frozenset[str]
    meta: dict[str, Any]
    tokens: tuple[str, ...]
    counts: Counter[str]
    hits: int
    #: Unit vector of the content under the store's embedder, or None.
    vector: Any = None
    #: Its chain and link (`sqlmem.memory.chains`), as the SQLite row holds them.
    chain: str | None = None
    valid_from: int | None = None
    valid_to: int | None = None
    superseded_by: str | None = None

    def fact(self, score: float | None = None) -> Fact:
        r = self.row
        return build_fact(
            r.id,
            r.content,
            r.source,
            r.category,
            r.tags,
            r.metadata,
            self.created_ms,
            self.updated_ms,
            r.layer,
            r.kind,
            r.confidence,
            r.salience,
            r.refs,
            r.expires_ms,
            r.fingerprint,
            self.hits,
            score,
            r.key,
            self.valid_from,
            self.valid_to,
            self.superseded_by,
        )

    def accepted_by(self, filters: Filters, items: ItemFilters, now: int) -> bool:
        r = self.row
        as_of = items.as_of_ms
        return (
            is_live(r.expires_ms, now)
            and is_valid(
                self.valid_from,
                self.created_ms,
                self.valid_to,
                now if as_of is None else as_of,
                as_of=as_of is not None,
            )
            and filters.accepts(self.tag_set, r.category, r.source, self.created_ms, self.meta)
            and items.accepts(r.layer, r.kind, r.confidence)
        )

    def live(self, now: int) -> bool:
        """Visible to reads of now: not expired, valid now."""
        return is_live(self.row.expires_ms, now) and is_valid(
            self.valid_from, self.created_ms, self.valid_to, now, as_of=False
        )

    def unexpired(self, now: int) -> bool:
        """Visible to `get`, history and export (superseded facts too)."""
        return is_live(self.row.expires_ms, now)

    def tf(self, term: Term) -> int:
        """Occurrences of the term's tokens as a consecutive run (overlaps count)."""
        return occurrences(self.tokens, term.tokens, self.counts)


class InMemoryFactStore:
    """`FactStore` held in a dict; same protocol and semantics as `SQLiteFactStore`."""

    def __init__(self, config: StoreConfig | None = None, *, embedder: Embedder | None = None):
        """Only `config.tokenizer` matters here; the other settings concern files.
        `embedder`: vectors and search modes "vector" and "hybrid", as on SQLite."""
        if config is not None and not isinstance(config, StoreConfig):
            raise InvalidArgumentError("config must be a StoreConfig")
        self._compiler: QueryCompiler = compiler_for((config or StoreConfig()).tokenizer)
        self._docs: dict[str, _Doc] = {}
        self._next_pk = 1
        self._lock = threading.RLock()
        self._embedding = Embedding(embedder) if check_embedder(embedder) is not None else None
        #: This thread's open `atomic()` block of an InMemoryDB: its after-block work list
        #: (set by sqlmem.memory.db), None outside one.
        self._open_block: Callable[[], list[Callable[[], None]] | None] = lambda: None

    @property
    def embedder(self) -> Embedder | None:
        """The embedder vectors come from (None: BM25 only)."""
        return self._embedding.embedder if self._embedding is not None else None

    def _vectors_for(self, rows: Sequence[FactRow]) -> dict[str, Any]:
        """Vectors of rows about to be written, computed before the lock is taken (the
        embedding's content-hash cache spares identical texts). Inside an `atomic()`
        block the lock is already held for the whole block: as on SQLite, only known
        vectors are taken then, and the others computed once the block has ended
        (`_fill_after_block`)."""
        embedding = self._embedding
        if embedding is None or not rows:
            return {}
        block = self._open_block()
        texts = [r.content for r in rows]
        vectors = embedding.vectors(texts, run_model=block is None)
        if block is not None:
            later = [(r.id, r.content) for r, v in zip(rows, vectors, strict=True) if v is None]
            if later:
                block.append(lambda: self._fill_after_block(embedding, later))
        return {r.id: v for r, v in zip(rows, vectors, strict=True) if v is not None}

    def _fill_after_block(self, embedding: Embedding, written: list[tuple[str, str]]) -> None:
        """Vectors of facts an `atomic()` block wrote, once it ended: the model runs with
        no lock held; each vector is kept only if its fact still holds the embedded text."""
        vectors = embedding.vectors([content for _, content in written])
        with self._lock:
            for (fact_id, content), vector in zip(written, vectors, strict=True):
                doc = self._docs.get(fact_id)
                if vector is not None and doc is not None and doc.row.content == content:
                    doc.vector = vector

    def __repr__(self) -> str:
        return f"<InMemoryFactStore {len(self._docs)} facts>"

    # -- atomic blocks (sqlmem.memory.db) ---------------------------------------------------

    def _snapshot(self) -> object:
        """The facts as they are now: a stored `_Doc` is replaced on change, never changed in
        place, so a copy of the dict (and of each entry, against future in-place edits) is
        enough."""
        return {key: copy.copy(doc) for key, doc in self._docs.items()}, self._next_pk

    def _restore(self, state: object) -> None:
        assert isinstance(state, tuple)
        self._docs, self._next_pk = state

    # -- writes -------------------------------------------------------------------------

    def index(self, fact: Fact) -> str:
        row = prepare_fact(fact)
        vectors = self._vectors_for([row])
        with self._lock:
            self._put(row, now_ms(), vectors.get(row.id))
        return row.id

    def index_many(self, facts: Iterable[Fact]) -> list[str]:
        return self._index_many(facts, keep_hits=False)

    def restore_many(self, facts: Iterable[Fact]) -> list[str]:
        """`index_many` that also writes each fact's `hits` (as the SQLite store's)."""
        return self._index_many(facts, keep_hits=True)

    def _index_many(self, facts: Iterable[Fact], *, keep_hits: bool) -> list[str]:
        if isinstance(facts, (str, bytes, Mapping)) or not isinstance(facts, Iterable):
            raise InvalidArgumentError("index_many takes an iterable of Fact")
        # all checked first: all or nothing
        rows = [prepare_fact(f, keep_hits=keep_hits) for f in facts]
        merged = merge_batch(rows)
        vectors = {} if keep_hits else self._vectors_for(merged)  # an import embeds after
        with self._lock:
            now = now_ms()
            for row in merged:
                self._put(row, now, vectors.get(row.id))
        return [r.id for r in rows]

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
        self._docs[row.id] = _Doc(
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

    def remember(self, fact: Fact, *, resolver: Resolver | None = None) -> str:
        row = prepare_fact(fact)
        if resolver is not None and not row.key:
            old_id = resolve_supersession(self, resolver, fact)
            if old_id is not None:
                return self.supersede(old_id, fact)
        vectors = self._vectors_for([row])
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

    def supersede(self, old_id: str, fact: Fact) -> str:
        """As the SQLite store's: `fact` right after `old_id` in its chain."""
        is_fact_id(old_id)
        row = prepare_fact(fact)
        vectors = self._vectors_for([row])
        with self._lock:
            now = now_ms()
            row, chain = chains.prepare_supersede(self._docs, old_id, row, now)
            old = self._docs.get(row.id)
            if old is not None and old.chain is not None:
                chains.leave(self._docs, old)
            self._store(row, now, vectors.get(row.id))
            chains.relink(self._docs, self._docs[row.id], chain)
        return row.id

    def history(self, *, key: str | None = None, id: str | None = None) -> list[Fact]:
        """As the SQLite store's: a chain, oldest first."""
        chain_key = check_history_args(key, id)
        if no_such_fact(id):
            return []
        with self._lock:
            now = now_ms()
            if chain_key is not None:
                found = [d for d in self._docs.values() if d.chain == chain_key]
            else:
                doc = self._docs.get(str(id))
                if doc is None:
                    return []
                if doc.chain is None:
                    found = [doc]
                else:
                    found = [
                        d
                        for d in self._docs.values()
                        if d.chain == doc.chain and d.row.layer == doc.row.layer
                    ]
            found = [d for d in found if d.unexpired(now)]
            found.sort(key=lambda d: (chains.effective_from(d), d.pk))
            return [d.fact() for d in found]

    def ids_where(self, derived: Callable[[str, str], bool]) -> list[str]:
        """Ids of the stored facts whose (references JSON, source) `derived` accepts
        (`InMemoryDB.forget`; not part of the FactStore protocol)."""
        with self._lock:
            return [i for i, d in self._docs.items() if derived(d.row.refs, d.row.source)]

    def rewrite_refs(self, rewrite: Callable[[str], str | None]) -> None:
        """Replace each fact's references JSON by `rewrite`'s answer when it gives one
        (`InMemoryDB.forget`; not part of the FactStore protocol)."""
        with self._lock:
            for doc in self._docs.values():
                new = rewrite(doc.row.refs)
                if new is not None:
                    doc.row = doc.row._replace(refs=new)

    def _delete_doc(self, fact_id: str) -> None:
        chains.splice_out(self._docs, self._docs[fact_id])
        del self._docs[fact_id]

    def _merge(self, doc: _Doc, row: FactRow, now: int) -> str:
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

    def promote(self, fact_id: str, layer: str) -> Fact:
        layer = check_layer(layer)
        with self._lock:
            now = now_ms()
            doc = self._docs.get(fact_id) if is_fact_id(fact_id) else None
            if doc is not None and doc.unexpired(now):
                if doc.row.layer != layer:
                    chains.moved(self._docs, doc, doc.row.key, layer, doc.valid_from)
                    doc.row = doc.row._replace(layer=layer)
                    doc.updated_ms = now
                    chains.place_keyed(self._docs, doc)
                return doc.fact()
        raise FactNotFoundError(f"no fact with id {fact_id!r}")

    def promote_eligible(
        self,
        *,
        from_layer: str = "episodic",
        to_layer: str = "semantic",
        min_confidence: float = 0.75,
        min_hits: int = 2,
    ) -> list[str]:
        p = promotion(from_layer, to_layer, min_confidence, min_hits)
        with self._lock:
            now = now_ms()
            found = [
                d
                for d in self._docs.values()
                if d.row.layer == p["from_layer"]
                and d.row.confidence >= p["min_confidence"]
                and d.hits >= p["min_hits"]
                and d.live(now)
            ]
            found.sort(key=lambda d: (d.created_ms, d.pk))
            for doc in found:
                chains.moved(self._docs, doc, doc.row.key, p["to_layer"], doc.valid_from)
                doc.row = doc.row._replace(layer=p["to_layer"])
                doc.updated_ms = now
                chains.place_keyed(self._docs, doc)
            return [d.row.id for d in found]

    def expire(self) -> int:
        with self._lock:
            now = now_ms()
            gone = [i for i, d in self._docs.items() if not d.unexpired(now)]
            for fact_id in gone:
                self._delete_doc(fact_id)
        return len(gone)

    def delete(self, fact_id: str) -> None:
        with self._lock:
            if is_fact_id(fact_id) and fact_id in self._docs:
                self._delete_doc(fact_id)
                return
        raise FactNotFoundError(f"no fact with id {fact_id!r}")

    def delete_many(self, fact_ids: Iterable[str]) -> int:
        if isinstance(fact_ids, (str, bytes)) or not isinstance(fact_ids, Iterable):
            raise InvalidArgumentError("delete_many takes an iterable of fact ids")
        ids = [i for i in fact_ids if is_fact_id(i)]
        with self._lock:
            found = {i for i in ids if i in self._docs}
            for fact_id in found:
                self._delete_doc(fact_id)
        return len(found)

    # -- reads --------------------------------------------------------------------------

    def get(self, fact_id: str) -> Fact | None:
        if not is_fact_id(fact_id):
            return None
        with self._lock:
            doc = self._docs.get(fact_id)
            return doc.fact() if doc is not None and doc.unexpired(now_ms()) else None

    def count(self) -> int:
        with self._lock:
            now = now_ms()
            return sum(1 for d in self._docs.values() if d.live(now))

    def __len__(self) -> int:
        return self.count()

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
    ) -> list[Fact]:
        if mode == "vector" or mode == "hybrid":
            by_name = filter_args(
                tags, category, source, since, until, metadata, layer, kind, min_confidence
            )
            by_name["as_of"] = as_of
            return self._semantic(query, top_k, mode, by_name)
        check_query(query, mode)
        if mode == "raw":
            raise InvalidArgumentError(
                "mode='raw' (FTS5 query syntax) needs the SQLite store; "
                "InMemoryFactStore supports 'any' and 'all'"
            )
        limit = check_limit(top_k, "top_k")
        filters = make_filters(tags, category, source, since, until, metadata)
        items = make_item_filters(layer, kind, min_confidence, as_of)
        terms = self._compiler.terms(query)
        if not terms or limit <= 0:
            return []
        with self._lock:
            if len(terms) > MAX_QUERY_TERMS:  # the rarest, as the SQLite store keeps them
                docs = Counter[str]()
                wanted = tokens_of(terms)
                for doc in self._docs.values():
                    docs.update(wanted.intersection(doc.counts))
                terms = rarest_terms(terms, docs, "all" if mode == "all" else "any")
                if not terms:
                    return []
            return self._ranked(terms, mode == "all", filters, items, limit)

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

    def _semantic(
        self, query: str, top_k: int, mode: SearchMode, filter_args: dict[str, Any]
    ) -> list[Fact]:
        """Modes "vector" and "hybrid", as the SQLite store (rules.hybrid, search.vectors):
        candidates in pk order, so equal cosines rank alike in both."""
        text, limit, filters, items = check_semantic(query, top_k, mode, filter_args)
        embedding = self._require_embedding(f"mode={mode!r}")
        if limit <= 0 or not text.strip():
            return []
        return semantic_search(
            mode,
            limit,
            embedding.query(text),  # before the lock
            lambda vector, wanted: self._nearest(vector, wanted, filters, items),
            lambda wanted: self.search(text, wanted, mode="any", **filter_args),
        )

    def _nearest(
        self, vector: Vector, wanted: int, filters: Filters, items: ItemFilters
    ) -> list[Fact]:
        """The vector leg: exact cosine over the live facts passing the filters."""
        with self._lock:
            now = now_ms()
            docs = sorted(
                (
                    d
                    for d in self._docs.values()
                    if d.vector is not None
                    and d.vector.shape == vector.shape
                    and d.accepted_by(filters, items, now)
                ),
                key=lambda d: d.pk,
            )
        if not docs:
            return []
        best = rank_by_cosine(np.stack([d.vector for d in docs]), vector, wanted)
        return [docs[i].fact(cosine) for i, cosine in best]

    def _require_embedding(self, what: str) -> Embedding:
        if self._embedding is None:
            raise InvalidArgumentError(f"{what} needs an embedder: InMemoryFactStore(embedder=...)")
        return self._embedding

    def embed_pending(
        self, *, batch_size: int = 64, progress: Callable[[int, int], object] | None = None
    ) -> int:
        """Vectors for the live facts that have none; returns how many were added."""
        batch_size = check_batch_size(batch_size)
        if progress is not None and not callable(progress):
            raise InvalidArgumentError("progress must be callable or None")
        embedding = self._require_embedding("embed_pending")
        with self._lock:
            now = now_ms()
            pending = sorted(
                (d.pk, d.row.id, d.row.content)
                for d in self._docs.values()
                if d.vector is None and d.unexpired(now)
            )
        done = 0
        for start in range(0, len(pending), batch_size):
            batch = pending[start : start + batch_size]
            vectors = embedding.vectors([content for _, _, content in batch])
            with self._lock:
                for (_, fact_id, content), vector in zip(batch, vectors, strict=True):
                    doc = self._docs.get(fact_id)
                    if vector is not None and doc is not None and doc.row.content == content:
                        doc.vector = vector
                        done += 1
            if progress is not None:
                progress(done, len(pending))
        return done

    def without_vectors(self) -> int:
        """Live facts without a vector (for `stats()`-like reporting)."""
        with self._lock:
            now = now_ms()
            return sum(1 for d in self._docs.values() if d.vector is None and d.unexpired(now))

    def search_by_metadata(self, key: str, value: Any, *, limit: int | None = None) -> list[Fact]:
        filters = metadata_equal_filter(key, value)
        if limit is not None:  # bounded: the newest `limit` matches, like list()
            limit = check_limit(limit, "limit")
            if limit <= 0:
                return []
        with self._lock:
            now = now_ms()
            found = [d for d in self._docs.values() if d.accepted_by(filters, NO_ITEM_FILTERS, now)]
            if limit is None:
                found.sort(key=lambda d: (d.created_ms, d.pk))
                return [d.fact() for d in found]
            found.sort(key=lambda d: (d.created_ms, d.pk), reverse=True)
            return [d.fact() for d in found[:limit]]

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
    ) -> list[Fact]:
        filters = make_filters(tags, category, source, since, until, metadata)
        items = make_item_filters(layer, kind, min_confidence, as_of)
        limit, offset = check_page(limit, offset)
        if limit <= 0:
            return []
        with self._lock:
            now = now_ms()
            found = [d for d in self._docs.values() if d.accepted_by(filters, items, now)]
            found.sort(key=lambda d: (d.created_ms, d.pk), reverse=True)
            return [d.fact() for d in found[offset : offset + limit]]
