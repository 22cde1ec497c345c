"""`PostgresFactStore`: the FactStore protocol on PostgreSQL, one agent's rows.

Storage model (migrations/postgres/0001_initial.sql): `facts` keyed by (agent_id, id),
with the tags twice (JSON text as given, `tag_set` for filters), the metadata twice (JSON
text byte for byte, `meta` jsonb for filters), the tokens as a tsvector and their count;
`corpus_stats` holds the agent's row and token counts for BM25. Search and its limits:
`sqlmem.postgres.ranking`. Same argument checks, filters and query words as the SQLite
store and the twin (`sqlmem.rules.filters`, `sqlmem.search.query`).

Mode "raw" (FTS5 syntax) is SQLite's: it raises InvalidArgumentError here, as in the twin.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

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
    prepare_fact,
)
from ..rules.rows import facts_from_rows
from ..search.query import MAX_QUERY_TERMS, compiler_for, rarest_terms
from . import facts_sql as sql
from .codec import decode, encode, encode_json_value
from .engine import Engine
from .ranking import best, lexemes, single_lexemes, tsquery, tsvector

__all__ = ["PostgresFactStore", "meta_jsonb"]


def meta_jsonb(metadata_json: str) -> str:
    """The jsonb text of stored or wanted metadata: strings escaped as text is (codec)."""
    if (
        "\\u0000" not in metadata_json
        and "\ue000" not in metadata_json
        and "\\ue000" not in metadata_json
    ):
        return metadata_json
    return json.dumps(encode_json_value(json.loads(metadata_json)))


def _decoded(rows: Iterable[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """Rows of FACT_COLUMNS with the escaped text columns decoded."""
    return [(decode(r[0]), decode(r[1]), decode(r[2]), *r[3:]) for r in rows]


class PostgresFactStore:
    """`FactStore` over one agent's rows of a PostgreSQL database; thread-safe."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._agent = engine.agent_id
        self._compiler = compiler_for(engine.config.tokenizer)

    def __repr__(self) -> str:
        return f"<PostgresFactStore agent={self._agent!r}>"

    # -- writes -------------------------------------------------------------------------

    def index(self, fact: Fact) -> str:
        row = prepare_fact(fact)
        self._upsert([row])
        return row.id

    def index_many(self, facts: Iterable[Fact]) -> list[str]:
        if isinstance(facts, (str, bytes, Mapping)) or not isinstance(facts, Iterable):
            raise InvalidArgumentError("index_many takes an iterable of Fact")
        rows = [prepare_fact(f) for f in facts]  # all checked first: all or nothing
        if rows:
            self._upsert(merge_batch(rows))
        return [r.id for r in rows]

    def _params(self, row: FactRow, now: int) -> dict[str, Any]:
        tokens = self._compiler.tokens(row.search_text or row.content)
        tag_list = json.loads(row.tags) if row.tags != "[]" else []
        return {
            "agent": self._agent,
            "id": encode(row.id),
            "content": encode(row.content),
            "source": encode(row.source),
            "category": row.category,
            "tags": row.tags,
            "tag_set": sorted({encode(t) for t in tag_list}),
            "metadata": row.metadata,
            "meta": meta_jsonb(row.metadata),
            "created": row.created_ms,
            "updated": row.updated_ms,
            "now": now,
            "doc_len": len(tokens),
            "tsv": tsvector(tokens),
        }

    def _upsert(self, rows: Sequence[FactRow]) -> None:
        now = now_ms()
        params = [self._params(r, now) for r in rows]  # tokenized before the transaction
        ids = [p["id"] for p in params]
        with self._engine.write() as conn:
            conn.execute(sql.LOCK_CORPUS, (self._agent, sql.FACTS))
            old = dict(conn.execute(sql.SELECT_OLD_LENGTHS, (self._agent, ids)).fetchall())
            with conn.cursor() as cur:
                cur.executemany(sql.UPSERT, params)
            added = sum(1 for i in ids if i not in old)
            tokens = sum(p["doc_len"] for p in params) - sum(old.values())
            conn.execute(sql.UPDATE_STATS, (added, tokens, self._agent, sql.FACTS))

    def delete(self, fact_id: str) -> None:
        if not is_fact_id(fact_id) or self._delete([fact_id]) == 0:
            raise FactNotFoundError(f"no fact with id {fact_id!r}")

    def delete_many(self, fact_ids: Iterable[str]) -> int:
        if isinstance(fact_ids, (str, bytes)) or not isinstance(fact_ids, Iterable):
            raise InvalidArgumentError("delete_many takes an iterable of fact ids")
        ids = [i for i in fact_ids if is_fact_id(i)]
        return self._delete(ids) if ids else 0

    def _delete(self, ids: Sequence[str]) -> int:
        wanted = sorted({encode(i) for i in ids})
        with self._engine.write() as conn:
            conn.execute(sql.LOCK_CORPUS, (self._agent, sql.FACTS))
            lengths = [r[0] for r in conn.execute(sql.DELETE, (self._agent, wanted))]
            if lengths:
                conn.execute(
                    sql.UPDATE_STATS, (-len(lengths), -sum(lengths), self._agent, sql.FACTS)
                )
        return len(lengths)

    # -- reads --------------------------------------------------------------------------

    def get(self, fact_id: str) -> Fact | None:
        if not is_fact_id(fact_id):
            return None
        with self._engine.read() as conn:
            rows = conn.execute(sql.SELECT_ONE, (self._agent, encode(fact_id))).fetchall()
        return facts_from_rows(_decoded(rows), ranked=False)[0] if rows else None

    def count(self) -> int:
        with self._engine.read() as conn:
            row = conn.execute(sql.COUNT, (self._agent,)).fetchone()
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
    ) -> list[Fact]:
        text = check_query(query, mode)
        if mode == "raw":
            raise InvalidArgumentError(
                "mode='raw' (FTS5 query syntax) needs the SQLite store; "
                "the PostgreSQL store supports 'any' and 'all'"
            )
        limit = check_limit(top_k, "top_k")
        filters = make_filters(tags, category, source, since, until, metadata)
        terms = self._compiler.terms(text)
        if not terms or limit <= 0:
            return []
        params = _filter_params(filters)
        params.update(agent=self._agent, lexemes=lexemes(terms), query=tsquery(terms, " | "))
        if len(terms) <= MAX_QUERY_TERMS and single_lexemes(terms):  # ranked in the server
            params.update(limit=limit, need=len(terms) if mode == "all" else 1)
            with self._engine.read() as conn:
                rows = conn.execute(sql.ranked_sql(filters.key), params).fetchall()
            return facts_from_rows(_decoded((*r[:-1], -r[-1]) for r in rows), ranked=True)
        with self._engine.snapshot() as conn:
            stats = conn.execute(sql.STATS, (self._agent, sql.FACTS)).fetchone()
            rows = conn.execute(sql.search_sql(filters.key), params).fetchall()
            if not stats or not rows:
                return []
            if len(terms) > MAX_QUERY_TERMS:  # the rarest, counted in this snapshot
                terms = _rarest(terms, rows, "all" if mode == "all" else "any")
            hits = best(rows, terms, int(stats[0]), int(stats[1]), mode == "all", limit)
            if not hits:
                return []
            found = {
                r[0]: r[1:]
                for r in conn.execute(sql.SELECT_BY_PK, (self._agent, [pk for pk, _ in hits]))
            }
        ordered = [(*found[pk], -score) for pk, score in hits if pk in found]
        return facts_from_rows(_decoded(ordered), ranked=True)

    def search_by_metadata(self, key: str, value: Any) -> list[Fact]:
        if not isinstance(key, str):
            raise InvalidArgumentError("search_by_metadata: key must be a string")
        return self._list(make_filters(metadata={key: value}), oldest_first=True, limited=False)

    def _list(
        self,
        filters: Filters,
        *,
        oldest_first: bool = False,
        limited: bool = True,
        limit: int = 0,
        offset: int = 0,
    ) -> list[Fact]:
        params = _filter_params(filters)
        params.update(agent=self._agent, limit=limit, offset=offset)
        text = sql.list_sql(filters.key, oldest_first, limited)
        with self._engine.read() as conn:
            rows = conn.execute(text, params).fetchall()
        return facts_from_rows(_decoded(rows), ranked=False)

    def tags(self) -> dict[str, int]:
        with self._engine.read() as conn:
            counts = {decode(t): int(n) for t, n in conn.execute(sql.TAGS, (self._agent,))}
        return dict(sorted(counts.items()))

    def categories(self) -> list[str]:
        with self._engine.read() as conn:
            return sorted(r[0] for r in conn.execute(sql.CATEGORIES, (self._agent,)))

    def list(
        self,
        *,
        tags: Sequence[str] | None = None,
        category: str | None = None,
        source: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> list[Fact]:
        filters = make_filters(tags, category, source, since, until)
        limit, offset = check_page(limit, offset)
        if limit <= 0:
            return []
        return self._list(filters, limit=limit, offset=offset)


def _filter_params(filters: Filters) -> dict[str, Any]:
    """`Filters.params()` in PostgreSQL's terms: escaped text, tags as an array."""
    params = filters.params()
    if filters.tags:
        params["tags"] = [encode(t) for t in filters.tags]
    if filters.source is not None:
        params["source"] = encode(filters.source)
    if filters.metadata:
        params["meta"] = meta_jsonb(filters.metadata_json)
    return params


def _rarest(terms: Sequence[Any], rows: Sequence[Sequence[Any]], mode: Any) -> Any:
    """`rarest_terms` with each token's row count taken from the candidate rows."""
    docs: dict[str, int] = {}
    for row in rows:
        for token in row[2] or ():
            docs[token] = docs.get(token, 0) + 1
    return rarest_terms(terms, docs, mode)
