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
Trade-off and numbers in `sqlmem.sqlite.stores.fts_any`: ~3.5x faster than exact OR at the median on
100,000 facts, top-10 agreement with it 0.95.

Long queries are bounded (`sqlmem.search.query.MAX_QUERY_TERMS`): in modes "any" and "all" at
most 64 distinct words reach FTS5, the rarest (row counts read from the vocabulary in the
search's own snapshot; see `query.rarest_terms` for what the result then means); a raw
query of more words is refused with `InvalidQueryError`, FTS5 syntax not being safely
trimmable.

Reads use a pooled reader (a search's statements in one snapshot), writes one short
`BEGIN IMMEDIATE` transaction through the engine's writer. Memory items: remember and
promotion in `sqlmem.sqlite.stores.items`; every read skips expired facts (`LIVE`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import apsw

from ...errors import InvalidQueryError
from ...protocols import Embedder
from ...records import Fact
from ...rules.encoding import dumps_json, now_ms
from ...rules.filters import NO_FILTERS, FactRow, Filters
from ...rules.rows import facts_from_rows
from ...search.query import MAX_QUERY_TERMS, Mode, QueryCompiler, compiler_for, phrases
from ...stores.facts import FactStoreFront, raw_match
from ...stores.facts_port import FactListing, FactQuery
from ...stores.sql_facts import FactCodec, SqlFactPort
from ...stores.sql_port import plain_text
from ..core.engine import Engine
from . import chains, items
from . import facts_list_sql as list_sql
from . import facts_sql as sql
from .fts_any import AnyShortcut, capped_terms, row_count_of

if TYPE_CHECKING:
    from ...rules.candidates import FactCandidate
    from ...search.embedding import Embedding
    from .vectors import FactVectors

__all__ = ["SQLiteFactPort", "SQLiteFactStore", "raw_match", "scalar_equality"]


class SQLiteFactPort(SqlFactPort[Engine, "FactVectors"]):
    """The fact store's storage on one database file: SQL through the engine's pooled
    readers and its single writer (which serialises writes: thread-safe)."""

    raw_refusal: str | None = None

    def __init__(self, engine: Engine, embedder: Embedder | None = None) -> None:
        """`embedder`: every fact written gets a vector of its content, and
        search offers modes "vector" and "hybrid"."""
        vectors_of = partial(_fact_vectors, engine)
        super().__init__(engine, sql, None, _CODEC, embedder, vectors_of)
        self._any = AnyShortcut(sql.ANY)

    @property
    def compiler(self) -> QueryCompiler:
        """The compiler for the tokenizer the file's FTS tables were created with."""
        return compiler_for(self._engine.tokenizer)

    def __repr__(self) -> str:
        return f"<SQLiteFactStore {str(self._engine.path)!r}>"

    def _place_keyed(self, conn: apsw.Connection, facts: list[tuple[str, str]]) -> None:
        chains.place_keyed(conn, facts)

    # -- writes -------------------------------------------------------------------------

    def write(self, rows: Sequence[FactRow], *, embed: bool) -> None:
        prepared = self.vectors.prepare(rows, embed=embed)  # no lock held
        with self._engine.write() as conn:
            self.write_rows(conn, rows, now_ms())
            self.vectors.write(conn, prepared)

    def write_rows(self, conn: apsw.Connection, rows: Sequence[FactRow], now: int) -> None:
        """Upsert `rows`, then place keyed (or moved chained) facts in their chains."""
        self._upsert(conn, rows, now)
        if any(r.key for r in rows):
            chains.place_keyed(conn, ((r.id, r.key) for r in rows))

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

    def remember(self, row: FactRow) -> str:
        """`sqlmem.sqlite.stores.items` merges a repeated text into its stored fact."""
        prepared = self.vectors.prepare([row])  # no lock held
        with self._engine.write() as conn:
            now = now_ms()
            merged = items.remember(conn, row, now)
            if merged is None:
                self.write_rows(conn, [row], now)
                self.vectors.write(conn, prepared)
        return merged or row.id

    def supersede(self, old_id: str, row: FactRow) -> str:
        prepared = self.vectors.prepare([row])  # no lock held
        with self._engine.write() as conn:
            now = now_ms()
            row, chain = chains.prepare_supersede(conn, old_id, row, now)
            chains.leave(conn, row.id)  # when the id names a fact in another chain
            self._upsert(conn, [row], now)
            chains.relink(conn, row.id, chain)
            self.vectors.write(conn, prepared)
        return row.id

    def promote_eligible(self, params: dict[str, Any]) -> list[str]:
        with self._engine.write() as conn:
            params["now"] = now_ms()
            return items.promote_eligible(conn, params)

    # -- reads --------------------------------------------------------------------------

    def _read(self, statement: str, params: dict[str, Any]) -> list[Any]:
        """The rows of one statement, on a pooled reader."""
        with self._engine.read() as conn:
            return conn.execute(statement, params).fetchall()

    def ranked(self, query: FactQuery) -> list[Fact]:
        match = query.text if query.mode == "raw" else self._match(query)
        with self._engine.snapshot() as conn:
            rows = self.ranked_rows(conn, query, match, query.limit)
        # bm25() is lower-is-better; users get higher-is-better (facts_from_rows negates).
        return facts_from_rows(rows, ranked=True)

    def _match(self, query: FactQuery) -> str | None:
        """The MATCH text of "any"/"all" words (a long query's is None: it is cut to its
        rarest terms in the read snapshot, `ranked_rows`)."""
        if len(query.terms) > MAX_QUERY_TERMS:
            return None
        return self.compiler.match(query.text, "all" if query.mode == "all" else "any")

    def ranked_rows(
        self, conn: apsw.Connection, query: FactQuery, match: str | None, limit: int
    ) -> list[Any]:
        """The BM25 search in the caller's read snapshot: stored-fact rows with their
        bm25() last, best first (a hybrid search runs its lexical leg here, in the
        snapshot of its vector leg, with the leg's `limit`)."""
        words: Mode = "all" if query.mode == "all" else "any"
        filters, item_filters, terms = query.filters, query.items, query.terms
        unfiltered = filters.empty and item_filters.empty
        now = now_ms()
        if unfiltered:  # the common case: constant text, no filter params
            statement, params = _SEARCH_UNFILTERED, {"query": match, "limit": limit}
        else:
            statement = sql.search_sql(filters.key, item_filters.key)
            params = filters.params() | item_filters.params()
            params["query"], params["limit"], params["now"] = match, limit, now
        # Expired and superseded facts stay in the index (until expire(); for good): while
        # any are, an unfiltered search skips them; "any" reads the index's size with it.
        total: int | None = None
        if unfiltered:
            sized = words == "any" and query.mode != "raw" and len(terms) >= 2
            found = conn.execute(sql.ANY_HIDDEN_AND_AVERAGES if sized else sql.ANY_HIDDEN)
            hidden, *averages = found.fetchall()[0]
            if hidden:
                unfiltered = False
                statement, params["now"] = sql.search_live_sql(NO_FILTERS.key), now
            elif sized:
                total = row_count_of(averages[0])
        if match is None:
            terms = capped_terms(conn, sql.ANY, terms, words)
            match = params["query"] = phrases(terms, " OR " if words == "any" else " AND ")
            if match is None:  # no kept word is in any row
                return []
        if query.mode != "all" and query.mode != "raw" and unfiltered:
            shortcut = self._any.rows(conn, terms, limit, total)
            if shortcut is not None:
                return shortcut
        try:
            rows: list[Any] = conn.execute(statement, params).fetchall()
        except apsw.SQLError as exc:
            if query.mode != "raw":
                raise  # a bug, not the user's query: mapped by the engine
            shown = match if len(match) <= 80 else match[:77] + "..."
            raise InvalidQueryError(f"invalid FTS5 query {shown!r}: {exc}") from exc
        return rows

    def semantic(self, query: FactQuery) -> list[Fact]:
        """Modes "vector" and "hybrid", filters before ranking in both legs.
        Hybrid reads both legs in one snapshot, as ids (and their rows as the BM25 leg
        returns them), and builds facts for the fused top_k only (`vectors_hybrid`)."""
        from ...search.vectors import hybrid_leg_size  # numpy: only with vectors
        from .vectors_hybrid import fused_rows

        vectors = self.vectors.required()
        query_vector = vectors.embedding.query(query.text)  # before any read: no lock held
        if query.mode == "vector":
            if query_vector is None:
                return []
            return vectors.search(query_vector, query.limit, query.filters, query.items)
        wanted = hybrid_leg_size(query.limit)
        with self._engine.snapshot() as conn:
            lexical: list[Any] = []
            if query.terms:
                lexical = self.ranked_rows(conn, query, self._match(query), wanted)
            semantic: list[Any] = []
            if query_vector is not None:
                semantic = vectors.ranked(
                    conn, query_vector, wanted, query.filters, query.items, full=False
                )
            rows = fused_rows(conn, lexical, semantic, query.limit)
        return facts_from_rows(rows, ranked=True)

    def listed(self, listing: FactListing) -> list[Fact]:
        filters, item_filters = listing.filters, listing.items
        params = filters.params() | item_filters.params()
        params["now"] = now_ms()
        limited = listing.limit is not None
        if limited:
            params["limit"], params["offset"] = listing.limit, listing.offset
        scalar = scalar_equality(filters)
        if scalar is not None:  # one key equal to a scalar: its path, no json_each walk
            del params["meta"], params["mops"]
            params["mpath"], params["mvalue"] = scalar
        key, item_key, oldest_first = filters.key, item_filters.key, listing.oldest_first
        text = list_sql.list_sql(
            key, item_key, oldest_first=oldest_first, limited=limited,
            scalar=scalar is not None, state=listing.state,
        )  # fmt: skip
        if not list_sql.valid_at_shape(key, item_key, oldest_first=oldest_first, limited=limited):
            return facts_from_rows(self._read(text, params), ranked=False)
        with self._engine.read() as conn:  # `as_of`: the newest facts first, one snapshot
            rows: list[Any] = []
            page_end = listing.offset + (listing.limit or 0)
            if listing.state == "live" and page_end <= list_sql.VALID_AT_WINDOW // 2:
                params["window"] = list_sql.VALID_AT_WINDOW
                window = list_sql.list_sql(key, item_key, scalar=scalar is not None, window=True)
                rows = conn.execute(window, params).fetchall()
            if len(rows) < (listing.limit or 0):  # not a whole page among them
                rows = conn.execute(text, params).fetchall()
        return facts_from_rows(rows, ranked=False)


class SQLiteFactStore(FactStoreFront):
    """`FactStore` over one database file: the fact store front over `SQLiteFactPort`,
    plus what only SQLite offers (the one-statement layered search of a memory pack, and
    `restore_many` for an import)."""

    _port: SQLiteFactPort

    def __init__(self, engine: Engine, embedder: Embedder | None = None) -> None:
        """`embedder`: every fact written gets a vector of its content, and
        search offers modes "vector" and "hybrid"."""
        super().__init__(SQLiteFactPort(engine, embedder))

    def restore_many(self, facts: Sequence[Fact]) -> list[str]:
        """`index_many` that also writes each fact's `hits` (import restores them; not
        part of the FactStore protocol, whose writers never set hits)."""
        return self._index_many(facts, keep_hits=True)

    def layered_search(
        self, query: str, wants: Mapping[str, int], *, min_confidence: float = 0.0
    ) -> dict[str, list[Any]]:
        """A memory pack's lexical candidates in one ranked statement: per layer
        of `wants`, its best `wants[layer]` live facts for `query` in mode "any" with
        `confidence >= min_confidence` (the newest by updated_at with a blank query), as
        stored-fact rows for `rules.rows.facts_from_rows(rows, ranked=True)`, best first.
        The same facts as one `search(..., layer=...)` per layer, at about the cost of
        one (`sqlmem.sqlite.stores.pack_search`); not part of the FactStore protocol."""
        from .pack_search import layered_rows

        compiler = self._port.compiler
        return layered_rows(self._engine, compiler, query, wants, min_confidence)

    def layered_candidates(
        self, query: str, wants: Mapping[str, int], *, min_confidence: float = 0.0
    ) -> dict[str, list[FactCandidate]]:
        """`layered_search` as typed `FactCandidate`s (the `LayeredSearch` capability a
        memory pack asks for): the same facts in the same order, the Facts built only for
        the candidates kept."""
        from .pack_search import layered_candidates

        compiler = self._port.compiler
        return layered_candidates(self._engine, compiler, query, wants, min_confidence)

    # What code written against the store before it had a port reads.

    @property
    def _engine(self) -> Engine:
        return self._port._engine

    @property
    def _vectors(self) -> FactVectors | None:
        return self._port.vectors.backend

    @property
    def _any(self) -> AnyShortcut:
        return self._port._any

    def _query_compiler(self) -> QueryCompiler:
        return self._port.compiler


#: Characters a quoted JSON path label cannot hold as the stored JSON text spells them
#: (JSON escapes them; SQLite compares a label with the text as written).
_UNSPELLABLE = re.compile(r'["\\\x00-\x1f]')


def scalar_equality(filters: Filters) -> tuple[str, str] | None:
    """(`:mpath`, `:mvalue`) when the metadata filter is one key equal to a scalar whose
    path can be spelt; None otherwise (the general predicate applies)."""
    if len(filters.metadata) != 1:
        return None
    key, op, value = filters.metadata[0]
    if op != "eq" or isinstance(value, (list, dict)) or _UNSPELLABLE.search(key):
        return None
    return f'$."{key}"', dumps_json(value)


def _fact_vectors(engine: Engine, embedding: Embedding) -> FactVectors:
    from .vectors import FactVectors  # numpy: only with an embedder

    return FactVectors(engine, embedding)


def _same_rows(rows: Sequence[Any]) -> Sequence[Any]:
    """SQLite's fact rows read as they are stored."""
    return rows


#: Text as it is; ids to delete as one JSON array.
_CODEC = FactCodec(plain_text, plain_text, _same_rows, dumps_json)


_SEARCH_UNFILTERED = sql.search_sql(NO_FILTERS.key)
