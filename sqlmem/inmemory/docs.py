"""`InMemoryDocumentStore`: the document store without a file, for tests and throwaway
programs.

It keeps the SQLite store's semantics, not just its signatures: it is the same front
(`sqlmem.stores.documents`: paths, defaults, edit, append, revisions, records) over
`InMemoryDocumentPort`, with the same prompt blocks and folder sync, the same bound on
what one write may index (`rules.doc_index_work`), and search over the same blocks with
FTS5's tokens and BM25 (`search.bm25`), so the stateful test can compare the two stores
hit for hit.

Thread-safe: one lock around every operation (reads included, they are short).
"""

from __future__ import annotations

import builtins
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..config import StoreConfig
from ..errors import InvalidArgumentError
from ..rules.doc_blocks import split_blocks
from ..rules.doc_index_work import check_write_work
from ..rules.doc_writes import NewContent, Put, RevisionText, Stored
from ..rules.encoding import now_ms
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
from ..stores.documents import DocumentStoreFront
from ..stores.documents_port import DocumentChange, DocumentQuery

__all__ = ["InMemoryDocumentPort", "InMemoryDocumentStore"]


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

    def stored(self) -> Stored:
        return Stored(
            self.enabled,
            self.sort_order,
            self.revision,
            self.created_ms,
            self.updated_ms,
            self.size,
            self.content,
        )


class InMemoryDocumentPort:
    """`DocumentPort` held in a dict."""

    def __init__(self, config: StoreConfig) -> None:
        self._compiler: QueryCompiler = compiler_for(config.tokenizer)
        self._keep = config.doc_revisions
        self._docs: dict[str, _Doc] = {}
        self._lock = threading.RLock()

    @property
    def compiler(self) -> QueryCompiler:
        return self._compiler

    @property
    def revisions_kept(self) -> int:
        return self._keep

    def describe(self) -> str:
        return f"<InMemoryDocumentStore {len(self._docs)} documents>"

    # -- atomic blocks (sqlmem.inmemory.db) ---------------------------------------------------

    def _snapshot(self) -> object:
        """The documents as they are now: a `_Doc`'s fields are reassigned on change, except
        its `kept` revisions, which are added to in place, so those are copied too."""
        return {path: replace(doc, kept=dict(doc.kept)) for path, doc in self._docs.items()}

    def _restore(self, state: object) -> None:
        assert isinstance(state, dict)
        self._docs = state

    # -- writes -------------------------------------------------------------------------

    def change(self, change: DocumentChange) -> tuple[NewContent, Put]:
        return self.change_all((change,))[0]

    def change_all(
        self, changes: Sequence[DocumentChange]
    ) -> builtins.list[tuple[NewContent, Put]]:
        with self._lock:  # every change is checked before any is made: all or none
            news = [self._new_content(change) for change in changes]
            now = now_ms()
            return [(new, self._put(c, new, now)) for c, new in zip(changes, news, strict=True)]

    def _new_content(self, change: DocumentChange) -> NewContent:
        """The change's new content, and the SQLite store's bound on what one write may
        index (`rules.doc_index_work`) for a bounded one."""
        doc = self._docs.get(change.path)
        number = change.source_revision
        source = None if number is None else self._revision_text(change.path, number)
        new = change.new_content(None if doc is None else doc.stored(), source)
        if change.bounded:
            check_write_work(change.path, None if doc is None else doc.content, new.text)
        return new

    def _put(self, change: DocumentChange, new: NewContent, now: int) -> Put:
        doc = self._docs.get(change.path)
        put = change.put(None if doc is None else doc.stored(), new, now)
        if put.created:
            blocks = self._blocks(new.text, [])
            doc = _Doc(new.text, put.enabled, put.sort_order, 1, now, now, new.size, blocks)
            self._docs[change.path] = doc
        elif doc is not None:
            doc.enabled, doc.sort_order = put.enabled, put.sort_order
            if put.overwritten:
                if put.keep_previous:
                    doc.kept[doc.revision] = (doc.content, doc.size, doc.updated_ms)
                doc.kept = {n: kept for n, kept in doc.kept.items() if n >= put.prune_below}
                doc.blocks = self._blocks(new.text, doc.blocks)
                doc.content, doc.size, doc.revision = new.text, new.size, put.revision
                doc.updated_ms = now
        return put

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

    def delete(self, path: str) -> bool:
        with self._lock:
            return self._docs.pop(path, None) is not None

    def set_enabled(self, path: str, enabled: bool) -> bool:
        with self._lock:
            doc = self._docs.get(path)
            if doc is not None:
                doc.enabled = enabled
            return doc is not None

    def set_sort_order(self, path: str, order: int) -> bool:
        with self._lock:
            doc = self._docs.get(path)
            if doc is not None:
                doc.sort_order = order
            return doc is not None

    # -- reads --------------------------------------------------------------------------

    def read(self, path: str) -> tuple[Any, ...] | None:
        with self._lock:
            d = self._docs.get(path)
            if d is None:
                return None
            return (path, d.content, d.enabled, d.sort_order, d.revision, d.created_ms,
                    d.updated_ms, d.size)  # fmt: skip

    def infos(self, prefix: str) -> builtins.list[tuple[Any, ...]]:
        with self._lock:
            found = sorted(
                (d.sort_order, p, d) for p, d in self._docs.items() if p.startswith(prefix)
            )
            return [
                (p, d.enabled, d.sort_order, d.revision, d.created_ms, d.updated_ms, d.size)
                for _, p, d in found
            ]

    def revision_infos(self, path: str) -> builtins.list[tuple[Any, ...]] | None:
        with self._lock:
            doc = self._docs.get(path)
            if doc is None:
                return None
            return [
                (n, size, updated)
                for n, (_, size, updated) in sorted(doc.kept.items(), reverse=True)
            ]

    def revision_text(self, path: str, revision: int) -> RevisionText | None:
        with self._lock:
            return self._revision_text(path, revision)

    def _revision_text(self, path: str, revision: int) -> RevisionText | None:
        doc = self._docs.get(path)
        if doc is None:
            return None
        if revision == doc.revision:
            return RevisionText(doc.revision, doc.content)
        kept = doc.kept.get(revision)
        return RevisionText(doc.revision, None if kept is None else kept[0])

    def search(self, query: DocumentQuery) -> builtins.list[tuple[Any, ...]]:
        terms = query.terms
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
            return _ranked(rows, terms, query.prefix, query.limit)

    def enabled_contents(self) -> builtins.list[tuple[str, str]]:
        with self._lock:
            found = sorted((d.sort_order, p, d.content) for p, d in self._docs.items() if d.enabled)
        return [(p, content) for _, p, content in found]

    def memory_contents(self, first: str, last: str) -> builtins.list[tuple[str, str]]:
        with self._lock:
            return sorted(
                (p, d.content)
                for p, d in self._docs.items()
                if p == "MEMORY.md" or first <= p <= last
            )

    def all_contents(self) -> builtins.list[tuple[str, str]]:
        with self._lock:
            return sorted((p, d.content) for p, d in self._docs.items())


class InMemoryDocumentStore(DocumentStoreFront):
    """`DocumentStore` held in a dict: the shared front over `InMemoryDocumentPort`; same
    protocol and semantics as `SQLiteDocumentStore`."""

    _port: InMemoryDocumentPort

    def __init__(self, config: StoreConfig | None = None) -> None:
        """`config.tokenizer` and `config.doc_revisions` matter here; the rest concern
        files."""
        if config is not None and not isinstance(config, StoreConfig):
            raise InvalidArgumentError("config must be a StoreConfig")
        super().__init__(InMemoryDocumentPort(config or StoreConfig()))

    # An `InMemoryDB` shares one lock among its stores and saves and puts back their
    # state around an `atomic()` block: both are the port's.

    @property
    def _lock(self) -> threading.RLock:
        return self._port._lock

    @_lock.setter
    def _lock(self, lock: threading.RLock) -> None:
        self._port._lock = lock

    def _snapshot(self) -> object:
        return self._port._snapshot()

    def _restore(self, state: object) -> None:
        self._port._restore(state)


def _ranked(
    rows: builtins.list[tuple[str, _Block]], terms: tuple[Term, ...], prefix: str, limit: int
) -> builtins.list[tuple[Any, ...]]:
    # Every block counts in N, n_t and avgdl (as in FTS5); the prefix only picks rows.
    ranked = scores(
        [[occurrences(b.tokens, t.tokens, b.counts) for t in terms] for _, b in rows],
        [len(b.tokens) for _, b in rows],
        keep=lambda i: rows[i][0].startswith(prefix),
    )
    ranked.sort(key=lambda hit: (-hit[1], rows[hit[0]][0], rows[hit[0]][1].start_line))
    return [
        (rows[i][0], rows[i][1].start_line, rows[i][1].end_line, rows[i][1].text, score)
        for i, score in ranked[:limit]
    ]
