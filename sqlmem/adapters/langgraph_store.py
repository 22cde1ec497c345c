"""`SqlmemStore`, LangGraph's `BaseStore` over sqlmem: see
`sqlmem.adapters.langgraph`, which documents it and is where to import it from."""

from __future__ import annotations

import concurrent.futures
import functools
import json
import logging
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, cast

from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from ..errors import InvalidArgumentError
from ..protocols import Database
from ..rules.encoding import dt_from_ms, dumps_json
from ..search.bm25 import occurrences, scores
from ..search.query import MAX_QUERY_TERMS, compiler_for, rarest_terms, segment, tokens_of
from ._backend import Backend, DbOrPath
from .langgraph_filter import at, compile_filter, matches, single_equality
from .langgraph_index import Prepared, StoreIndex, fuse, rank_by_vectors
from .langgraph_labels import check_op_namespaces
from .ports import KeyValuePort, KVRow, KVSearchPort

__all__ = ["SqlmemStore", "decode_namespace", "encode_namespace"]

_log = logging.getLogger("sqlmem")

#: Every LangGraph row's kv namespace starts with this tag.
TAG = "langgraph:"


def encode_namespace(namespace: tuple[str, ...]) -> str:
    """The kv namespace of a LangGraph namespace: injective, and prefix-preserving."""
    if type(namespace) is tuple:  # the usual case: a program uses a few namespaces again
        try:
            return _encode_tuple(namespace)
        except TypeError:  # unhashable labels: not str, refused below
            pass
    return _encode(namespace)


def _encode(namespace: Any) -> str:
    if not isinstance(namespace, (tuple, list)) or not all(isinstance(x, str) for x in namespace):
        raise InvalidArgumentError(f"namespace must be a tuple of str, got {namespace!r:.80}")
    return TAG + "".join(dumps_json(label) + "," for label in namespace)


#: Encoded namespaces by tuple: JSON-encoding every label cost ~2 us of a ~15 us get.
_encode_tuple = functools.lru_cache(maxsize=1024)(_encode)


def decode_namespace(text: str) -> tuple[str, ...]:
    return _decode_namespace(text)


@functools.lru_cache(maxsize=1024)
def _decode_namespace(text: str) -> tuple[str, ...]:
    """Cached: a search decodes its page's namespaces, mostly one and the same (~1 us
    each); the tuples are immutable, so sharing them is safe."""
    return tuple(_decode("[" + text[len(TAG) : -1] + "]"))


class SqlmemStore(BaseStore):
    """LangGraph's `BaseStore` over a sqlmem database; sync and async on one object.

    `db_or_path`: any sqlmem database or an `AsyncMemoryDB` (shared; `close()` leaves it open) or a
    path (opened here, closed by `close()`).
    """

    supports_ttl = True

    def __init__(
        self,
        db_or_path: DbOrPath,
        *,
        index: Mapping[str, Any] | None = None,
        ttl: Mapping[str, Any] | None = None,
    ) -> None:
        self._index = StoreIndex(index) if index is not None else None
        #: The index config as given (None: no vector search), and its embedder, under
        #: the names LangGraph's stores use.
        self.index_config: dict[str, Any] | None = dict(index) if index is not None else None
        self.embeddings = self._index.embeddings if self._index is not None else None
        self.ttl_config = cast(TTLConfig, dict(ttl)) if ttl is not None else None
        self._default_ttl = _ttl_ms((ttl or {}).get("default_ttl"))
        # As langgraph-checkpoint-sqlite's SqliteStore: reads restart a ttl only when the
        # store's ttl config asks for it, whatever the operation's refresh_ttl says.
        self._refresh_on_read = bool((ttl or {}).get("refresh_on_read", False))
        self._sweeper: threading.Thread | None = None
        self._stop_sweeping = threading.Event()
        self._backend = Backend(db_or_path, "SqlmemStore")

    # Built on first use, on the thread that makes it: a path opens only then (an async
    # call's on the runner's thread), so constructing a store never touches the disk.

    @functools.cached_property
    def _kv(self) -> KeyValuePort:
        return self._backend.storage.kv

    @functools.cached_property
    def _kv_search(self) -> KVSearchPort:
        return self._backend.storage.kv_search

    @functools.cached_property
    def _compiler(self) -> Any:
        return compiler_for(self._backend.tokenizer)

    @property
    def db(self) -> Database:
        return self._backend.db

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        check_op_namespaces(ops)
        prepared = self._index.prepare(ops) if self._index is not None else {}
        return self._batch(ops, prepared)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        check_op_namespaces(ops)
        prepared = await self._index.aprepare(ops) if self._index is not None else {}
        if any(isinstance(op, PutOp) for op in ops):
            return await self._backend.write(self._batch, ops, prepared)
        return await self._backend.run(self._batch, ops, prepared)

    def _batch(self, ops: list[Op], prepared: Prepared) -> list[Result]:
        """The batch, its embeddings already computed (never under the write lock)."""
        if any(isinstance(op, PutOp) for op in ops):
            with self._backend.db.atomic():
                return [self._run(op, prepared.get(i)) for i, op in enumerate(ops)]
        return [self._run(op, prepared.get(i)) for i, op in enumerate(ops)]

    def sweep_ttl(self) -> int:
        """Delete every expired item (of every store in the file's kv table)."""
        return self._sweep()

    def _sweep(self) -> int:
        return self._kv.sweep()

    async def asweep_ttl(self) -> int:
        return await self._backend.write(self._sweep)

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep expired items every `sweep_interval_minutes` (default: the ttl config's,
        else 5) on a daemon thread, until `stop_ttl_sweeper()` or `close()`. Expired
        items are invisible to reads at once; the sweep only frees their rows."""
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        if self.ttl_config is None or (self._sweeper is not None and self._sweeper.is_alive()):
            future.set_result(None)
            return future
        interval = float(
            sweep_interval_minutes or self.ttl_config.get("sweep_interval_minutes") or 5
        )
        self._stop_sweeping.clear()

        def sweep() -> None:
            while not self._stop_sweeping.wait(interval * 60):
                try:
                    self._kv.sweep()
                except Exception:  # housekeeping: the next round tries again
                    _log.exception("sqlmem: LangGraph store ttl sweep failed")
            future.set_result(None)

        self._sweeper = threading.Thread(target=sweep, name="sqlmem-ttl-sweeper", daemon=True)
        self._sweeper.start()
        return future

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; True once it has stopped (or none was running)."""
        return self._stop_sweeper_thread(timeout)

    def _stop_sweeper_thread(self, timeout: float | None) -> bool:
        if self._sweeper is None:
            return True
        self._stop_sweeping.set()
        self._sweeper.join(timeout)
        if self._sweeper.is_alive():
            return False
        self._sweeper = None
        return True

    def close(self) -> None:
        """Stops the sweeper, waits for async calls in flight; closes the database if
        this store opened it."""
        self._stop_sweeper_thread(None)
        self._backend.close()

    # -- one operation ----------------------------------------------------------------------

    def _run(self, op: Op, prepared: Any) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, PutOp):
            self._put(op, prepared or ())
            return None
        if isinstance(op, SearchOp):
            return self._search(op, prepared)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise InvalidArgumentError(f"unknown store operation {type(op).__name__}")

    def _get(self, op: GetOp) -> Item | None:
        ns = encode_namespace(op.namespace)
        row = self._kv.row(ns, _key(op.key))
        if row is None:
            return None
        if op.refresh_ttl and self._refresh_on_read:
            self._kv.refresh(ns, [op.key])
        return _item(row, op.namespace)

    def _put(self, op: PutOp, vectors: Any) -> None:
        ns = encode_namespace(op.namespace)
        key = _key(op.key)
        if op.value is None:
            self._kv.delete_many(ns, [key])
            return
        if not isinstance(op.value, dict):
            raise InvalidArgumentError(f"value must be a dict, not {type(op.value).__name__}")
        try:
            data = dumps_json(op.value).encode("utf-8")
        except (TypeError, ValueError, RecursionError, UnicodeEncodeError) as exc:
            raise InvalidArgumentError(f"value must be a JSON object: {exc}") from None
        given: Any = op.ttl  # NOT_PROVIDED (not in its type): the store's default
        ttl = self._default_ttl if given is NOT_PROVIDED else _ttl_ms(given)
        self._kv.set_many(ns, [(key, data)], ttl_ms=ttl)  # drops the old vectors
        self._kv_search.put_vectors(ns, key, vectors)

    def _search(self, op: SearchOp, query_vector: Any) -> list[SearchItem]:
        """Filters run before any ranking or paging: in SQL as far as they compile
        (`langgraph_filter`), the rest in Python. Without a query, and with a filter SQL
        says whole, SQL pages too. Values are decoded only where Python needs them (the
        rest of the filter, BM25's texts, the page)."""
        sql_filter, rest = compile_filter(op.filter)
        prefix = encode_namespace(op.namespace_prefix)
        index = self._index if op.query else None
        lexical = op.query and (index is None or index.hybrid)
        terms = self._compiler.terms(op.query) if lexical and op.query else ()
        vectors: list[tuple[str, str, bytes]] = []
        if index is not None:
            found, vectors = self._kv_search.scan(prefix, sql_filter, index.dims)
        elif terms:  # BM25: every item under the prefix makes the statistics
            found, rest = self._kv.scan(prefix), dict(op.filter or {})
        elif not rest:
            simple = single_equality(op.filter)
            if simple is not None:
                found = self._kv_search.page_equal(prefix, *simple, op.limit, op.offset)
            else:
                found = self._kv_search.page(prefix, sql_filter, op.limit, op.offset)
            return self._page(op, found, None, [(i, None) for i in range(len(found))])
        else:
            found = self._kv_search.page(prefix, sql_filter, -1, 0)
        values = [_value(row[2]) for row in found] if rest or terms else None
        wanted = list(range(len(found)))
        if rest and values is not None:
            wanted = [
                i for i in wanted if all(matches(at(values[i], k), v) for k, v in rest.items())
            ]
        ranked: list[tuple[int, float | None]] = [(i, None) for i in wanted]
        if index is not None:
            keys = [(found[i][0], found[i][1]) for i in wanted]
            semantic = rank_by_vectors(query_vector, keys, vectors, index.dims)
            ranked = [(wanted[j], score) for j, score in semantic]
            if index.hybrid and terms and values is not None:
                bm25 = [i for i, _ in self._rank(terms, values, set(wanted))]
                ranked = fuse(bm25, ranked, op.offset + op.limit)
        elif terms and values is not None:
            ranked = [(i, score) for i, score in self._rank(terms, values, set(wanted))]
        return self._page(op, found, values, ranked[op.offset : op.offset + op.limit])

    def _page(
        self,
        op: SearchOp,
        found: list[KVRow],
        values: list[Any] | None,
        page: list[tuple[int, float | None]],
    ) -> list[SearchItem]:
        if op.refresh_ttl and self._refresh_on_read:
            for ns, key in {(found[i][0], found[i][1]) for i, _ in page}:
                self._kv.refresh(ns, [key])
        return [
            _search_item(found[i], _value(found[i][2]) if values is None else values[i], score)
            for i, score in page
        ]

    def _rank(
        self, terms: tuple[Any, ...], values: list[Any], wanted: set[int]
    ) -> list[tuple[int, float]]:
        """FTS5's BM25 of the query over the text of every item under the prefix (its
        string values), best first; the items under the prefix make the statistics, the
        filter only picks (as a filtered FTS5 search). Brute force: no index yet."""
        docs = []
        for value in values:
            text = _text(value)
            docs.append(self._compiler.tokens(segment(text) or text))
        if len(terms) > MAX_QUERY_TERMS:  # the rarest, as sqlmem's stores keep them
            counts: Counter[str] = Counter()
            every = tokens_of(terms)
            for doc in docs:
                counts.update(every.intersection(doc))
            terms = rarest_terms(terms, counts, "any")
        freqs = [[occurrences(doc, t.tokens) for t in terms] for doc in docs]
        found = scores(freqs, [len(d) for d in docs], keep=wanted.__contains__)
        found.sort(key=lambda hit: -hit[1])  # stable: ties newest first
        return found

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found: set[tuple[str, ...]] = set()
        for text in self._kv.namespaces(TAG):
            ns = decode_namespace(text)
            if all(_does_match(c, ns) for c in op.match_conditions or ()):
                found.add(ns[: op.max_depth] if op.max_depth is not None else ns)
        return sorted(found)[op.offset : op.offset + op.limit]


# -- helpers --------------------------------------------------------------------------------------


def _key(key: Any) -> str:
    if not isinstance(key, str):
        raise InvalidArgumentError(f"key must be a str, not {type(key).__name__}")
    return key


def _ttl_ms(minutes: Any) -> int | None:
    if minutes is None:
        return None
    if isinstance(minutes, bool) or not isinstance(minutes, (int, float)) or not minutes > 0:
        raise InvalidArgumentError(f"ttl must be a positive number of minutes, got {minutes!r}")
    return max(1, round(minutes * 60_000))


#: Values are compact UTF-8 JSON we wrote: decoded as such (`raw_decode`), without
#: `json.loads`' sniffing of the bytes' encoding and its whitespace scans (half its cost
#: on a small value); anything else goes through the full decoder, and its checks.
_decoder = json.JSONDecoder()
_decode = _decoder.decode
_raw_decode = _decoder.raw_decode


def _value(data: bytes) -> Any:
    text = data.decode("utf-8")
    try:
        value, end = _raw_decode(text)
    except ValueError:
        return _decode(text)
    return value if end == len(text) else _decode(text)


def _times(row: KVRow) -> tuple[datetime, datetime]:
    return dt_from_ms(row[3]), dt_from_ms(row[4])


def _item(row: KVRow, namespace: tuple[str, ...]) -> Item:
    created, updated = _times(row)
    return Item(
        value=_value(row[2]),
        key=row[1],
        namespace=namespace,
        created_at=created,
        updated_at=updated,
    )


def _search_item(row: KVRow, value: dict[str, Any], score: float | None) -> SearchItem:
    created, updated = _times(row)
    return SearchItem(
        namespace=decode_namespace(row[0]),
        key=row[1],
        value=value,
        created_at=created,
        updated_at=updated,
        score=score,
    )


def _text(value: Any) -> str:
    """The searchable text of a value: its string leaves, in order, one per line."""
    found: list[str] = []
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            found.append(node)
        elif isinstance(node, dict):
            stack.extend(list(node.values())[::-1])
        elif isinstance(node, list):
            stack.extend(node[::-1])
    return "\n".join(found)


def _does_match(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    return all(p == "*" or k == p for k, p in pairs)
