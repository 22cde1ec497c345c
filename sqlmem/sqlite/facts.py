"""The SQLite fact store: long-term facts, searched with FTS5 and ranked by BM25.

Storage model (migrations/0001_initial.sql):
- `facts`: one row per fact; integer `pk` (the FTS rowid) and the user's text `id`
  (UNIQUE). tags and metadata are JSON text, timestamps unix milliseconds (UTC).
  `search_text` holds the content with no-space-script characters set apart
  (`query.segment`), NULL for ordinary text.
- `fact_tags(tag, fact_pk)`: one row per distinct tag, kept by triggers, so a tag filter
  is an index lookup rather than a JSON scan.
- `facts_fts`: FTS5 external content over the view `coalesce(search_text, content)`,
  kept in sync by triggers. Writes are `INSERT ... ON CONFLICT(id) DO UPDATE` (never
  REPLACE, which deletes without firing the delete trigger and leaves stale postings), so
  an updated fact's old words are removed from the index with the old text.

Query plans (EXPLAIN QUERY PLAN; pinned by tests/unit/test_fact_search.py on 4,000 facts,
with and without ANALYZE statistics, for every filter):
- No filter: `CO-ROUTINE r` / `SCAN facts_fts VIRTUAL TABLE INDEX 0:M1` (FTS5 takes the
  MATCH; SQLite's sorter keeps the best `:limit` by `bm25()`, `USE TEMP B-TREE FOR ORDER
  BY`), then `SEARCH f USING INTEGER PRIMARY KEY (rowid=?)` for the top_k rows only. The
  cost is the posting lists of the query words, not the table size. FTS5's own `ORDER BY
  rank` was ~1.5x slower for OR and ~1.1x for AND (p50, 100,000 facts; see facts_sql).
- Filters: the same FTS scan is the outer loop and still delivers rows in rank order (no
  `USE TEMP B-TREE`); each candidate is a primary-key lookup tested by the predicates
  (tags through the covering index fact_tags_fact), and reading stops once `:limit`
  pass (FTS5 has scored every match by then, as it does without filters). So filtering
  happens before the LIMIT and the result is the best top_k of what passes. CROSS JOIN
  pins this order: we do not let a selective filter (a rare source, a recent `since`)
  drive the plan through its index, because the planner cannot see the selectivity of a
  MATCH, and the FTS-driven cost is bounded by the query's posting lists, which the same
  query pays without filters (p50 ~1-2 ms for two ORed words + a filter).

Metadata filters (equalities and 0.2's `$` operators, compiled by `rules.metadata`) are
one constant predicate over bound JSON, checked on the candidates only. A `list` with
tags and a metadata filter is driven by the rarest wanted tag's fact_tags rows, never a
scan of facts (pinned by tests/unit/test_metadata_plans.py).

Mode "any" is the exact OR query on stores under 20,000 facts, for one-word queries,
queries without a common word and filtered searches. On larger stores a query mixing
rare and common words ranks the facts holding a rare word (and, when some are expected,
the facts holding every word, with their exact OR score), and a query of common words
only runs as AND; when that finds fewer than `top_k` facts the exact OR query runs.
Trade-off and numbers in `sqlmem.sqlite.fts_any`: ~3.5x faster than exact OR at the median on
100,000 facts, top-10 agreement with it 0.95.

Long queries are bounded (`sqlmem.search.query.MAX_QUERY_TERMS`): in modes "any" and "all" at
most 64 distinct words reach FTS5, the rarest (row counts read from the vocabulary in the
search's own snapshot; see `query.rarest_terms` for what the result then means); a raw
query of more words is refused with `InvalidQueryError`, FTS5 syntax not being safely
trimmable.

Reads use a pooled reader connection, writes one short `BEGIN IMMEDIATE` transaction
through the engine's writer. Memory items: remember and promotion in
`sqlmem.sqlite.items`; every read skips expired facts (`facts_sql.LIVE`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import apsw

from ..errors import FactNotFoundError, InvalidArgumentError, InvalidQueryError
from ..protocols import Embedder, SearchMode
from ..records import Fact
from ..rules.embedder import check_embedder
from ..rules.encoding import dumps_json, now_ms
from ..rules.filters import (
    NO_FILTERS,
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
from ..rules.items import (
    NO_ITEM_FILTERS,
    ItemFilters,
    check_layer,
    make_item_filters,
    promotion,
)
from ..rules.resolve import Resolver, check_history_args, no_such_fact, resolve_supersession
from ..rules.rows import facts_from_rows
from ..search.query import (
    MAX_QUERY_TERMS,
    Mode,
    QueryCompiler,
    Term,
    check_raw_query,
    compiler_for,
    phrases,
)
from . import chains, items
from . import facts_sql as sql
from .engine import Engine
from .fts_any import AnyShortcut, capped_terms

if TYPE_CHECKING:
    from ..rules.candidates import FactCandidate
    from .vectors import FactVectors

__all__ = ["SQLiteFactStore", "raw_match"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def raw_match(query: str) -> str | None:
    """A `mode="raw"` query as MATCH text (FTS5 syntax, passed through), or None when it
    is blank. Lone surrogates (which UTF-8 cannot hold) are dropped, as the SPEC says; more
    than `MAX_QUERY_TERMS` words raise `InvalidQueryError` (`query.check_raw_query`)."""
    text = _SURROGATE.sub("", query)
    check_raw_query(text)
    return text if text.strip() else None


class SQLiteFactStore:
    """`FactStore` over one database file. Thread-safe (the engine serialises writes)."""

    def __init__(self, engine: Engine, embedder: Embedder | None = None) -> None:
        """`embedder`: every fact written gets a vector of its content, and
        search offers modes "vector" and "hybrid"."""
        self._engine = engine
        self._any = AnyShortcut(sql.ANY)
        self._vectors: FactVectors | None = None
        if check_embedder(embedder) is not None:  # numpy loads only with an embedder
            from ..search.embedding import Embedding
            from .vectors import FactVectors

            self._vectors = FactVectors(engine, Embedding(embedder))

    @property
    def embedder(self) -> Embedder | None:
        """The embedder vectors come from (None: BM25 only)."""
        return self._vectors.embedding.embedder if self._vectors is not None else None

    def __repr__(self) -> str:
        return f"<SQLiteFactStore {str(self._engine.path)!r}>"

    # -- writes -------------------------------------------------------------------------

    def index(self, fact: Fact) -> str:
        row = prepare_fact(fact)
        vectors = self._vectors
        prepared = vectors.prepare([row]) if vectors is not None else None  # no lock held
        with self._engine.write() as conn:
            self._write_rows(conn, [row], now_ms())
            if prepared:
                vectors.write(conn, prepared)  # type: ignore[union-attr]
        return row.id

    def _write_rows(self, conn: apsw.Connection, rows: Sequence[FactRow], now: int) -> None:
        """Upsert `rows`, then place keyed (or moved chained) facts in their chains."""
        self._upsert(conn, rows, now)
        if any(r.key for r in rows):
            chains.place_keyed(conn, ((r.id, r.key) for r in rows))

    def index_many(self, facts: Iterable[Fact]) -> list[str]:
        return self._index_many(facts, keep_hits=False)

    def restore_many(self, facts: Iterable[Fact]) -> list[str]:
        """`index_many` that also writes each fact's `hits` (import restores them; not
        part of the FactStore protocol, whose writers never set hits)."""
        return self._index_many(facts, keep_hits=True)

    def _index_many(self, facts: Iterable[Fact], *, keep_hits: bool) -> list[str]:
        if isinstance(facts, (str, bytes, Mapping)) or not isinstance(facts, Iterable):
            raise InvalidArgumentError("index_many takes an iterable of Fact")
        # every fact checked before any is written
        rows = [prepare_fact(f, keep_hits=keep_hits) for f in facts]
        if not rows:
            return []
        merged = merge_batch(rows)
        vectors = None if keep_hits else self._vectors  # an import fills them afterwards
        prepared = vectors.prepare(merged) if vectors is not None else None  # no lock held
        with self._engine.write() as conn:
            self._write_rows(conn, merged, now_ms())
            if prepared:
                vectors.write(conn, prepared)  # type: ignore[union-attr]
        return [r.id for r in rows]

    @staticmethod
    def _upsert(conn: apsw.Connection, rows: Sequence[FactRow], now: int) -> None:
        """Multi-row upserts, cut where a chunk is full or `keep_created` (or whether
        hits are given) changes, so rows keep their order (and so their pk order, the
        tie-break of `list`)."""
        start = 0
        while start < len(rows):
            keep = rows[start].created_ms is None
            keep_hits = rows[start].hits is None
            end = start + 1
            while (
                end < len(rows)
                and end - start < sql.UPSERT_CHUNK
                and (rows[end].created_ms is None) == keep
                and (rows[end].hits is None) == keep_hits
            ):
                end += 1
            params: list[Any] = []
            for r in rows[start:end]:
                params += (
                    r.id,
                    r.content,
                    r.source,
                    r.category,
                    r.tags,
                    r.metadata,
                    now if r.created_ms is None else r.created_ms,
                    now if r.updated_ms is None else r.updated_ms,
                    r.search_text,
                    r.layer,
                    r.kind,
                    r.confidence,
                    r.salience,
                    r.refs,
                    r.expires_ms,
                    r.fingerprint,
                    1 if r.hits is None else r.hits,
                    r.key,
                    r.valid_from_ms,
                )
            text = sql.upsert_sql(end - start, keep_created=keep, keep_hits=keep_hits)
            conn.execute(text, params)
            start = end

    def remember(self, fact: Fact, *, resolver: Resolver | None = None) -> str:
        """The upsert for memory writers (`sqlmem.sqlite.items`); a fact with a key takes
        its place in its key's chain; `resolver` (for a fact without a key) may name a
        live fact it supersedes, asked before the write lock is taken."""
        row = prepare_fact(fact)
        if resolver is not None and not row.key:
            old_id = resolve_supersession(self, resolver, fact)
            if old_id is not None:
                return self.supersede(old_id, fact)
        vectors = self._vectors
        prepared = vectors.prepare([row]) if vectors is not None else None  # no lock held
        with self._engine.write() as conn:
            now = now_ms()
            merged = items.remember(conn, row, now)
            if merged is None:
                self._write_rows(conn, [row], now)
                if prepared:
                    vectors.write(conn, prepared)  # type: ignore[union-attr]
        return row.id if merged is None else merged

    def supersede(self, old_id: str, fact: Fact) -> str:
        """Store `fact` right after `old_id` in its chain (the old fact's key and layer):
        from then on `fact` is live and `old_id` is history."""
        is_fact_id(old_id)
        row = prepare_fact(fact)
        vectors = self._vectors
        prepared = vectors.prepare([row]) if vectors is not None else None  # no lock held
        with self._engine.write() as conn:
            now = now_ms()
            row, chain = chains.prepare_supersede(conn, old_id, row, now)
            chains.leave(conn, row.id)  # when the id names a fact in another chain
            self._upsert(conn, [row], now)
            chains.relink(conn, row.id, chain)
            if prepared:
                vectors.write(conn, prepared)  # type: ignore[union-attr]
        return row.id

    def history(self, *, key: str | None = None, id: str | None = None) -> list[Fact]:
        """A chain, oldest first: the facts of `key` (every layer), or the chain of the
        fact `id` (just that fact when it is in none; [] when unknown)."""
        chain_key = check_history_args(key, id)
        if no_such_fact(id):
            return []
        now = now_ms()
        with self._engine.read() as conn:
            if chain_key is not None:
                params: dict[str, Any] = {"key": chain_key, "now": now}
                rows: list[Any] = conn.execute(sql.HISTORY_BY_KEY, params).fetchall()
                return facts_from_rows(rows, ranked=False)
            found: list[Any] = conn.execute(sql.CHAIN_OF, {"id": id}).fetchall()
            if not found:
                return []
            chain, layer = found[0]
            if chain is None:
                rows = conn.execute(sql.SELECT_BY_ID, {"id": id, "now": now}).fetchall()
            else:
                params = {"chain": chain, "layer": layer, "now": now}
                rows = conn.execute(sql.HISTORY_OF_CHAIN, params).fetchall()
        return facts_from_rows(rows, ranked=False)

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
        return self._require_vectors("embed_pending").embed_pending(batch_size, progress)

    def _require_vectors(self, what: str) -> FactVectors:
        if self._vectors is None:
            raise InvalidArgumentError(
                f"{what} needs an embedder: open the store with embedder=..."
            )
        return self._vectors

    def promote(self, fact_id: str, layer: str) -> Fact:
        layer = check_layer(layer)
        if is_fact_id(fact_id):
            with self._engine.write() as conn:
                now = now_ms()
                params = {"id": fact_id, "layer": layer, "updated": now, "now": now}
                conn.execute(sql.PROMOTE, params)  # facts_chain_move: out of its chain
                rows: list[Any] = conn.execute(sql.SELECT_BY_ID, params).fetchall()
                if rows and rows[0][_KEY]:  # into its key's chain of the new layer
                    chains.place_keyed(conn, [(fact_id, str(rows[0][_KEY]))])
                    rows = conn.execute(sql.SELECT_BY_ID, params).fetchall()
            if rows:
                return facts_from_rows(rows, ranked=False)[0]
        raise FactNotFoundError(f"no fact with id {fact_id!r}")

    def promote_eligible(
        self,
        *,
        from_layer: str = "episodic",
        to_layer: str = "semantic",
        min_confidence: float = 0.75,
        min_hits: int = 2,
    ) -> list[str]:
        params = promotion(from_layer, to_layer, min_confidence, min_hits)
        with self._engine.write() as conn:
            params["now"] = now_ms()
            return items.promote_eligible(conn, params)

    def expire(self) -> int:
        with self._engine.write() as conn:
            conn.execute(sql.EXPIRE, {"now": now_ms()})
            return int(conn.changes())

    def delete(self, fact_id: str) -> None:
        if is_fact_id(fact_id):
            with self._engine.write() as conn:
                conn.execute(sql.DELETE_ONE, (fact_id,))
                if conn.changes():
                    return
        raise FactNotFoundError(f"no fact with id {fact_id!r}")

    def delete_many(self, fact_ids: Iterable[str]) -> int:
        if isinstance(fact_ids, (str, bytes)) or not isinstance(fact_ids, Iterable):
            raise InvalidArgumentError("delete_many takes an iterable of fact ids")
        ids = [i for i in fact_ids if is_fact_id(i)]
        if not ids:
            return 0
        with self._engine.write() as conn:
            conn.execute(sql.DELETE_MANY, (dumps_json(ids),))
            return int(conn.changes())

    # -- reads --------------------------------------------------------------------------

    def get(self, fact_id: str) -> Fact | None:
        if not is_fact_id(fact_id):
            return None
        with self._engine.read() as conn:
            params = {"id": fact_id, "now": now_ms()}
            rows: list[Any] = conn.execute(sql.SELECT_BY_ID, params).fetchall()
        return facts_from_rows(rows, ranked=False)[0] if rows else None

    def count(self) -> int:
        with self._engine.read() as conn:
            row: Any = conn.execute(sql.COUNT, {"now": now_ms()}).fetchall()[0]
            return int(row[0])

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
            from ..rules.hybrid import filter_args

            by_name = filter_args(
                tags, category, source, since, until, metadata, layer, kind, min_confidence
            )
            by_name["as_of"] = as_of
            return self._semantic(query, top_k, mode, by_name)
        text = check_query(query, mode)
        match, terms = self._compile(text, mode)
        limit = check_limit(top_k, "top_k")
        filters = make_filters(tags, category, source, since, until, metadata)
        item_filters = make_item_filters(layer, kind, min_confidence, as_of)
        if (match is None and not terms) or limit <= 0:
            return []
        with self._engine.read() as conn:
            rows = self._ranked_rows(conn, mode, match, terms, limit, filters, item_filters)
        # bm25() is lower-is-better; users get higher-is-better (facts_from_rows negates).
        return facts_from_rows(rows, ranked=True)

    def _compile(self, text: str, mode: SearchMode) -> tuple[str | None, tuple[Term, ...]]:
        """A checked query's MATCH text and terms (a long query's MATCH is None: it is cut
        to its rarest terms in the read snapshot, `_ranked_rows`)."""
        if mode == "raw":
            return raw_match(text), ()
        compiler = self._query_compiler()
        terms = compiler.terms(text)
        words: Mode = "all" if mode == "all" else "any"
        return (compiler.match(text, words) if len(terms) <= MAX_QUERY_TERMS else None), terms

    def _ranked_rows(
        self,
        conn: apsw.Connection,
        mode: SearchMode,
        match: str | None,
        terms: tuple[Term, ...],
        limit: int,
        filters: Filters,
        item_filters: ItemFilters,
    ) -> list[Any]:
        """The BM25 search in the caller's read snapshot: stored-fact rows with their
        bm25() last, best first (a hybrid search runs its lexical leg here, in the
        snapshot of its vector leg)."""
        words: Mode = "all" if mode == "all" else "any"
        unfiltered = filters.empty and item_filters.empty
        now = now_ms()
        if unfiltered:  # the common case: constant text, no filter params
            statement, params = _SEARCH_UNFILTERED, {"query": match, "limit": limit}
        else:
            statement = sql.search_sql(filters.key, item_filters.key)
            params = filters.params() | item_filters.params()
            params["query"], params["limit"], params["now"] = match, limit, now
        # Expired and superseded facts stay in the index (until expire(); for good):
        # while there are any, an unfiltered search skips them in the filtered shape
        # (three index probes when there are none, the usual case).
        if unfiltered and (
            conn.execute(sql.ANY_EXPIRED).fetchall() or conn.execute(sql.ANY_INVALID).fetchall()
        ):
            unfiltered = False
            statement, params["now"] = sql.search_live_sql(NO_FILTERS.key), now
        if match is None:
            terms = capped_terms(conn, sql.ANY, terms, words)
            match = params["query"] = phrases(terms, " OR " if words == "any" else " AND ")
            if match is None:  # no kept word is in any row
                return []
        if mode == "any" and unfiltered:
            found = self._any.rows(conn, terms, limit)
            if found is not None:
                return found
        try:
            rows: list[Any] = conn.execute(statement, params).fetchall()
        except apsw.SQLError as exc:
            if mode != "raw":
                raise  # a bug, not the user's query: mapped by the engine
            shown = match if len(match) <= 80 else match[:77] + "..."
            raise InvalidQueryError(f"invalid FTS5 query {shown!r}: {exc}") from exc
        return rows

    def _semantic(
        self, query: str, top_k: int, mode: SearchMode, filter_args: dict[str, Any]
    ) -> list[Fact]:
        """Modes "vector" and "hybrid", filters before ranking in both legs.
        Hybrid reads both legs in one snapshot, as ids (and their rows as the BM25 leg
        returns them), and builds facts for the fused top_k only (`vectors_hybrid`)."""
        from ..rules.hybrid import check_semantic  # numpy: only with vectors
        from ..search.vectors import hybrid_leg_size
        from .vectors_hybrid import fused_rows

        text, limit, filters, item_filters = check_semantic(query, top_k, mode, filter_args)
        vectors = self._require_vectors(f"mode={mode!r}")
        if limit <= 0 or not text.strip():
            return []
        query_vector = vectors.embedding.query(text)  # before any read: no lock held
        if mode == "vector":
            if query_vector is None:
                return []
            return vectors.search(query_vector, limit, filters, item_filters)
        wanted = hybrid_leg_size(limit)
        match, terms = self._compile(text, "any")
        with self._engine.read() as conn:
            lexical: list[Any] = []
            if match is not None or terms:
                lexical = self._ranked_rows(
                    conn, "any", match, terms, wanted, filters, item_filters
                )
            semantic: list[Any] = []
            if query_vector is not None:
                semantic = vectors.ranked(
                    conn, query_vector, wanted, filters, item_filters, full=False
                )
            rows = fused_rows(conn, lexical, semantic, limit)
        return facts_from_rows(rows, ranked=True)

    def layered_search(
        self, query: str, wants: Mapping[str, int], *, min_confidence: float = 0.0
    ) -> dict[str, list[Any]]:
        """A memory pack's lexical candidates in one ranked statement: per layer
        of `wants`, its best `wants[layer]` live facts for `query` in mode "any" with
        `confidence >= min_confidence` (the newest by updated_at with a blank query), as
        stored-fact rows for `rules.rows.facts_from_rows(rows, ranked=True)`, best first.
        The same facts as one `search(..., layer=...)` per layer, at about the cost of
        one (`sqlmem.sqlite.pack_search`); not part of the FactStore protocol."""
        from .pack_search import layered_rows

        return layered_rows(self._engine, self._query_compiler(), query, wants, min_confidence)

    def layered_candidates(
        self, query: str, wants: Mapping[str, int], *, min_confidence: float = 0.0
    ) -> dict[str, list[FactCandidate]]:
        """`layered_search` as typed `FactCandidate`s (the `LayeredSearch` capability a
        memory pack asks for): the same facts in the same order, the Facts built only for
        the candidates kept."""
        from .pack_search import layered_candidates

        compiler = self._query_compiler()
        return layered_candidates(self._engine, compiler, query, wants, min_confidence)

    def search_by_metadata(self, key: str, value: Any, *, limit: int | None = None) -> list[Fact]:
        filters = metadata_equal_filter(key, value)
        if limit is not None:  # bounded: the newest `limit` matches, read as a page
            limit = check_limit(limit, "limit")
            if limit <= 0:
                return []
            return self._list(filters, NO_ITEM_FILTERS, limit=limit)
        return self._list(filters, NO_ITEM_FILTERS, oldest_first=True, limited=False)

    def _list(
        self,
        filters: Filters,
        item_filters: ItemFilters,
        *,
        oldest_first: bool = False,
        limited: bool = True,
        limit: int = 0,
        offset: int = 0,
    ) -> list[Fact]:
        params = filters.params() | item_filters.params()
        params["now"] = now_ms()
        if limited:
            params["limit"], params["offset"] = limit, offset
        text = sql.list_sql(
            filters.key, item_filters.key, oldest_first=oldest_first, limited=limited
        )
        with self._engine.read() as conn:
            rows: list[Any] = conn.execute(text, params).fetchall()
        return facts_from_rows(rows, ranked=False)

    def tags(self) -> dict[str, int]:
        with self._engine.read() as conn:
            return {tag: int(n) for tag, n in conn.execute(sql.TAGS, {"now": now_ms()})}

    def categories(self) -> list[str]:
        with self._engine.read() as conn:
            return [row[0] for row in conn.execute(sql.CATEGORIES, {"now": now_ms()})]

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
        item_filters = make_item_filters(layer, kind, min_confidence, as_of)
        limit, offset = check_page(limit, offset)
        if limit <= 0:
            return []
        return self._list(filters, item_filters, limit=limit, offset=offset)

    # -- helpers ------------------------------------------------------------------------

    def _query_compiler(self) -> QueryCompiler:
        """The compiler for the tokenizer the file's FTS tables were created with."""
        return compiler_for(self._engine.tokenizer)


_SEARCH_UNFILTERED = sql.search_sql(NO_FILTERS.key)
#: Where a stored row (`facts_sql.COLUMNS`) holds the key.
_KEY = 16
