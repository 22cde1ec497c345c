"""sqlmem behind LangGraph: `SqlmemStore`, a `BaseStore` in the agent's memory file,
with LangGraph's vector search (`index`).

    from sqlmem.adapters.langgraph import SqlmemStore
    store = SqlmemStore("memory.db")        # instead of SqliteStore / InMemoryStore
    store = SqlmemStore("memory.db", index={"dims": 256, "embed": embed, "fields": ["text"]})
    graph = builder.compile(store=store)

Storage: the file's key-value table (`sqlmem.sqlite.frameworks.kv`, migration kv). An item is one
row: its namespace tuple encoded into the row's namespace (tagged `langgraph:`, then each
label as a JSON string followed by a comma), its key the row's key, its value compact
JSON. The encoding is injective and keeps prefixes: a namespace prefix is a string prefix
of the encoding exactly when it is a tuple prefix, so namespaces (`/`, quotes, unicode,
a thousand labels) never collide, and a search under a prefix is one range of the primary
key. Labels follow LangGraph's rules all the same: a label that is empty, not a string, or
holds `.` or NUL is refused with LangGraph's `InvalidNamespaceError`, for ops handed
straight to `batch` too, so a program moves between LangGraph's stores and this one
unchanged. Vectors: one row per embedded field in kv_vectors
(`sqlmem.sqlite.frameworks.kv_search`), gone with their item.

Operations: `batch`/`abatch` run `GetOp`, `PutOp` (a None value deletes), `SearchOp`
(namespace prefix, `filter`: see `langgraph_filter`, `limit`/`offset`) and
`ListNamespacesOp` (prefix and suffix conditions with `*` wildcards, `max_depth`,
`limit`, `offset`) in order; a batch holding a put is one transaction (all or nothing, and
its reads see its own writes). The batch's texts are embedded first, in one call, before
that transaction (`langgraph_index`). TTL: `ttl={"default_ttl": minutes,
"refresh_on_read": bool, "omit_expired": bool}` or a put's own `ttl`; with the config's
`refresh_on_read`, reads restart it (as SqliteStore); `start_ttl_sweeper()` runs a
sweeper (a thread; a task of the loop for `AsyncSqlmemStore`); expired items are
invisible at once (what
`omit_expired` asks for; it holds when False too) and `sweep_ttl()` deletes them and
their vectors. Values JSON cannot hold (NaN, bytes) are refused with
`InvalidArgumentError`.

Search, filters first (in SQL as far as they compile, the rest in Python), then:
- no query: newest write first (paged in SQL when the filter compiled whole);
- a query, no `index`: FTS5's BM25 (sqlmem's tokenizer and scores, `sqlmem.search`) over
  the string values of the items under the prefix, which make the statistics;
- a query and an `index`: each item's best field cosine with the query (`score`, as
  LangGraph's stores report it), exact (numpy over the filtered items' vectors); items
  without a vector (`index=False`, no indexed field, a failed embedder) follow, unscored;
- a query and `index={..., "hybrid": True}` (sqlmem's key): reciprocal rank fusion of
  the BM25 and vector rankings (k = 10, as in fact search; `score` the fused value). Not
  the default: LangGraph's tests and users read `score` as the cosine. BM25's statistics are then
  those of the filtered items.

Not yet: the BM25 of a query without an index is computed in Python over every item under
the prefix (no FTS5 index on the kv table: linear in those items); LangGraph's
`distance_type` other than "cosine" is refused.
"""

from __future__ import annotations

from ..extras import needs_extra

with needs_extra("langgraph", __name__):
    from .langgraph_async import AsyncSqlmemStore, SyncCallInEventLoopError
    from .langgraph_saver import AsyncSqlmemSaver, SqlmemSaver
    from .langgraph_store import SqlmemStore, decode_namespace, encode_namespace

__all__ = [
    "AsyncSqlmemSaver",
    "AsyncSqlmemStore",
    "SqlmemSaver",
    "SqlmemStore",
    "SyncCallInEventLoopError",
    "decode_namespace",
    "encode_namespace",
]
