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

import json
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..config import StoreConfig
from ..errors import FactNotFoundError, InvalidArgumentError
from ..protocols import SearchMode
from ..records import Fact
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
from ..rules.rows import build_fact
from ..search.bm25 import occurrences, scores
from ..search.query import (
    MAX_QUERY_TERMS,
    QueryCompiler,
    Term,
    compiler_for,
    rarest_terms,
    tokens_of,
)

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
            score,
        )

    def accepted_by(self, filters: Filters) -> bool:
        r = self.row
        return filters.accepts(self.tag_set, r.category, r.source, self.created_ms, self.meta)

    def tf(self, term: Term) -> int:
        """Occurrences of the term's tokens as a consecutive run (overlaps count)."""
        return occurrences(self.tokens, term.tokens, self.counts)


class InMemoryFactStore:
    """`FactStore` held in a dict; same protocol and semantics as `SQLiteFactStore`."""

    def __init__(self, config: StoreConfig | None = None) -> None:
        """Only `config.tokenizer` matters here; the other settings concern files."""
        if config is not None and not isinstance(config, StoreConfig):
            raise InvalidArgumentError("config must be a StoreConfig")
        self._compiler: QueryCompiler = compiler_for((config or StoreConfig()).tokenizer)
        self._docs: dict[str, _Doc] = {}
        self._next_pk = 1
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"<InMemoryFactStore {len(self._docs)} facts>"

    # -- writes -------------------------------------------------------------------------

    def index(self, fact: Fact) -> str:
        row = prepare_fact(fact)
        with self._lock:
            self._put(row, now_ms())
        return row.id

    def index_many(self, facts: Iterable[Fact]) -> list[str]:
        if isinstance(facts, (str, bytes, Mapping)) or not isinstance(facts, Iterable):
            raise InvalidArgumentError("index_many takes an iterable of Fact")
        rows = [prepare_fact(f) for f in facts]  # all checked first: all or nothing
        with self._lock:
            now = now_ms()
            for row in merge_batch(rows):
                self._put(row, now)
        return [r.id for r in rows]

    def _put(self, row: FactRow, now: int) -> None:
        old = self._docs.get(row.id)
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
        )

    def delete(self, fact_id: str) -> None:
        with self._lock:
            if is_fact_id(fact_id) and fact_id in self._docs:
                del self._docs[fact_id]
                return
        raise FactNotFoundError(f"no fact with id {fact_id!r}")

    def delete_many(self, fact_ids: Iterable[str]) -> int:
        if isinstance(fact_ids, (str, bytes)) or not isinstance(fact_ids, Iterable):
            raise InvalidArgumentError("delete_many takes an iterable of fact ids")
        ids = [i for i in fact_ids if is_fact_id(i)]
        with self._lock:
            found = {i for i in ids if i in self._docs}
            for fact_id in found:
                del self._docs[fact_id]
        return len(found)

    # -- reads --------------------------------------------------------------------------

    def get(self, fact_id: str) -> Fact | None:
        if not is_fact_id(fact_id):
            return None
        with self._lock:
            doc = self._docs.get(fact_id)
            return doc.fact() if doc is not None else None

    def count(self) -> int:
        with self._lock:
            return len(self._docs)

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
    ) -> list[Fact]:
        check_query(query, mode)
        if mode == "raw":
            raise InvalidArgumentError(
                "mode='raw' (FTS5 query syntax) needs the SQLite store; "
                "InMemoryFactStore supports 'any' and 'all'"
            )
        limit = check_limit(top_k, "top_k")
        filters = make_filters(tags, category, source, since, until, metadata)
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
            return self._ranked(terms, mode == "all", filters, limit)

    def _ranked(
        self, terms: Sequence[Term], every: bool, filters: Filters, limit: int
    ) -> list[Fact]:
        docs = list(self._docs.values())
        # Every fact counts in N, n_t and avgdl (as in FTS5); the filters only pick rows.
        ranked = scores(
            [[d.tf(t) for t in terms] for d in docs],
            [len(d.tokens) for d in docs],
            every=every,
            keep=lambda i: docs[i].accepted_by(filters),
        )
        # Best first; equal scores in insertion order (an arbitrary but stable choice).
        ranked.sort(key=lambda hit: (-hit[1], docs[hit[0]].pk))
        return [docs[i].fact(score) for i, score in ranked[:limit]]

    def search_by_metadata(self, key: str, value: Any) -> list[Fact]:
        filters = metadata_equal_filter(key, value)
        with self._lock:
            found = [d for d in self._docs.values() if d.accepted_by(filters)]
            found.sort(key=lambda d: (d.created_ms, d.pk))
            return [d.fact() for d in found]

    def tags(self) -> dict[str, int]:
        with self._lock:
            counts = Counter(t for d in self._docs.values() for t in d.tag_set)
        return dict(sorted(counts.items()))

    def categories(self) -> list[str]:
        with self._lock:
            return sorted({d.row.category for d in self._docs.values() if d.row.category})

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
    ) -> list[Fact]:
        filters = make_filters(tags, category, source, since, until, metadata)
        limit, offset = check_page(limit, offset)
        if limit <= 0:
            return []
        with self._lock:
            found = [d for d in self._docs.values() if d.accepted_by(filters)]
            found.sort(key=lambda d: (d.created_ms, d.pk), reverse=True)
            return [d.fact() for d in found[offset : offset + limit]]
