"""`PostgresFactStore`: the FactStore protocol on PostgreSQL, one agent's rows.

Storage model (migrations/postgres/): `facts` keyed by (agent_id, id), with the tags twice
(JSON text as given, `tag_set` for filters), the metadata twice (JSON text byte for byte,
`meta` jsonb for filters, written by `codec.jsonb_text`), the tokens as a tsvector and their
count, and the memory-item columns (0002); `corpus_stats` holds the agent's row
and token counts for BM25. Search and its limits: `sqlmem.postgres.ranking`. Same argument
checks, filters and query words as the SQLite store and the twin (`sqlmem.rules.filters`,
`sqlmem.rules.items`, `sqlmem.rules.metadata`, `sqlmem.search.query`). Expired facts are
gone for every read (`facts_sql.LIVE`) and still count in the BM25 statistics until
`expire()` deletes them, as in FTS5 and the twin.

Vectors: `sqlmem.postgres.vectors`, modes "vector" and
"hybrid" as on SQLite. Mode "raw" (FTS5 syntax is SQLite's) raises InvalidArgumentError,
as in the twin.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import FactNotFoundError, InvalidArgumentError
from ..protocols import Embedder, SearchMode
from ..records import Fact
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
from ..rules.items import (
    NO_ITEM_FILTERS,
    ItemFilters,
    check_layer,
    make_item_filters,
    promotion,
)
from ..rules.resolve import Resolver, check_history_args, no_such_fact, resolve_supersession
from ..rules.rows import facts_from_rows
from ..search.query import MAX_QUERY_TERMS, compiler_for
from . import chains, items
from . import facts_sql as sql
from .codec import decode, encode
from .engine import Conn, Engine
from .fact_params import decoded, filter_params, rarest, row_params
from .items import meta_jsonb
from .ranking import best, lexemes, single_lexemes, tsquery

if TYPE_CHECKING:
    from .vectors import FactVectors

__all__ = ["PostgresFactStore", "meta_jsonb"]

#: Where a stored row (`facts_sql.FACT_COLUMNS`) holds the key.
_KEY = 16


class PostgresFactStore:
    """`FactStore` over one agent's rows of a PostgreSQL database; thread-safe."""

    def __init__(self, engine: Engine, embedder: Embedder | None = None) -> None:
        """`embedder`: every fact written gets a vector of its content, and
        search offers modes "vector" and "hybrid"."""
        self._engine = engine
        self._agent = engine.agent_id
        self._compiler = compiler_for(engine.config.tokenizer)
        self._vectors: FactVectors | None = None
        if check_embedder(embedder) is not None:  # numpy loads only with an embedder
            from ..search.embedding import Embedding
            from .vectors import FactVectors

            self._vectors = FactVectors(engine, Embedding(embedder))
        with engine.read() as conn:  # one index probe when nothing is missing
            missing = conn.execute(sql.ANY_UNFINGERPRINTED, (self._agent,)).fetchone()
        if missing:
            with engine.write() as conn:
                conn.execute(sql.LOCK_CORPUS, (self._agent, sql.FACTS))
                items.fill_fingerprints(conn, self._agent)

    def __repr__(self) -> str:
        return f"<PostgresFactStore agent={self._agent!r}>"

    @property
    def embedder(self) -> Embedder | None:
        """The embedder vectors come from (None: BM25 only)."""
        return self._vectors.embedding.embedder if self._vectors is not None else None

    # -- writes -------------------------------------------------------------------------

    def index(self, fact: Fact) -> str:
        row = prepare_fact(fact)
        params = [self._params(row)]  # tokenized before the transaction
        vectors = self._vectors
        prepared = vectors.prepare([row]) if vectors is not None else None  # no lock held
        with self._engine.write() as conn:
            self._write_rows(conn, [row], params, now_ms())
            if prepared:
                vectors.write(conn, prepared)  # type: ignore[union-attr]
        return row.id

    def _write_rows(
        self, conn: Conn, rows: Sequence[FactRow], params: list[dict[str, Any]], now: int
    ) -> None:
        """Upsert `rows`, then place keyed (or moved chained) facts in their chains; the
        corpus lock `_upsert` takes first serialises the chain's writers."""
        self._upsert(conn, params, now)
        if any(r.key for r in rows):
            keyed = [(p["id"], r.key) for r, p in zip(rows, params, strict=True)]
            chains.place_keyed(conn, self._agent, keyed)

    def index_many(self, facts: Iterable[Fact]) -> list[str]:
        if isinstance(facts, (str, bytes, Mapping)) or not isinstance(facts, Iterable):
            raise InvalidArgumentError("index_many takes an iterable of Fact")
        rows = [prepare_fact(f) for f in facts]  # all checked first: all or nothing
        if rows:
            merged = merge_batch(rows)
            params = [self._params(r) for r in merged]
            vectors = self._vectors
            prepared = vectors.prepare(merged) if vectors is not None else None
            with self._engine.write() as conn:
                self._write_rows(conn, merged, params, now_ms())
                if prepared:
                    vectors.write(conn, prepared)  # type: ignore[union-attr]
        return [r.id for r in rows]

    def _params(self, row: FactRow) -> dict[str, Any]:
        return row_params(self._agent, self._compiler, row)

    def _upsert(self, conn: Conn, params: list[dict[str, Any]], now: int) -> None:
        """Write rows in the caller's transaction, the agent's corpus row locked first
        (the statistics stay exact: the old lengths are read under that lock). The three
        statements go in one pipeline (one round trip); an error surfaces at its end, in
        the transaction, which rolls back."""
        for p in params:
            p["now"] = now
        stats = {
            "agent": self._agent,
            "ids": [p["id"] for p in params],
            "count": len(params),
            "tokens": sum(p["doc_len"] for p in params),
        }
        with conn.pipeline(), conn.cursor() as cur:
            cur.execute(sql.LOCK_CORPUS, (self._agent, sql.FACTS))
            cur.execute(sql.STATS_FOR_UPSERT, stats)
            if len(params) == 1:
                cur.execute(sql.UPSERT, params[0])
            else:
                cur.executemany(sql.UPSERT, params)

    def remember(self, fact: Fact, *, resolver: Resolver | None = None) -> str:
        """The upsert for memory writers (`sqlmem.postgres.items`); a fact with a key
        takes its place in its key's chain; `resolver`: as on SQLite."""
        row = prepare_fact(fact)
        if resolver is not None and not row.key:
            old_id = resolve_supersession(self, resolver, fact)
            if old_id is not None:
                return self.supersede(old_id, fact)
        params = [self._params(row)]
        vectors = self._vectors
        prepared = vectors.prepare([row]) if vectors is not None else None  # no lock held
        with self._engine.write() as conn:
            now = now_ms()
            conn.execute(sql.LOCK_CORPUS, (self._agent, sql.FACTS))
            merged = items.remember(conn, self._agent, row, now)
            if merged is None:
                self._write_rows(conn, [row], params, now)
                if prepared:
                    vectors.write(conn, prepared)  # type: ignore[union-attr]
        return row.id if merged is None else merged

    def supersede(self, old_id: str, fact: Fact) -> str:
        """Store `fact` right after `old_id` in its chain (as on SQLite)."""
        is_fact_id(old_id)
        row = prepare_fact(fact)
        vectors = self._vectors
        prepared = vectors.prepare([row]) if vectors is not None else None  # no lock held
        with self._engine.write() as conn:
            now = now_ms()
            conn.execute(sql.LOCK_CORPUS, (self._agent, sql.FACTS))
            row, chain = chains.prepare_supersede(conn, self._agent, old_id, row, now)
            fact_id = encode(row.id)
            chains.leave(conn, self._agent, fact_id)  # when the id names a chained fact
            self._upsert(conn, [self._params(row)], now)
            chains.relink(conn, self._agent, fact_id, chain)
            if prepared:
                vectors.write(conn, prepared)  # type: ignore[union-attr]
        return row.id

    def history(self, *, key: str | None = None, id: str | None = None) -> list[Fact]:
        """A chain, oldest first (as on SQLite)."""
        chain_key = check_history_args(key, id)
        if no_such_fact(id):
            return []
        params: dict[str, Any] = {"agent": self._agent, "now": now_ms()}
        with self._engine.snapshot() as conn:
            if chain_key is not None:
                params["key"] = chain_key
                rows = conn.execute(sql.HISTORY_BY_KEY, params).fetchall()
                return facts_from_rows(decoded(rows), ranked=False)
            params["id"] = encode(str(id))
            found = conn.execute(sql.CHAIN_OF, params).fetchone()
            if found is None:
                return []
            if found[0] is None:
                rows = conn.execute(sql.SELECT_ONE, params).fetchall()
            else:
                params.update(chain=found[0], layer=found[1])
                rows = conn.execute(sql.HISTORY_OF_CHAIN, params).fetchall()
        return facts_from_rows(decoded(rows), ranked=False)

    def promote(self, fact_id: str, layer: str) -> Fact:
        layer = check_layer(layer)
        if is_fact_id(fact_id):
            now = now_ms()
            params = {"agent": self._agent, "id": encode(fact_id), "layer": layer, "now": now}
            with self._engine.write() as conn:
                conn.execute(sql.PROMOTE, params)  # facts_chain_move: out of its chain
                rows = conn.execute(sql.SELECT_ONE, params).fetchall()
                if rows and rows[0][_KEY]:  # into its key's chain of the new layer
                    chains.place_keyed(conn, self._agent, [(encode(fact_id), str(rows[0][_KEY]))])
                    rows = conn.execute(sql.SELECT_ONE, params).fetchall()
            if rows:
                return facts_from_rows(decoded(rows), ranked=False)[0]
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
        params.update(agent=self._agent, now=now_ms())
        with self._engine.write() as conn:
            rows = conn.execute(sql.PROMOTE_ELIGIBLE, params).fetchall()
            keyed = [(str(r[0]), str(r[3])) for r in rows if r[3]]
            chains.place_keyed(conn, self._agent, keyed)
        rows.sort(key=lambda r: (r[1], r[2]))  # oldest first, as the twin orders them
        return [decode(r[0]) for r in rows]

    def expire(self) -> int:
        """Delete the expired facts (they were already gone for every read), and their
        share of the BM25 statistics."""
        with self._engine.write() as conn:
            conn.execute(sql.LOCK_CORPUS, (self._agent, sql.FACTS))
            lengths = [
                r[0] for r in conn.execute(sql.EXPIRE, {"agent": self._agent, "now": now_ms()})
            ]
            if lengths:
                conn.execute(
                    sql.UPDATE_STATS, (-len(lengths), -sum(lengths), self._agent, sql.FACTS)
                )
        return len(lengths)

    def embed_pending(
        self, *, batch_size: int = 64, progress: Callable[[int, int], object] | None = None
    ) -> int:
        """Vectors for the facts that have none (or one of another model): those stored
        while the embedder failed, or written by another client. Returns how many were
        added; `progress(done, total)` is called after each batch."""
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

    def delete(self, fact_id: str) -> None:
        if not is_fact_id(fact_id) or self._delete([fact_id]) == 0:
            raise FactNotFoundError(f"no fact with id {fact_id!r}")

    def delete_many(self, fact_ids: Iterable[str]) -> int:
        if isinstance(fact_ids, (str, bytes)) or not isinstance(fact_ids, Iterable):
            raise InvalidArgumentError("delete_many takes an iterable of fact ids")
        ids = [i for i in fact_ids if is_fact_id(i)]
        return self._delete(ids) if ids else 0

    def _delete(self, ids: Sequence[str]) -> int:
        """Expired facts (stored until expire()) are deleted and counted too, as on
        SQLite and the twin."""
        wanted = sorted({encode(i) for i in ids})
        with self._engine.write() as conn:
            conn.execute(sql.LOCK_CORPUS, (self._agent, sql.FACTS))
            gone = conn.execute(sql.DELETE, (self._agent, wanted)).fetchall()
            if gone:
                conn.execute(
                    sql.UPDATE_STATS,
                    (-len(gone), -sum(r[0] for r in gone), self._agent, sql.FACTS),
                )
        return len(gone)

    # -- reads --------------------------------------------------------------------------

    def get(self, fact_id: str) -> Fact | None:
        if not is_fact_id(fact_id):
            return None
        params = {"agent": self._agent, "id": encode(fact_id), "now": now_ms()}
        with self._engine.read() as conn:
            rows = conn.execute(sql.SELECT_ONE, params).fetchall()
        return facts_from_rows(decoded(rows), ranked=False)[0] if rows else None

    def count(self) -> int:
        with self._engine.read() as conn:
            row = conn.execute(sql.COUNT, {"agent": self._agent, "now": now_ms()}).fetchone()
        return int(row[0]) if row else 0

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
            filter_args = {
                "tags": tags,
                "category": category,
                "source": source,
                "since": since,
                "until": until,
                "metadata": metadata,
                "layer": layer,
                "kind": kind,
                "min_confidence": min_confidence,
                "as_of": as_of,
            }
            return self._semantic(query, top_k, mode, filter_args)
        text = check_query(query, mode)
        if mode == "raw":
            raise InvalidArgumentError(
                "mode='raw' (FTS5 query syntax) needs the SQLite store; "
                "the PostgreSQL store supports 'any', 'all', 'vector' and 'hybrid'"
            )
        limit = check_limit(top_k, "top_k")
        filters = make_filters(tags, category, source, since, until, metadata)
        item_filters = make_item_filters(layer, kind, min_confidence, as_of)
        terms = self._compiler.terms(text)
        if not terms or limit <= 0:
            return []
        params = filter_params(filters, item_filters)
        params.update(agent=self._agent, lexemes=lexemes(terms), query=tsquery(terms, " | "))
        key, item_key = filters.key, item_filters.key
        if len(terms) <= MAX_QUERY_TERMS and single_lexemes(terms):  # ranked in the server
            params.update(limit=limit, need=len(terms) if mode == "all" else 1)
            with self._engine.read() as conn:
                rows = conn.execute(sql.ranked_sql(key, item_key), params).fetchall()
            return facts_from_rows(decoded((*r[:-1], -r[-1]) for r in rows), ranked=True)
        with self._engine.snapshot() as conn:
            stats = conn.execute(sql.STATS, (self._agent, sql.FACTS)).fetchone()
            rows = conn.execute(sql.search_sql(key, item_key), params).fetchall()
            if not stats or not rows:
                return []
            if len(terms) > MAX_QUERY_TERMS:  # the rarest, counted in this snapshot
                terms = rarest(terms, rows, "all" if mode == "all" else "any")
            hits = best(rows, terms, int(stats[0]), int(stats[1]), mode == "all", limit)
            if not hits:
                return []
            found = {
                r[0]: r[1:]
                for r in conn.execute(sql.SELECT_BY_PK, (self._agent, [pk for pk, _ in hits]))
            }
        ordered = [(*found[pk], -score) for pk, score in hits if pk in found]
        return facts_from_rows(decoded(ordered), ranked=True)

    def _semantic(
        self, query: str, top_k: int, mode: SearchMode, filter_args: dict[str, Any]
    ) -> list[Fact]:
        """Modes "vector" and "hybrid", filters before ranking in both legs."""
        from ..rules.hybrid import check_semantic, semantic_search  # numpy: only with vectors

        text, limit, filters, item_filters = check_semantic(query, top_k, mode, filter_args)
        vectors = self._require_vectors(f"mode={mode!r}")
        if limit <= 0 or not text.strip():
            return []
        shape, params = (filters.key, item_filters.key), filter_params(filters, item_filters)
        return semantic_search(
            mode,
            limit,
            vectors.embedding.query(text),  # before any read: no transaction open
            lambda vector, wanted: vectors.search(vector, wanted, shape, params),
            lambda wanted: self.search(text, wanted, mode="any", **filter_args),
        )

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
        params = filter_params(filters, item_filters)
        params.update(agent=self._agent, limit=limit, offset=offset)
        text = sql.list_sql(filters.key, item_filters.key, oldest_first, limited)
        with self._engine.read() as conn:
            rows = conn.execute(text, params).fetchall()
        return facts_from_rows(decoded(rows), ranked=False)

    def tags(self) -> dict[str, int]:
        params = {"agent": self._agent, "now": now_ms()}
        with self._engine.read() as conn:
            counts = {decode(t): int(n) for t, n in conn.execute(sql.TAGS, params)}
        return dict(sorted(counts.items()))

    def categories(self) -> list[str]:
        params = {"agent": self._agent, "now": now_ms()}
        with self._engine.read() as conn:
            return sorted(r[0] for r in conn.execute(sql.CATEGORIES, params))

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
