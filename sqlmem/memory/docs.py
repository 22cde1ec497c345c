"""`InMemoryDocumentStore`: the document store without a file, for tests and throwaway
programs.

It keeps the SQLite store's semantics, not just its signatures: the same rules
(`sqlmem.rules.documents`: paths, defaults, edit, append, blocks, revisions), the same
prompt blocks (`rules.doc_render`), the same folder sync (`rules.doc_folders`), and
search over the same blocks with FTS5's tokens and BM25 (`search.bm25`), so the stateful
test can compare the two stores hit for hit.

Thread-safe: one lock around every operation (reads included, they are short).
"""

from __future__ import annotations

import builtins
import os
import threading
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import date

from ..config import StoreConfig
from ..doc_records import (
    Document,
    DocumentHit,
    DocumentImport,
    DocumentInfo,
    DocumentWrite,
    RevisionInfo,
)
from ..errors import DocumentNotFoundError, InvalidArgumentError
from ..rules.doc_blocks import split_blocks
from ..rules.doc_folders import read_folder, write_folder
from ..rules.doc_index_work import check_write_work
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
from ..search.bm25 import occurrences, scores
from ..search.query import (
    MAX_QUERY_TERMS,
    QueryCompiler,
    Term,
    compiler_for,
    rarest_terms,
    segment,
    tokens_of,
)

__all__ = ["InMemoryDocumentStore"]


@dataclass(frozen=True)
class _Block:
    start_line: int
    end_line: int
    text: str
    tokens: tuple[str, ...]
    counts: Counter[str]


@dataclass
class _Doc:
    content: str
    enabled: bool
    sort_order: int
    revision: int
    created_ms: int
    updated_ms: int
    size: int
    blocks: list[_Block]
    #: revision -> (content, size, updated_ms) of the kept previous contents
    kept: dict[int, tuple[str, int, int]] = field(default_factory=dict)

    def document(self, path: str) -> Document:
        return build_document(
            path,
            self.content,
            self.enabled,
            self.sort_order,
            self.revision,
            self.created_ms,
            self.updated_ms,
            self.size,
        )


class InMemoryDocumentStore:
    """`DocumentStore` held in a dict; same protocol and semantics as
    `SQLiteDocumentStore`."""

    def __init__(self, config: StoreConfig | None = None) -> None:
        """`config.tokenizer` and `config.doc_revisions` matter here; the rest concern
        files."""
        if config is not None and not isinstance(config, StoreConfig):
            raise InvalidArgumentError("config must be a StoreConfig")
        cfg = config or StoreConfig()
        self._compiler: QueryCompiler = compiler_for(cfg.tokenizer)
        self._keep = cfg.doc_revisions
        self._docs: dict[str, _Doc] = {}
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"<InMemoryDocumentStore {len(self._docs)} documents>"

    # -- atomic blocks (sqlmem.memory.db) ---------------------------------------------------

    def _snapshot(self) -> object:
        """The documents as they are now: a `_Doc`'s fields are reassigned on change, except
        its `kept` revisions, which are added to in place, so those are copied too."""
        return {path: replace(doc, kept=dict(doc.kept)) for path, doc in self._docs.items()}

    def _restore(self, state: object) -> None:
        assert isinstance(state, dict)
        self._docs = state

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
        with self._lock:
            self._require(path, expected)
            self._check_work(path, content)
            created, overwritten, doc = self._put(path, content, size, enabled, sort_order)
            return build_write(path, created, overwritten, size, doc.revision)

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
        with self._lock:
            self._require(path, expected)
            doc = self._docs.get(path)
            if doc is None:
                raise _not_found(path)
            content, count = edited(doc.content, old_text, new_text, replace_all, doc.size)
            if content != doc.content:
                self._put(path, content, check_content(content, "edited content"), None, None)
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
        with self._lock:
            self._require(path, expected)
            doc = self._docs.get(path)
            content = appended(doc.content if doc is not None else heading, text)
            size = check_content(content, "appended content")
            return self._put(path, content, size, None, None)[2].document(path)

    def _check_work(self, path: str, content: str) -> None:
        """The SQLite store's bound on what one write may index (`rules.doc_index_work`)."""
        doc = self._docs.get(path)
        check_write_work(path, None if doc is None else doc.content, content)

    def _require(self, path: str, expected: int | None) -> None:
        doc = self._docs.get(path)
        require_revision(path, expected, None if doc is None else doc.revision)

    def delete(self, path: str) -> None:
        check_doc_path(path)
        with self._lock:
            if self._docs.pop(path, None) is None:
                raise _not_found(path)

    def set_enabled(self, path: str, enabled: bool) -> None:
        check_doc_path(path)
        check_bool(enabled, "enabled")
        with self._lock:
            self._get(path).enabled = enabled

    def set_sort_order(self, path: str, n: int) -> None:
        check_doc_path(path)
        order = check_sort_order(n)
        with self._lock:
            self._get(path).sort_order = order

    def restore(self, path: str, revision: int) -> DocumentWrite:
        check_doc_path(path)
        number = check_revision(revision)
        with self._lock:
            content = self._revision_content(path, number)
            size = check_content(content)
            self._check_work(path, content)
            created, overwritten, doc = self._put(path, content, size, None, None)
            return build_write(path, created, overwritten, size, doc.revision)

    def import_dir(self, folder: str | os.PathLike[str]) -> DocumentImport:
        found, skipped = read_folder(folder)
        created = updated = unchanged = 0
        with self._lock:
            for path, content in found:
                self._check_work(path, content)
            for path, content in found:
                new, changed, _ = self._put(path, content, check_content(content), None, None)
                created += new
                updated += changed
                unchanged += not (new or changed)
        return DocumentImport.model_construct(
            created=created, updated=updated, unchanged=unchanged, skipped=skipped
        )

    def _put(
        self, path: str, content: str, size: int, enabled: bool | None, sort_order: int | None
    ) -> tuple[bool, bool, _Doc]:
        """(created, overwritten, the document): as `SQLiteDocumentStore._put`."""
        now = now_ms()
        doc = self._docs.get(path)
        if doc is None:
            on, order = new_flags(path, enabled, sort_order)
            doc = _Doc(content, on, order, 1, now, now, size, self._blocks(content, []))
            self._docs[path] = doc
            return True, False, doc
        if enabled is not None:
            doc.enabled = enabled
        if sort_order is not None:
            doc.sort_order = sort_order
        if content == doc.content:
            return False, False, doc
        if self._keep > 0:
            doc.kept[doc.revision] = (doc.content, doc.size, doc.updated_ms)
        below = prune_below(doc.revision + 1, self._keep)
        doc.kept = {n: kept for n, kept in doc.kept.items() if n >= below}
        doc.blocks = self._blocks(content, doc.blocks)
        doc.content, doc.size, doc.revision, doc.updated_ms = content, size, doc.revision + 1, now
        return False, True, doc

    def _blocks(self, content: str, old: builtins.list[_Block]) -> builtins.list[_Block]:
        """The blocks of `content`, reusing the tokens of unchanged ones."""
        known = {b.text: b for b in old}
        blocks = []
        for start, end, text in split_blocks(content):
            same = known.get(text)
            if same is not None:
                blocks.append(_Block(start, end, text, same.tokens, same.counts))
            else:
                tokens = self._compiler.tokens(segment(text) or text)
                blocks.append(_Block(start, end, text, tokens, Counter(tokens)))
        return blocks

    # -- reads --------------------------------------------------------------------------

    def read(self, path: str) -> Document | None:
        check_doc_path(path)
        with self._lock:
            doc = self._docs.get(path)
            return doc.document(path) if doc is not None else None

    def list(self, prefix: str = "") -> builtins.list[DocumentInfo]:
        check_prefix(prefix)
        with self._lock:
            found = sorted(
                (d.sort_order, p, d) for p, d in self._docs.items() if p.startswith(prefix)
            )
            return [
                build_info(
                    p, d.enabled, d.sort_order, d.revision, d.created_ms, d.updated_ms, d.size
                )
                for _, p, d in found
            ]

    def revisions(self, path: str) -> builtins.list[RevisionInfo]:
        check_doc_path(path)
        with self._lock:
            doc = self._get(path)
            return [
                build_revision(n, size, updated)
                for n, (_, size, updated) in sorted(doc.kept.items(), reverse=True)
            ]

    def read_revision(self, path: str, revision: int) -> str:
        check_doc_path(path)
        number = check_revision(revision)
        with self._lock:
            return self._revision_content(path, number)

    def _revision_content(self, path: str, revision: int) -> str:
        doc = self._get(path)
        if revision == doc.revision:
            return doc.content
        kept = doc.kept.get(revision)
        if kept is None:
            raise DocumentNotFoundError(
                f"{path!r} has no revision {revision} (current {doc.revision}; "
                "pruned or never written)"
            )
        return kept[0]

    def _get(self, path: str) -> _Doc:
        doc = self._docs.get(path)
        if doc is None:
            raise _not_found(path)
        return doc

    def search(
        self, query: str, *, top_k: int = 10, prefix: str = ""
    ) -> builtins.list[DocumentHit]:
        check_query(query, "any")
        limit = check_limit(top_k, "top_k")
        check_prefix(prefix)
        terms = self._compiler.terms(query)
        if not terms or limit <= 0:
            return []
        with self._lock:
            rows = [(p, b) for p, d in self._docs.items() for b in d.blocks]
            if len(terms) > MAX_QUERY_TERMS:  # the rarest, as the SQLite store keeps them
                docs = Counter[str]()
                wanted = tokens_of(terms)
                for _, block in rows:
                    docs.update(wanted.intersection(block.counts))
                terms = rarest_terms(terms, docs, "any")
                if not terms:
                    return []
            return _ranked(rows, terms, prefix, limit)

    def render_files(self) -> str:
        with self._lock:
            found = sorted((d.sort_order, p, d.content) for p, d in self._docs.items() if d.enabled)
        return render_files((p, content) for _, p, content in found)

    def render_memory_context(self, *, today: date | None = None, recent_days: int = 7) -> str:
        first, day = recent_window(today, recent_days)
        with self._lock:
            memory = self._docs.get("MEMORY.md")
            notes = {}
            for path, doc in self._docs.items():
                when = daily_day(path)
                if when is not None and first <= when <= day:
                    notes[when] = doc.content
        return memory_context(memory.content if memory else None, notes, day, first)

    def export_dir(self, folder: str | os.PathLike[str]) -> int:
        with self._lock:
            rows = sorted((p, d.content) for p, d in self._docs.items())
        return write_folder(folder, rows)


def _ranked(
    rows: builtins.list[tuple[str, _Block]], terms: tuple[Term, ...], prefix: str, limit: int
) -> builtins.list[DocumentHit]:
    # Every block counts in N, n_t and avgdl (as in FTS5); the prefix only picks rows.
    ranked = scores(
        [[occurrences(b.tokens, t.tokens, b.counts) for t in terms] for _, b in rows],
        [len(b.tokens) for _, b in rows],
        keep=lambda i: rows[i][0].startswith(prefix),
    )
    ranked.sort(key=lambda hit: (-hit[1], rows[hit[0]][0], rows[hit[0]][1].start_line))
    return [
        build_hit(rows[i][0], rows[i][1].start_line, rows[i][1].end_line, rows[i][1].text, score)
        for i, score in ranked[:limit]
    ]


def _not_found(path: str) -> DocumentNotFoundError:
    return DocumentNotFoundError(f"no document at {path!r}")
