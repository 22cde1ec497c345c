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

from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from ..protocols import Embedder
from ..records import Fact
from ..rules.encoding import now_ms
from ..rules.filters import FactRow
from ..rules.rows import facts_from_rows
from ..search.query import MAX_QUERY_TERMS, QueryCompiler, compiler_for
from ..stores.facts import FactStoreFront
from ..stores.facts_port import FactListing, FactQuery
from ..stores.sql_facts import FactCodec, SqlFactPort
from . import chains, items
from . import facts_sql as sql
from .codec import decode, encode
from .engine import Conn, Engine
from .fact_params import decoded, filter_params, rarest, row_params
from .items import meta_jsonb
from .ranking import best, lexemes, single_lexemes, tsquery

if TYPE_CHECKING:
    from ..search.embedding import Embedding
    from .vectors import FactVectors

__all__ = ["PostgresFactPort", "PostgresFactStore", "meta_jsonb"]


#: Text escaped as `codec` says; ids to delete as one text array.
_CODEC = FactCodec(encode, decode, decoded, list)


class PostgresFactPort(SqlFactPort[Engine, "FactVectors"]):
    """One agent's fact rows in a PostgreSQL database; thread-safe (pooled connections,
    the agent's corpus row locked by every write)."""

    raw_refusal: str | None = (
        "mode='raw' (FTS5 query syntax) needs the SQLite store; "
        "the PostgreSQL store supports 'any', 'all', 'vector' and 'hybrid'"
    )

    def __init__(self, engine: Engine, embedder: Embedder | None = None) -> None:
        vectors_of = partial(_fact_vectors, engine)
        super().__init__(engine, sql, engine.agent_id, _CODEC, embedder, vectors_of)
        self._agent: str = engine.agent_id
        self._compiler = compiler_for(engine.config.tokenizer)
        with engine.read() as conn:  # one index probe when nothing is missing
            missing = conn.execute(sql.ANY_UNFINGERPRINTED, (self._agent,)).fetchone()
        if missing:
            with engine.write() as conn:
                conn.execute(sql.LOCK_CORPUS, (self._agent, sql.FACTS))
                items.fill_fingerprints(conn, self._agent)

    def __repr__(self) -> str:
        return f"<PostgresFactStore agent={self._agent!r}>"

    @property
    def compiler(self) -> QueryCompiler:
        return self._compiler

    def _place_keyed(self, conn: Conn, facts: list[tuple[str, str]]) -> None:
        chains.place_keyed(conn, self._agent, facts)

    def _writing_facts(self, conn: Conn) -> None:
        """Every writer of the agent's facts locks its statistics first (lock order)."""
        conn.execute(sql.LOCK_CORPUS, (self._agent, sql.FACTS))

    def _removed(self, conn: Conn, gone: list[Any]) -> None:
        """The removed facts' share of the BM25 statistics goes in their transaction."""
        if gone:
            stats = (-len(gone), -sum(r[0] for r in gone), self._agent, sql.FACTS)
            conn.execute(sql.UPDATE_STATS, stats)

    # -- writes -------------------------------------------------------------------------

    def write(self, rows: Sequence[FactRow], *, embed: bool) -> None:
        params = [self.params(r) for r in rows]  # tokenized before the transaction
        prepared = self.vectors.prepare(rows, embed=embed)  # no lock held
        with self._engine.write() as conn:
            self.write_rows(conn, rows, params, now_ms())
            self.vectors.write(conn, prepared)

    def write_rows(
        self, conn: Conn, rows: Sequence[FactRow], params: list[dict[str, Any]], now: int
    ) -> None:
        """Upsert `rows`, then place keyed (or moved chained) facts in their chains; the
        corpus lock `_upsert` takes first serialises the chain's writers."""
        self._upsert(conn, params, now)
        if any(r.key for r in rows):
            keyed = [(p["id"], r.key) for r, p in zip(rows, params, strict=True)]
            chains.place_keyed(conn, self._agent, keyed)

    def params(self, row: FactRow) -> dict[str, Any]:
        """A checked row's upsert parameters (tokenized: outside any transaction)."""
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

    def remember(self, row: FactRow) -> str:
        """`sqlmem.postgres.items` merges a repeated text into its stored fact."""
        params, prepared = [self.params(row)], self.vectors.prepare([row])
        with self._engine.write() as conn:
            now = now_ms()
            conn.execute(sql.LOCK_CORPUS, (self._agent, sql.FACTS))
            merged = items.remember(conn, self._agent, row, now)
            if merged is None:
                self.write_rows(conn, [row], params, now)
                self.vectors.write(conn, prepared)
        return row.id if merged is None else merged

    def supersede(self, old_id: str, row: FactRow) -> str:
        prepared = self.vectors.prepare([row])  # no lock held
        with self._engine.write() as conn:
            now = now_ms()
            conn.execute(sql.LOCK_CORPUS, (self._agent, sql.FACTS))
            row, chain = chains.prepare_supersede(conn, self._agent, old_id, row, now)
            fact_id = encode(row.id)
            chains.leave(conn, self._agent, fact_id)  # when the id names a chained fact
            self._upsert(conn, [self.params(row)], now)
            chains.relink(conn, self._agent, fact_id, chain)
            self.vectors.write(conn, prepared)
        return row.id

    def promote_eligible(self, params: dict[str, Any]) -> list[str]:
        params.update(agent=self._agent, now=now_ms())
        with self._engine.write() as conn:
            rows = conn.execute(sql.PROMOTE_ELIGIBLE, params).fetchall()
            keyed = [(str(r[0]), str(r[3])) for r in rows if r[3]]
            chains.place_keyed(conn, self._agent, keyed)
        rows.sort(key=lambda r: (r[1], r[2]))  # oldest first, as the twin orders them
        return [decode(r[0]) for r in rows]

    # -- reads --------------------------------------------------------------------------

    def ranked(self, query: FactQuery) -> list[Fact]:
        """BM25 in the server for a query of single-token words; else the candidates'
        token counts are read in one snapshot and ranked here (`ranking.best`)."""
        terms, every = query.terms, query.mode == "all"
        params = filter_params(query.filters, query.items)
        params.update(agent=self._agent, lexemes=lexemes(terms), query=tsquery(terms, " | "))
        key, item_key = query.filters.key, query.items.key
        if len(terms) <= MAX_QUERY_TERMS and single_lexemes(terms):  # ranked in the server
            params.update(limit=query.limit, need=len(terms) if every else 1)
            with self._engine.read() as conn:
                rows = conn.execute(sql.ranked_sql(key, item_key), params).fetchall()
            return facts_from_rows(decoded((*r[:-1], -r[-1]) for r in rows), ranked=True)
        with self._engine.snapshot() as conn:
            stats = conn.execute(sql.STATS, (self._agent, sql.FACTS)).fetchone()
            rows = conn.execute(sql.search_sql(key, item_key), params).fetchall()
            if not stats or not rows:
                return []
            if len(terms) > MAX_QUERY_TERMS:  # the rarest, counted in this snapshot
                terms = rarest(terms, rows, "all" if every else "any")
            hits = best(rows, terms, int(stats[0]), int(stats[1]), every, query.limit)
            if not hits:
                return []
            found = {
                r[0]: r[1:]
                for r in conn.execute(sql.SELECT_BY_PK, (self._agent, [pk for pk, _ in hits]))
            }
        ordered = [(*found[pk], -score) for pk, score in hits if pk in found]
        return facts_from_rows(decoded(ordered), ranked=True)

    def semantic(self, query: FactQuery) -> list[Fact]:
        """Modes "vector" and "hybrid" (`rules.hybrid.semantic_search`), filters before
        ranking in both legs."""
        from ..rules.hybrid import semantic_search  # numpy: only with vectors

        vectors = self.vectors.required()
        shape = (query.filters.key, query.items.key)
        params = filter_params(query.filters, query.items)
        return semantic_search(
            query.mode,
            query.limit,
            vectors.embedding.query(query.text),  # before any read: no transaction open
            lambda vector, wanted: vectors.search(vector, wanted, shape, params),
            lambda wanted: (
                self.ranked(replace(query, mode="any", limit=wanted)) if query.terms else []
            ),
        )

    def listed(self, listing: FactListing) -> list[Fact]:
        params = filter_params(listing.filters, listing.items)
        limited = listing.limit is not None
        params.update(agent=self._agent, limit=listing.limit or 0, offset=listing.offset)
        keys = (listing.filters.key, listing.items.key, listing.oldest_first, limited)
        with self._engine.read() as conn:
            rows: list[Any] = []
            page_end = listing.offset + (listing.limit or 0)
            if (
                sql.valid_at_shape(listing.items.key, listing.oldest_first, limited)
                and listing.state == "live"
                and page_end <= sql.VALID_AT_WINDOW // 2
            ):  # `as_of`: the newest facts first, in the same snapshot
                params["window"] = sql.VALID_AT_WINDOW
                rows = conn.execute(sql.list_sql(*keys, "live", True), params).fetchall()
            if not rows or len(rows) < (listing.limit or 0):
                rows = conn.execute(sql.list_sql(*keys, listing.state), params).fetchall()
        return facts_from_rows(decoded(rows), ranked=False)


def _fact_vectors(engine: Engine, embedding: Embedding) -> FactVectors:
    from .vectors import FactVectors  # numpy: only with an embedder

    return FactVectors(engine, embedding)


class PostgresFactStore(FactStoreFront):
    """`FactStore` over one agent's rows of a PostgreSQL database: the fact store front
    over `PostgresFactPort`; thread-safe."""

    _port: PostgresFactPort

    def __init__(self, engine: Engine, embedder: Embedder | None = None) -> None:
        super().__init__(PostgresFactPort(engine, embedder))

    # What code written against the store before it had a port reads (the import).

    @property
    def _engine(self) -> Engine:
        return self._port._engine

    @property
    def _compiler(self) -> QueryCompiler:
        return self._port.compiler

    def _params(self, row: FactRow) -> dict[str, Any]:
        return self._port.params(row)

    def _write_rows(
        self, conn: Conn, rows: Sequence[FactRow], params: list[dict[str, Any]], now: int
    ) -> None:
        self._port.write_rows(conn, rows, params, now)
