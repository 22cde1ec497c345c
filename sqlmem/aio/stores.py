"""The async stores: each method of the sync protocol, awaited.

Every method is the protocol's own, run off the event loop by `runner.off_loop`, so names,
arguments, results and errors are exactly the sync ones. `len(store)` has no async form:
use `await facts.count()`. Methods marked `write=True` take the write lock and run on the
runner's write threads, so reads never queue behind writes waiting for the lock; slow
methods (compaction, embedding, folder import) stay on the general threads.
"""

from __future__ import annotations

from typing import Any

from ..protocols import ArchiveBoundary, DocumentStore, FactStore, HistoryStore
from .runner import Runner, off_loop

__all__ = ["AsyncDocumentStore", "AsyncFactStore", "AsyncHistoryStore", "AsyncStore"]


class AsyncStore:
    def __init__(self, store: Any, runner: Runner) -> None:
        self._store = store
        self._runner = runner

    @property
    def sync(self) -> Any:
        """The sync store behind this one (same file, same engine)."""
        return self._store

    def __repr__(self) -> str:
        return f"<{type(self).__name__} over {self._store!r}>"


class AsyncHistoryStore(AsyncStore):
    """`HistoryStore`, awaited."""

    append = off_loop(HistoryStore.append, write=True)
    append_many = off_loop(HistoryStore.append_many, write=True)
    get_recent = off_loop(HistoryStore.get_recent)
    pop = off_loop(HistoryStore.pop, write=True)
    around = off_loop(HistoryStore.around)
    get_all = off_loop(HistoryStore.get_all)
    count = off_loop(HistoryStore.count)
    archived_seq = off_loop(ArchiveBoundary.archived_seq)
    set_summary = off_loop(HistoryStore.set_summary, write=True)
    get_summary = off_loop(HistoryStore.get_summary)
    compact = off_loop(HistoryStore.compact)
    purge = off_loop(HistoryStore.purge, write=True)
    sessions = off_loop(HistoryStore.sessions)
    search = off_loop(HistoryStore.search)
    embed_pending = off_loop(HistoryStore.embed_pending)


class AsyncFactStore(AsyncStore):
    """`FactStore`, awaited."""

    index = off_loop(FactStore.index, write=True)
    index_many = off_loop(FactStore.index_many, write=True)
    get = off_loop(FactStore.get)
    delete = off_loop(FactStore.delete, write=True)
    delete_many = off_loop(FactStore.delete_many, write=True)
    count = off_loop(FactStore.count)
    search = off_loop(FactStore.search)
    search_by_metadata = off_loop(FactStore.search_by_metadata)
    list = off_loop(FactStore.list)
    tags = off_loop(FactStore.tags)
    categories = off_loop(FactStore.categories)
    remember = off_loop(FactStore.remember, write=True)
    supersede = off_loop(FactStore.supersede, write=True)
    history = off_loop(FactStore.history)
    promote = off_loop(FactStore.promote, write=True)
    promote_eligible = off_loop(FactStore.promote_eligible, write=True)
    expire = off_loop(FactStore.expire, write=True)
    embed_pending = off_loop(FactStore.embed_pending)


class AsyncDocumentStore(AsyncStore):
    """`DocumentStore`, awaited."""

    write = off_loop(DocumentStore.write, write=True)
    read = off_loop(DocumentStore.read)
    edit = off_loop(DocumentStore.edit, write=True)
    append = off_loop(DocumentStore.append, write=True)
    append_daily = off_loop(DocumentStore.append_daily, write=True)
    delete = off_loop(DocumentStore.delete, write=True)
    list = off_loop(DocumentStore.list)
    set_enabled = off_loop(DocumentStore.set_enabled, write=True)
    set_sort_order = off_loop(DocumentStore.set_sort_order, write=True)
    revisions = off_loop(DocumentStore.revisions)
    read_revision = off_loop(DocumentStore.read_revision)
    restore = off_loop(DocumentStore.restore, write=True)
    search = off_loop(DocumentStore.search)
    render_files = off_loop(DocumentStore.render_files)
    render_memory_context = off_loop(DocumentStore.render_memory_context)
    export_dir = off_loop(DocumentStore.export_dir)
    import_dir = off_loop(DocumentStore.import_dir)
