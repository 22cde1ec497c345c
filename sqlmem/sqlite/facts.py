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
through the engine's writer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import apsw

from ..errors import FactNotFoundError, InvalidArgumentError, InvalidQueryError
from ..protocols import SearchMode
from ..records import Fact
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
from ..rules.rows import build_fact, facts_from_rows
from ..search.query import (
    MAX_QUERY_TERMS,
    Mode,
    QueryCompiler,
    Term,
    check_raw_query,
    compiler_for,
    phrases,
)
from . import facts_sql as sql
from .engine import Engine
from .fts_any import AnyShortcut, capped_terms

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

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._any = AnyShortcut(sql.ANY)

    def __repr__(self) -> str:
        return f"<SQLiteFactStore {str(self._engine.path)!r}>"

    # -- writes -------------------------------------------------------------------------

    def index(self, fact: Fact) -> str:
        row = prepare_fact(fact)
        with self._engine.write() as conn:
            self._upsert(conn, [row], now_ms())
        return row.id

    def index_many(self, facts: Iterable[Fact]) -> list[str]:
        if isinstance(facts, (str, bytes, Mapping)) or not isinstance(facts, Iterable):
            raise InvalidArgumentError("index_many takes an iterable of Fact")
        rows = [prepare_fact(f) for f in facts]  # every fact checked before any is written
        if not rows:
            return []
        with self._engine.write() as conn:
            self._upsert(conn, merge_batch(rows), now_ms())
        return [r.id for r in rows]

    @staticmethod
    def _upsert(conn: apsw.Connection, rows: Sequence[FactRow], now: int) -> None:
        """Multi-row upserts, cut where a chunk is full or `keep_created` changes, so rows
        keep their order (and so their pk order, the tie-break of `list`)."""
        start = 0
        while start < len(rows):
            keep = rows[start].created_ms is None
            end = start + 1
            while (
                end < len(rows)
                and end - start < sql.UPSERT_CHUNK
                and (rows[end].created_ms is None) == keep
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
                )
            conn.execute(sql.upsert_sql(end - start, keep_created=keep), params)
            start = end

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
            rows: list[Any] = conn.execute(sql.SELECT_BY_ID, (fact_id,)).fetchall()
        return build_fact(*rows[0]) if rows else None

    def count(self) -> int:
        with self._engine.read() as conn:
            row: Any = conn.execute(sql.COUNT).fetchall()[0]
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
    ) -> list[Fact]:
        compiler = self._query_compiler()
        text = check_query(query, mode)
        terms: tuple[Term, ...] = ()
        words: Mode = "all" if mode == "all" else "any"
        if mode == "raw":
            match = raw_match(text)
        else:
            terms = compiler.terms(text)
            # A long query is cut to its rarest terms below, in the read snapshot.
            match = compiler.match(text, words) if len(terms) <= MAX_QUERY_TERMS else None
        limit = check_limit(top_k, "top_k")
        filters = make_filters(tags, category, source, since, until, metadata)
        if (match is None and not terms) or limit <= 0:
            return []
        unfiltered = filters.empty
        if unfiltered:  # the common case: constant text, no filter params
            statement, params = _SEARCH_UNFILTERED, {"query": match, "limit": limit}
        else:
            statement, params = sql.search_sql(filters.key), filters.params()
            params["query"], params["limit"] = match, limit
        with self._engine.read() as conn:
            if match is None:
                terms = capped_terms(conn, sql.ANY, terms, words)
                match = params["query"] = phrases(terms, " OR " if words == "any" else " AND ")
                if match is None:  # no kept word is in any row
                    return []
            if mode == "any" and unfiltered:
                found = self._any.rows(conn, terms, limit)
                if found is not None:
                    return facts_from_rows(found, ranked=True)
            try:
                rows: list[Any] = conn.execute(statement, params).fetchall()
            except apsw.SQLError as exc:
                if mode != "raw":
                    raise  # a bug, not the user's query: mapped by the engine
                shown = match if len(match) <= 80 else match[:77] + "..."
                raise InvalidQueryError(f"invalid FTS5 query {shown!r}: {exc}") from exc
        # bm25() is lower-is-better; users get higher-is-better (facts_from_rows negates).
        return facts_from_rows(rows, ranked=True)

    def search_by_metadata(self, key: str, value: Any) -> list[Fact]:
        filters = metadata_equal_filter(key, value)
        return self._list(filters, oldest_first=True, limited=False)

    def _list(
        self,
        filters: Filters,
        *,
        oldest_first: bool = False,
        limited: bool = True,
        limit: int = 0,
        offset: int = 0,
    ) -> list[Fact]:
        params = filters.params()
        if limited:
            params["limit"], params["offset"] = limit, offset
        text = sql.list_sql(filters.key, oldest_first=oldest_first, limited=limited)
        with self._engine.read() as conn:
            rows: list[Any] = conn.execute(text, params).fetchall()
        return facts_from_rows(rows, ranked=False)

    def tags(self) -> dict[str, int]:
        with self._engine.read() as conn:
            return {tag: int(n) for tag, n in conn.execute(sql.TAGS)}

    def categories(self) -> list[str]:
        with self._engine.read() as conn:
            return [row[0] for row in conn.execute(sql.CATEGORIES)]

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
        return self._list(filters, limit=limit, offset=offset)

    # -- helpers ------------------------------------------------------------------------

    def _query_compiler(self) -> QueryCompiler:
        """The compiler for the tokenizer the file's FTS tables were created with."""
        return compiler_for(self._engine.tokenizer)


_SEARCH_UNFILTERED = sql.search_sql(NO_FILTERS.key)
