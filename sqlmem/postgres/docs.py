"""`PostgresDocumentStore`: the DocumentStore protocol on PostgreSQL, one agent's documents.

Storage model (migrations/postgres/0004_documents.sql): `documents` keyed by (agent_id,
path) holds each path's current content and flags, `document_revisions` the previous
contents (pruned to `StoreConfig.doc_revisions` in the transaction that adds one),
`document_blocks` the content cut into blocks with their tokens as a tsvector, for BM25
with the statistics of `corpus_stats` (corpus 3). The store is the shared front
(`sqlmem.stores.documents`) over `PostgresDocumentPort`, which only executes; tokens,
phrases and ranking are the facts' (`sqlmem.postgres.ranking`).

Every content-changing write first takes the agent's document corpus row
(`LOCK_CORPUS`): an agent's document writers queue there (as SQLite's writers at BEGIN
IMMEDIATE), so a read-decide-write (edit, append, a revision number) never races another
server, and the statistics stay exact. Other agents never wait.

As in the SQLite store, a change of content re-indexes only the blocks around it (one
DELETE, one UPDATE moving the blocks after it when the line count changed, one INSERT of
arrays: `sqlmem.postgres.doc_index`, which also states the tsvector size limit).
Contents are stored through the NUL escaping of `codec`; paths are ASCII and stored as is.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from ..rules.doc_blocks import split_blocks
from ..rules.doc_writes import NewContent, Put, RevisionText, Stored
from ..rules.encoding import now_ms
from ..search.query import MAX_QUERY_TERMS, QueryCompiler, compiler_for
from ..stores.documents import DocumentStoreFront
from ..stores.documents_port import DocumentChange, DocumentQuery
from ..stores.sql_documents import SqlDocumentPort
from . import docs_sql as sql
from .codec import decode, encode
from .doc_index import insert_blocks, write_blocks
from .engine import Conn, Engine
from .fact_params import rarest
from .ranking import best, lexemes, single_lexemes, tsquery

__all__ = ["PostgresDocumentPort", "PostgresDocumentStore"]


class PostgresDocumentPort(SqlDocumentPort):
    """`DocumentPort` over one agent's rows of a PostgreSQL database; thread-safe."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine, sql, engine.agent_id, decode)
        self._engine: Engine = engine
        self._agent: str = engine.agent_id
        self._compiler = compiler_for(engine.config.tokenizer)

    @property
    def compiler(self) -> QueryCompiler:
        return self._compiler

    def describe(self) -> str:
        return f"<PostgresDocumentStore agent={self._agent!r}>"

    # -- writes -------------------------------------------------------------------------

    def change(self, change: DocumentChange) -> tuple[NewContent, Put]:
        with self._engine.write() as conn:
            return self._apply(conn, change, None)

    def change_all(
        self, changes: Sequence[DocumentChange]
    ) -> builtins.list[tuple[NewContent, Put]]:
        now = now_ms()
        with self._engine.write() as conn:  # one transaction: all or none
            return [self._apply(conn, change, now) for change in changes]

    def _apply(self, conn: Conn, change: DocumentChange, now: int | None) -> tuple[NewContent, Put]:
        """Read the document under the agent's corpus lock, then store what `change`
        decides, in the caller's transaction (`now` None: the time the lock was had)."""
        path = change.path
        conn.execute(sql.LOCK_CORPUS, (self._agent, sql.DOCUMENTS))
        now = now_ms() if now is None else now
        row = conn.execute(sql.SELECT_FOR_WRITE, self._key(path)).fetchone()
        stored = None if row is None else _stored(row)
        number = change.source_revision
        source = None if number is None else self._revision_text(conn, path, number)
        new = change.new_content(stored, source)
        put = change.put(stored, new, now)
        key = self._key(path, enabled=put.enabled, order=put.sort_order)
        if put.created:
            params = {**key, "size": new.size, "now": now, "content": encode(new.text)}
            conn.execute(sql.INSERT, params)
            insert_blocks(conn, self._compiler, self._key(path), split_blocks(new.text), 0)
        elif put.overwritten:
            assert stored is not None
            if put.keep_previous:
                conn.execute(sql.KEEP_REVISION, key)
            conn.execute(sql.PRUNE_REVISIONS, {**key, "below": put.prune_below})
            params = {**key, "content": encode(new.text), "size": new.size, "now": now}
            conn.execute(sql.UPDATE_CONTENT, params)
            write_blocks(conn, self._compiler, self._key(path), stored.content, new.text)
        elif put.flags_changed:
            conn.execute(sql.UPDATE_FLAGS, key)
        return new, put

    def delete(self, path: str) -> bool:
        with self._engine.write() as conn:
            conn.execute(sql.LOCK_CORPUS, (self._agent, sql.DOCUMENTS))
            return conn.execute(sql.DELETE, self._key(path)).fetchone() is not None

    def _revision_text(self, conn: Conn, path: str, revision: int) -> RevisionText | None:
        row = conn.execute(sql.READ_REVISION, self._key(path, revision=revision)).fetchone()
        if row is None:
            return None
        current, content = row
        return RevisionText(current, None if content is None else decode(content))

    # -- reads --------------------------------------------------------------------------

    def revision_infos(self, path: str) -> builtins.list[tuple[Any, ...]] | None:
        with self._engine.read() as conn:
            rows = conn.execute(sql.REVISIONS, self._key(path)).fetchall()
        if not rows:
            return None
        return [r for r in rows if r[0] is not None]

    def revision_text(self, path: str, revision: int) -> RevisionText | None:
        with self._engine.read() as conn:
            return self._revision_text(conn, path, revision)

    def search(self, query: DocumentQuery) -> builtins.list[tuple[Any, ...]]:
        terms = query.terms
        params: dict[str, Any] = {
            "agent": self._agent,
            "prefix": query.prefix,
            "lexemes": lexemes(terms),
            "query": tsquery(terms, " | "),
        }
        if len(terms) <= MAX_QUERY_TERMS and single_lexemes(terms):  # ranked in the server
            params.update(limit=query.limit, need=1)
            with self._engine.read() as conn:
                rows = conn.execute(sql.RANKED_PREFIX if query.prefix else sql.RANKED, params)
                return [(p, s, e, decode(text), score) for p, s, e, text, score in rows.fetchall()]
        return self._ranked_here(query, params)

    def _ranked_here(
        self, query: DocumentQuery, params: dict[str, Any]
    ) -> builtins.list[tuple[Any, ...]]:
        """Phrases (CJK runs) and long queries: BM25 in Python over the candidate blocks,
        read in one snapshot with the statistics (`ranking.best`)."""
        terms = query.terms
        with self._engine.snapshot() as conn:
            stats = conn.execute(sql.STATS, (self._agent, sql.DOCUMENTS)).fetchone()
            rows = [
                ((r[0], r[1]), *r[2:])
                for r in conn.execute(
                    sql.CANDIDATES_PREFIX if query.prefix else sql.CANDIDATES, params
                )
            ]
            if not stats or not rows:
                return []
            if len(terms) > MAX_QUERY_TERMS:  # the rarest, counted in this snapshot
                terms = rarest(terms, rows, "any")
            hits = best(rows, terms, int(stats[0]), int(stats[1]), False, query.limit)
            if not hits:
                return []
            keys = [key for key, _ in hits]
            found = {
                (r[0], r[1]): r
                for r in conn.execute(
                    sql.SELECT_BLOCKS, (self._agent, [k[0] for k in keys], [k[1] for k in keys])
                )
            }
        return [
            (hit[0], hit[1], hit[2], decode(hit[3]), score)
            for key, score in hits
            if (hit := found.get(key)) is not None
        ]


class PostgresDocumentStore(DocumentStoreFront):
    """`DocumentStore` over one agent's rows: the shared front over `PostgresDocumentPort`."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(PostgresDocumentPort(engine))


def _stored(row: tuple[Any, ...]) -> Stored:
    enabled, order, revision, created, updated, size, content = row
    return Stored(enabled, order, revision, created, updated, size, decode(content))
