"""`PostgresDocumentStore`: the DocumentStore protocol on PostgreSQL, one agent's documents.

Storage model (migrations/postgres/0004_documents.sql): `documents` keyed by (agent_id,
path) holds each path's current content and flags, `document_revisions` the previous
contents (pruned to `StoreConfig.doc_revisions` in the transaction that adds one),
`document_blocks` the content cut into blocks with their tokens as a tsvector, for BM25
with the statistics of `corpus_stats` (corpus 3). Every rule is the one the SQLite store
and the twin use (`sqlmem.rules.documents`, `doc_blocks`, `doc_render`, `doc_folders`);
tokens, phrases and ranking are the facts' (`sqlmem.postgres.ranking`).

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
import os
from datetime import date
from typing import Any, NamedTuple

from ..doc_records import (
    Document,
    DocumentHit,
    DocumentImport,
    DocumentInfo,
    DocumentWrite,
    RevisionInfo,
)
from ..errors import DocumentNotFoundError
from ..rules.doc_blocks import split_blocks
from ..rules.doc_folders import read_folder, write_folder
from ..rules.doc_render import daily_day, memory_context, recent_window, render_files
from ..rules.documents import (
    appended,
    build_document,
    build_hit,
    build_info,
    build_revision,
    build_write,
    check_bool,
    check_content,
    check_day,
    check_doc_path,
    check_expected_revision,
    check_prefix,
    check_revision,
    check_sort_order,
    daily_heading,
    daily_path,
    edited,
    new_flags,
    prune_below,
    require_revision,
)
from ..rules.encoding import now_ms
from ..rules.filters import check_limit, check_query
from ..search.query import MAX_QUERY_TERMS, Term, compiler_for
from . import docs_sql as sql
from .codec import decode, encode
from .doc_index import insert_blocks, write_blocks
from .engine import Conn, Engine
from .fact_params import rarest
from .ranking import best, lexemes, single_lexemes, tsquery

__all__ = ["PostgresDocumentStore"]

_MAX_LIMIT = 2**62
#: `_put`'s row when the caller has not read it yet.
_UNREAD = object()


class _Put(NamedTuple):
    """What `_put` did, and the document's state afterwards."""

    created: bool
    overwritten: bool
    enabled: bool
    sort_order: int
    revision: int
    created_ms: int
    updated_ms: int


class PostgresDocumentStore:
    """`DocumentStore` over one agent's rows of a PostgreSQL database; thread-safe."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._agent = engine.agent_id
        self._compiler = compiler_for(engine.config.tokenizer)

    def __repr__(self) -> str:
        return f"<PostgresDocumentStore agent={self._agent!r}>"

    def _key(self, path: str, **more: Any) -> dict[str, Any]:
        return {"agent": self._agent, "path": path, **more}

    # -- writes -------------------------------------------------------------------------

    def write(
        self,
        path: str,
        content: str,
        *,
        enabled: bool | None = None,
        sort_order: int | None = None,
        expected_revision: int | None = None,
    ) -> DocumentWrite:
        check_doc_path(path)
        expected = check_expected_revision(expected_revision)
        size = check_content(content)
        if enabled is not None:
            check_bool(enabled, "enabled")
        if sort_order is not None:
            sort_order = check_sort_order(sort_order)
        with self._engine.write() as conn:
            row = self._locked_row(conn, path)
            require_revision(path, expected, None if row is None else row[2])
            done = self._put(conn, path, content, size, enabled, sort_order, now_ms(), row)
        return build_write(path, done.created, done.overwritten, size, done.revision)

    def edit(
        self,
        path: str,
        old_text: str,
        new_text: str,
        *,
        replace_all: bool = False,
        expected_revision: int | None = None,
    ) -> int:
        check_doc_path(path)
        expected = check_expected_revision(expected_revision)
        with self._engine.write() as conn:
            row = self._locked_row(conn, path)
            require_revision(path, expected, None if row is None else row[2])
            if row is None:
                raise _not_found(path)
            content, count = edited(row[6], old_text, new_text, replace_all, row[5])
            if content != row[6]:
                size = check_content(content, "edited content")
                self._put(conn, path, content, size, None, None, now_ms(), row)
        return count

    def append(self, path: str, text: str, *, expected_revision: int | None = None) -> Document:
        check_doc_path(path)
        expected = check_expected_revision(expected_revision)
        check_content(text, "text")
        return self._append(path, text, "", expected)

    def append_daily(self, text: str, *, day: date | None = None) -> Document:
        check_content(text, "text")
        when = check_day(day)
        return self._append(daily_path(when), text, daily_heading(when), None)

    def _append(self, path: str, text: str, heading: str, expected: int | None) -> Document:
        with self._engine.write() as conn:
            row = self._locked_row(conn, path)
            require_revision(path, expected, None if row is None else row[2])
            content = appended(row[6] if row else heading, text)
            size = check_content(content, "appended content")
            done = self._put(conn, path, content, size, None, None, now_ms(), row)
        return build_document(
            path,
            content,
            done.enabled,
            done.sort_order,
            done.revision,
            done.created_ms,
            done.updated_ms,
            size,
        )

    def delete(self, path: str) -> None:
        check_doc_path(path)
        with self._engine.write() as conn:
            conn.execute(sql.LOCK_CORPUS, (self._agent, sql.DOCUMENTS))
            if conn.execute(sql.DELETE, self._key(path)).fetchone() is None:
                raise _not_found(path)

    def set_enabled(self, path: str, enabled: bool) -> None:
        check_doc_path(path)
        check_bool(enabled, "enabled")
        with self._engine.write() as conn:
            if conn.execute(sql.SET_ENABLED, self._key(path, enabled=enabled)).rowcount == 0:
                raise _not_found(path)

    def set_sort_order(self, path: str, n: int) -> None:
        check_doc_path(path)
        order = check_sort_order(n)
        with self._engine.write() as conn:
            if conn.execute(sql.SET_SORT_ORDER, self._key(path, order=order)).rowcount == 0:
                raise _not_found(path)

    def restore(self, path: str, revision: int) -> DocumentWrite:
        check_doc_path(path)
        number = check_revision(revision)
        with self._engine.write() as conn:
            conn.execute(sql.LOCK_CORPUS, (self._agent, sql.DOCUMENTS))
            content = self._revision_content(conn, path, number)
            size = check_content(content)
            done = self._put(conn, path, content, size, None, None, now_ms())
        return build_write(path, done.created, done.overwritten, size, done.revision)

    def import_dir(self, folder: str | os.PathLike[str]) -> DocumentImport:
        found, skipped = read_folder(folder)  # before the transaction: file reads are slow
        created = updated = unchanged = 0
        now = now_ms()
        with self._engine.write() as conn:  # one transaction: all files or none
            for path, content in found:
                done = self._put(conn, path, content, check_content(content), None, None, now)
                created += done.created
                updated += done.overwritten
                unchanged += not (done.created or done.overwritten)
        return DocumentImport.model_construct(
            created=created, updated=updated, unchanged=unchanged, skipped=skipped
        )

    def _locked_row(self, conn: Conn, path: str) -> tuple[Any, ...] | None:
        """The SELECT_FOR_WRITE row (content decoded), read under the corpus lock."""
        conn.execute(sql.LOCK_CORPUS, (self._agent, sql.DOCUMENTS))
        row = conn.execute(sql.SELECT_FOR_WRITE, self._key(path)).fetchone()
        return None if row is None else (*row[:6], decode(row[6]))

    def _put(
        self,
        conn: Conn,
        path: str,
        content: str,
        size: int,
        enabled: bool | None,
        sort_order: int | None,
        now: int,
        row: tuple[Any, ...] | object | None = _UNREAD,
    ) -> _Put:
        """Store `content` at `path` inside the caller's transaction (`row`: the
        `_locked_row` when the caller already read it, None when there is no document)."""
        if row is _UNREAD:
            row = self._locked_row(conn, path)
        if not isinstance(row, tuple):
            on, order = new_flags(path, enabled, sort_order)
            params = self._key(path, enabled=on, order=order, size=size, now=now)
            conn.execute(sql.INSERT, {**params, "content": encode(content)})
            insert_blocks(conn, self._compiler, self._key(path), split_blocks(content), 0)
            return _Put(True, False, on, order, 1, now, now)
        old_on, old_order, revision, created_ms, updated_ms = row[:5]
        on = old_on if enabled is None else enabled
        order = old_order if sort_order is None else sort_order
        key = self._key(path, enabled=on, order=order)
        if row[6] == content:
            if on != old_on or order != old_order:
                conn.execute(sql.UPDATE_FLAGS, key)
            return _Put(False, False, on, order, revision, created_ms, updated_ms)
        keep = self._engine.config.doc_revisions
        if keep > 0:
            conn.execute(sql.KEEP_REVISION, key)
        conn.execute(sql.PRUNE_REVISIONS, {**key, "below": prune_below(revision + 1, keep)})
        conn.execute(
            sql.UPDATE_CONTENT, {**key, "content": encode(content), "size": size, "now": now}
        )
        write_blocks(conn, self._compiler, self._key(path), row[6], content)
        return _Put(False, True, on, order, revision + 1, created_ms, now)

    def _revision_content(self, conn: Conn, path: str, revision: int) -> str:
        """The content of `revision` (the current one, or a kept previous one)."""
        row = conn.execute(sql.READ_REVISION, self._key(path, revision=revision)).fetchone()
        if row is None:
            raise _not_found(path)
        current, content = row
        if content is None:
            raise DocumentNotFoundError(
                f"{path!r} has no revision {revision} (current {current}; pruned or never written)"
            )
        return decode(content)

    # -- reads --------------------------------------------------------------------------

    def read(self, path: str) -> Document | None:
        check_doc_path(path)
        with self._engine.read() as conn:
            row = conn.execute(sql.READ, self._key(path)).fetchone()
        if row is None:
            return None
        p, content, enabled, order, revision, created, updated, size = row
        return build_document(p, decode(content), enabled, order, revision, created, updated, size)

    def list(self, prefix: str = "") -> list[DocumentInfo]:
        check_prefix(prefix)
        if "\x00" in prefix:  # no path holds NUL (and PostgreSQL text cannot)
            return []
        with self._engine.read() as conn:
            rows = conn.execute(sql.LIST, {"agent": self._agent, "prefix": prefix}).fetchall()
        return [build_info(*row) for row in rows]

    def revisions(self, path: str) -> builtins.list[RevisionInfo]:
        check_doc_path(path)
        with self._engine.read() as conn:
            rows = conn.execute(sql.REVISIONS, self._key(path)).fetchall()
        if not rows:
            raise _not_found(path)
        return [build_revision(*r) for r in rows if r[0] is not None]

    def read_revision(self, path: str, revision: int) -> str:
        check_doc_path(path)
        number = check_revision(revision)
        with self._engine.read() as conn:
            return self._revision_content(conn, path, number)

    def search(
        self, query: str, *, top_k: int = 10, prefix: str = ""
    ) -> builtins.list[DocumentHit]:
        check_query(query, "any")
        limit = check_limit(top_k, "top_k")
        check_prefix(prefix)
        terms = self._compiler.terms(query)
        if not terms or limit <= 0 or "\x00" in prefix:
            return []
        params: dict[str, Any] = {
            "agent": self._agent,
            "prefix": prefix,
            "lexemes": lexemes(terms),
            "query": tsquery(terms, " | "),
        }
        if len(terms) <= MAX_QUERY_TERMS and single_lexemes(terms):  # ranked in the server
            params.update(limit=min(limit, _MAX_LIMIT), need=1)
            with self._engine.read() as conn:
                rows = conn.execute(sql.RANKED_PREFIX if prefix else sql.RANKED, params)
                return [
                    build_hit(p, start, end, decode(text), score)
                    for p, start, end, text, score in rows.fetchall()
                ]
        return self._ranked_here(terms, params, min(limit, _MAX_LIMIT))

    def _ranked_here(
        self, terms: tuple[Term, ...], params: dict[str, Any], limit: int
    ) -> builtins.list[DocumentHit]:
        """Phrases (CJK runs) and long queries: BM25 in Python over the candidate blocks,
        read in one snapshot with the statistics (`ranking.best`)."""
        with self._engine.snapshot() as conn:
            stats = conn.execute(sql.STATS, (self._agent, sql.DOCUMENTS)).fetchone()
            rows = [
                ((r[0], r[1]), *r[2:])
                for r in conn.execute(
                    sql.CANDIDATES_PREFIX if params["prefix"] else sql.CANDIDATES, params
                )
            ]
            if not stats or not rows:
                return []
            if len(terms) > MAX_QUERY_TERMS:  # the rarest, counted in this snapshot
                terms = rarest(terms, rows, "any")
            hits = best(rows, terms, int(stats[0]), int(stats[1]), False, limit)
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
            build_hit(hit[0], hit[1], hit[2], decode(hit[3]), score)
            for key, score in hits
            if (hit := found.get(key)) is not None
        ]

    def render_files(self) -> str:
        with self._engine.read() as conn:
            rows = conn.execute(sql.ENABLED_CONTENTS, {"agent": self._agent}).fetchall()
        return render_files((p, decode(c)) for p, c in rows)

    def render_memory_context(self, *, today: date | None = None, recent_days: int = 7) -> str:
        first, day = recent_window(today, recent_days)
        params = {"agent": self._agent, "first": daily_path(first), "last": daily_path(day)}
        with self._engine.read() as conn:
            rows = conn.execute(sql.MEMORY_CONTEXT, params).fetchall()
        memory = None
        notes: dict[date, str] = {}
        for path, content in rows:
            if path == "MEMORY.md":
                memory = decode(content)
            elif (when := daily_day(path)) is not None:
                notes[when] = decode(content)
        return memory_context(memory, notes, day, first)

    def export_dir(self, folder: str | os.PathLike[str]) -> int:
        with self._engine.read() as conn:  # one statement: the files agree with each other
            rows = conn.execute(sql.READ_CONTENTS, {"agent": self._agent}).fetchall()
        return write_folder(folder, [(p, decode(c)) for p, c in rows])


def _not_found(path: str) -> DocumentNotFoundError:
    return DocumentNotFoundError(f"no document at {path!r}")
