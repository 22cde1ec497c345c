"""`SqlmemStore`, LangGraph's `BaseStore` over sqlmem's kv table.

Written from the behaviour langgraph-checkpoint-sqlite's tests/test_store.py and
test_ttl.py check (get, put, delete, search with filters, list_namespaces, TTL), plus
sqlmem's: namespaces of any labels LangGraph allows never collide, a batch with a put is
all or nothing, values JSON cannot hold are refused.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("langgraph.store.base")

from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

import sqlmem
from sqlmem.adapters.langgraph import (
    SqlmemStore,
    decode_namespace,
    encode_namespace,
)

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


@pytest.fixture
def store(db: sqlmem.MemoryDB) -> Iterator[SqlmemStore]:
    s = SqlmemStore(db)
    yield s
    s.close()


def _expire(db: sqlmem.MemoryDB, key: str) -> None:
    """Let a ttl lapse without waiting for the clock."""
    with db.engine.write() as conn:
        conn.execute("UPDATE kv SET expires_at = 1 WHERE key = ?", (key,))


def test_put_get_delete(store: SqlmemStore) -> None:
    value = {"text": "hello", "n": 2**70, "nested": {"a": [1, 2.5, None, True]}, "u": "晴れ"}
    store.put(("users", "u1"), "prefs", value)
    item = store.get(("users", "u1"), "prefs")
    assert isinstance(item, Item)
    assert (item.namespace, item.key, item.value) == (("users", "u1"), "prefs", value)
    assert item.created_at == item.updated_at and item.created_at.tzinfo is not None
    store.put(("users", "u1"), "prefs", {"text": "changed"})
    again = store.get(("users", "u1"), "prefs")
    assert again is not None and again.value == {"text": "changed"}
    assert again.created_at == item.created_at and again.updated_at >= item.updated_at
    store.delete(("users", "u1"), "prefs")
    assert store.get(("users", "u1"), "prefs") is None
    assert store.get(("users",), "prefs") is None


_ns = itertools.count()
LABELS = st.lists(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=4)
    | st.sampled_from(["", ".", "/", ",", '"', "\\", "a.b", "*"]),
    min_size=1,
    max_size=4,
).map(tuple)


#: The labels LangGraph accepts: any non-empty strings without '.' or NUL.
VALID_LABELS = st.lists(
    st.text(alphabet=st.characters(codec="utf-8", exclude_characters=".\x00"), min_size=1)
    | st.sampled_from(["/", ",", '"', "\\", "a,b", "*"]),
    min_size=1,
    max_size=4,
).map(tuple)


@settings(max_examples=40)
@given(
    entries=st.dictionaries(
        st.tuples(VALID_LABELS, st.text(max_size=3)), st.integers(), min_size=1, max_size=8
    ),
    prefix=VALID_LABELS,
)
def test_namespaces_of_any_valid_labels_never_collide(
    store: SqlmemStore, entries: dict[tuple[tuple[str, ...], str], int], prefix: tuple[str, ...]
) -> None:
    """Through `batch`: labels with separators, quotes and backslashes stay apart."""
    root = (f"t{next(_ns)}",)
    store.batch([PutOp(root + ns, key, {"n": n}) for (ns, key), n in entries.items()])
    gets = store.batch([GetOp(root + ns, key) for ns, key in entries])
    for ((ns, _), n), item in zip(entries.items(), gets, strict=True):
        assert isinstance(item, Item) and item.value == {"n": n} and item.namespace == root + ns
    (hits,) = store.batch([SearchOp(root + prefix, limit=100)])
    found = {(i.namespace, i.key) for i in hits}  # type: ignore[union-attr]
    assert found == {(root + ns, k) for ns, k in entries if ns[: len(prefix)] == prefix}
    (listed,) = store.batch([ListNamespacesOp(limit=1000)])
    assert {ns for ns in listed if ns[:1] == root} == {root + ns for ns, _ in entries}  # type: ignore[union-attr]


@pytest.mark.parametrize("bad", [("foo.bar",), ("foo", ""), ("foo", 1), ("a\x00b",)])
@pytest.mark.parametrize("kind", ["get", "put", "delete", "search", "list_prefix", "list_suffix"])
def test_batch_refuses_labels_langgraph_refuses(
    store: SqlmemStore, bad: tuple[Any, ...], kind: str
) -> None:
    """Regression: `batch` ran ops with any labels, while LangGraph's stores refuse a
    label that is empty, not a string, or holds '.' or NUL (their suite checks every op
    kind). The whole batch is refused before anything is written."""
    op = {
        "get": GetOp(bad, "key"),
        "put": PutOp(bad, "key", {"changed": True}),
        "delete": PutOp(bad, "key", None),
        "search": SearchOp(bad),
        "list_prefix": ListNamespacesOp((MatchCondition("prefix", bad),)),
        "list_suffix": ListNamespacesOp((MatchCondition("suffix", bad),)),
    }[kind]
    store.put(("foo", "bar"), "key", {"original": True})
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("valid",), "key", {}), op])
    with pytest.raises(InvalidNamespaceError):
        run(store.abatch([PutOp(("valid",), "key", {}), op]))
    assert store.get(("foo", "bar"), "key").value == {"original": True}  # type: ignore[union-attr]
    assert store.get(("valid",), "key") is None


def test_wildcards_and_empty_prefixes_stay_allowed(store: SqlmemStore) -> None:
    store.put(("foo", "bar"), "key", {"v": 1})
    found, listed = store.batch(
        [SearchOp(()), ListNamespacesOp((MatchCondition("prefix", ("foo", "*")),))]
    )
    assert [i.namespace for i in found] == [("foo", "bar")]  # type: ignore[union-attr]
    assert listed == [("foo", "bar")]


@given(a=LABELS, b=LABELS)
def test_encoding_is_injective_and_keeps_prefixes(a: tuple[str, ...], b: tuple[str, ...]) -> None:
    ea, eb = encode_namespace(a), encode_namespace(b)
    assert (ea == eb) == (a == b)
    assert eb.startswith(ea) == (b[: len(a)] == a)
    assert decode_namespace(ea) == a


def test_thousand_labels(store: SqlmemStore) -> None:
    ns = tuple(f"l{i}" for i in range(1000))
    store.put(ns, "k", {"deep": True})
    assert store.get(ns, "k").value == {"deep": True}  # type: ignore[union-attr]
    assert [i.key for i in store.search(ns[:500])] == ["k"]


def test_search_filters_order_and_pages(store: SqlmemStore) -> None:
    docs = {
        "a": {"kind": "note", "score": 5, "user": {"level": "admin", "access-level": "x"}},
        "b": {"kind": "note", "score": 9, "tags": ["x", "y"]},
        "c": {"kind": "todo", "score": 1.5, "user": {"level": "guest"}},
        "d": {"kind": "note", "score": "high"},
    }
    for key, value in docs.items():
        store.put(("docs",), key, value)
    store.put(("other",), "z", {"kind": "note"})

    def keys(**kwargs: Any) -> list[str]:
        return [i.key for i in store.search(("docs",), limit=10, **kwargs)]

    assert keys() == ["d", "c", "b", "a"]  # newest first
    assert keys(filter={"kind": "note"}) == ["d", "b", "a"]
    assert keys(filter={"score": {"$gt": 4}}) == ["b", "a"]  # "high" is not a number
    assert keys(filter={"score": {"$gte": 1.5, "$lt": 9}}) == ["c", "a"]
    assert keys(filter={"score": {"$lte": 5}, "kind": {"$ne": "todo"}}) == ["a"]
    assert keys(filter={"kind": {"$eq": "todo"}}) == ["c"]
    assert keys(filter={"user": {"level": "admin"}}) == ["a"]
    assert keys(filter={"user.level": "guest"}) == ["c"]
    assert keys(filter={"user.access-level": "x"}) == ["a"]
    assert keys(filter={"tags": ["x", "y"]}) == ["b"]
    assert keys(filter={"missing": None}) == ["d", "c", "b", "a"]
    # As LangGraph's stores: a key no JSON path holds is refused (was: matched nothing).
    with pytest.raises(sqlmem.InvalidArgumentError, match="Invalid filter key"):
        keys(filter={"it's'; DROP TABLE kv; --": 1})
    assert [i.key for i in store.search(("docs",), limit=2, offset=1)] == ["c", "b"]
    assert next(i.key for i in store.search((), limit=10)) == "z"
    with pytest.raises(sqlmem.InvalidArgumentError):
        keys(filter={"score": {"$regex": "x"}})


def test_list_namespaces(store: SqlmemStore) -> None:
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("q", "b", "c"), ("a",)]:
        store.put(ns, "k", {})
    assert store.list_namespaces() == [
        ("a",), ("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("q", "b", "c")
    ]  # fmt: skip
    assert store.list_namespaces(prefix=("a", "b")) == [("a", "b", "c"), ("a", "b", "d")]
    assert store.list_namespaces(suffix=("c",)) == [("a", "b", "c"), ("q", "b", "c")]
    assert store.list_namespaces(prefix=("*", "b")) == [
        ("a", "b", "c"), ("a", "b", "d"), ("q", "b", "c")
    ]  # fmt: skip
    assert store.list_namespaces(max_depth=2) == [("a",), ("a", "b"), ("a", "x"), ("q", "b")]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "c"), ("a", "b", "d")]
    assert store.list_namespaces(prefix=("ab",)) == []  # labels, not characters


def test_batch_with_a_put_is_all_or_nothing(store: SqlmemStore) -> None:
    store.put(("n",), "kept", {"v": 1})
    with pytest.raises(sqlmem.InvalidArgumentError):
        store.batch(
            [
                PutOp(("n",), "new", {"v": 2}),
                PutOp(("n",), "kept", None),
                PutOp(("n",), "bad", {"v": float("nan")}),
            ]
        )
    assert store.get(("n",), "new") is None
    assert store.get(("n",), "kept") is not None
    # reads in a batch see the batch's own earlier writes
    results = store.batch([PutOp(("n",), "x", {"v": 3}), GetOp(("n",), "x"), SearchOp(("n",))])
    assert results[0] is None and results[1].value == {"v": 3}  # type: ignore[union-attr]
    assert {i.key for i in results[2]} == {"kept", "x"}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "bad",
    [{"v": float("nan")}, {"v": float("inf")}, {"v": b"bytes"}, {"v": object()}, ["list"]],
    ids=["nan", "inf", "bytes", "object", "not-a-dict"],
)
def test_values_json_cannot_hold_are_refused(store: SqlmemStore, bad: Any) -> None:
    with pytest.raises(sqlmem.InvalidArgumentError):
        store.batch([PutOp(("n",), "k", bad)])
    assert store.get(("n",), "k") is None


def test_ttl_default_override_refresh_and_sweep(db: sqlmem.MemoryDB) -> None:
    store = SqlmemStore(db, ttl={"default_ttl": 10, "refresh_on_read": True})
    store.put(("t",), "default", {"v": 1})
    store.put(("t",), "short", {"v": 2}, ttl=0.5)
    store.put(("t",), "none", {"v": 3}, ttl=None)
    with db.engine.read() as conn:
        ttl = dict(conn.execute("SELECT key, ttl_ms FROM kv").fetchall())
    assert ttl == {"default": 600_000, "short": 30_000, "none": None}
    _expire(db, "short")
    assert store.get(("t",), "short") is None
    assert [i.key for i in store.search(("t",))] == ["none", "default"]
    with db.engine.write() as conn:
        conn.execute("UPDATE kv SET expires_at = expires_at - 500000 WHERE key = 'default'")
    store.get(("t",), "default")  # refresh_on_read restarts its ttl
    with db.engine.read() as conn:
        (left,) = conn.execute(
            "SELECT expires_at - updated_at FROM kv WHERE key = 'default'"
        ).fetchall()[0]
    assert left > 500_000
    assert store.sweep_ttl() == 1
    assert store.start_ttl_sweeper().done() is False
    assert store.stop_ttl_sweeper(timeout=10)
    store.close()
    with pytest.raises(sqlmem.InvalidArgumentError):
        SqlmemStore(db, ttl={"default_ttl": -1})


@pytest.mark.parametrize("omit", [True, False])
def test_omit_expired_config_hides_expired_items_before_the_sweep(
    db: sqlmem.MemoryDB, omit: bool
) -> None:
    """langgraph-checkpoint 4.2's `TTLConfig.omit_expired`: with it, expired items are
    not returned by get, search or namespace listings before a sweep deletes them.
    sqlmem reads never see an expired item, so the option holds when False too."""
    store = SqlmemStore(db, ttl={"default_ttl": 10, "omit_expired": omit})
    assert store.ttl_config is not None and store.ttl_config["omit_expired"] is omit
    store.put(("gone",), "a", {"v": 1})
    store.put(("kept",), "b", {"v": 2}, ttl=None)
    assert store.list_namespaces() == [("gone",), ("kept",)]
    _expire(db, "a")
    with db.engine.read() as conn:
        assert conn.execute("SELECT count(*) FROM kv").fetchall()[0][0] == 2  # not swept
    assert store.get(("gone",), "a") is None
    assert [i.namespace for i in store.search(())] == [("kept",)]
    assert store.list_namespaces() == [("kept",)]
    assert run(store.aget(("gone",), "a")) is None
    assert run(store.alist_namespaces()) == [("kept",)]
    store.close()


def test_no_refresh_unless_configured(db: sqlmem.MemoryDB) -> None:
    """As SqliteStore: reads refresh only with the config's refresh_on_read."""
    store = SqlmemStore(db, ttl={"default_ttl": 10})
    store.put(("t",), "k", {"v": 1})
    with db.engine.write() as conn:
        conn.execute("UPDATE kv SET expires_at = expires_at - 500000")
    store.get(("t",), "k")
    with db.engine.read() as conn:
        (left,) = conn.execute("SELECT expires_at - updated_at FROM kv").fetchall()[0]
    assert left == 100_000
    store.close()


def test_async_methods_and_ownership(tmp_path: Path) -> None:
    store = SqlmemStore(tmp_path / "memory.db")

    async def main() -> None:
        await asyncio.gather(*(store.aput(("a",), f"k{i}", {"i": i}) for i in range(50)))
        item = await store.aget(("a",), "k7")
        assert item is not None and item.value == {"i": 7}
        found = await store.asearch(("a",), filter={"i": {"$lt": 5}}, limit=50)
        assert sorted(i.key for i in found) == [f"k{i}" for i in range(5)]
        assert await store.alist_namespaces() == [("a",)]
        await store.adelete(("a",), "k7")
        assert await store.aget(("a",), "k7") is None

    asyncio.run(main())
    store.close()
    assert store.db.closed


@pytest.mark.parametrize(
    "index",
    [
        {"dims": 0, "embed": lambda texts: [[1.0] for _ in texts]},
        {"dims": True, "embed": lambda texts: [[1.0] for _ in texts]},
        {"dims": 3},
        {"dims": 3, "embed": lambda texts: [[1.0] * 3 for _ in texts], "fields": [1]},
        {"dims": 3, "embed": 42},
        {"dims": 3, "embed": "no-such-provider:model"},
        ["dims", 3],
        {"dims": 3, "embed": lambda texts: [[1.0] * 3 for _ in texts], "distance_type": "l2"},
    ],
)
def test_a_malformed_index_config_is_refused(db: sqlmem.MemoryDB, index: Any) -> None:
    with pytest.raises(sqlmem.InvalidArgumentError, match="index"):
        SqlmemStore(db, index=index)


DOCS = {
    "d1": {"text": "the quick brown fox jumps", "kind": "a"},
    "d2": {"text": "a lazy dog sleeps all day", "kind": "b"},
    "d3": {"title": "foxes", "body": {"parts": ["fox dens", "a fox and a dog"]}, "kind": "a"},
    "d4": {"text": "nothing to see here", "n": 5},
    "d5": {"text": "東京の天気は晴れ", "kind": "a"},
}


def _fts5_scores(query: str, texts: dict[str, str]) -> dict[str, float]:
    """The reference: SQLite's own FTS5 BM25 over the same texts and tokenizer."""
    import apsw

    from sqlmem.config import StoreConfig
    from sqlmem.search.query import compiler_for, segment

    conn = apsw.Connection(":memory:")
    tokenizer = StoreConfig().tokenizer
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(k UNINDEXED, body, tokenize='{tokenizer}')")
    for k, text in texts.items():
        conn.execute("INSERT INTO t VALUES (?, ?)", (k, segment(text) or text))
    match = compiler_for(StoreConfig().tokenizer).match(query, "any")
    rows = conn.execute("SELECT k, -bm25(t) FROM t WHERE t MATCH ?", (match,)).fetchall()
    return dict(rows)  # type: ignore[arg-type]


@pytest.mark.parametrize("query", ["fox", "dog fox", "lazy sleeping dogs", "天気", "fox zzz"])
def test_query_ranks_by_fts5_bm25(store: SqlmemStore, query: str) -> None:
    from sqlmem.adapters.langgraph_store import _text

    for key, value in DOCS.items():
        store.put(("docs",), key, value)
    store.put(("elsewhere",), "x", {"text": "fox fox fox"})  # outside the prefix: not counted
    hits = store.search(("docs",), query=query, limit=10)
    expected = _fts5_scores(query, {k: _text(v) for k, v in DOCS.items()})
    assert {h.key: h.score for h in hits} == pytest.approx(expected)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)  # type: ignore[arg-type, type-var]


def test_query_with_filter_offset_and_no_words(store: SqlmemStore) -> None:
    for key, value in DOCS.items():
        store.put(("docs",), key, value)
    hits = store.search(("docs",), query="fox dog", filter={"kind": "a"}, limit=10)
    assert {h.key for h in hits} == {"d1", "d3"}
    assert hits[0].key == "d3"  # two foxes and a dog
    every = store.search(("docs",), query="fox dog", limit=10)
    assert [h.key for h in store.search(("docs",), query="fox dog", limit=2, offset=1)] == [
        h.key for h in every[1:3]
    ]
    plain = store.search(("docs",), query="?!", limit=10)  # no words: filters only
    assert len(plain) == 5 and all(h.score is None for h in plain)


def test_other_kv_users_cannot_reach_the_store(store: SqlmemStore, db: sqlmem.MemoryDB) -> None:
    from sqlmem.adapters.langchain import SqlmemByteStore

    store.put(("default",), "k", {"v": 1})
    bytes_store = SqlmemByteStore(db)  # namespace "default"
    assert bytes_store.mget(["k"]) == [None]
    bytes_store.mset([("k", b"x")])
    assert store.get(("default",), "k").value == {"v": 1}  # type: ignore[union-attr]
    assert store.list_namespaces() == [("default",)]


def test_async_store_refuses_sync_calls_inside_its_loop(tmp_path: Path) -> None:
    """As LangGraph's AsyncSqliteStore: inside a running loop only the a-methods work; a
    sync call from another thread is answered."""
    import concurrent.futures

    from sqlmem.adapters.langgraph import AsyncSqlmemStore, SyncCallInEventLoopError

    store = AsyncSqlmemStore(tmp_path / "memory.db")

    async def main() -> None:
        for call in (
            lambda: store.put(("a",), "k", {"v": 1}),
            lambda: store.get(("a",), "k"),
            lambda: store.search(("a",)),
            lambda: store.list_namespaces(),
            lambda: store.delete(("a",), "k"),
        ):
            with pytest.raises(asyncio.InvalidStateError):
                call()
        with pytest.raises(sqlmem.SqlmemError):
            store.batch([GetOp(("a",), "k")])
        await store.aput(("a",), "k", {"v": 1})
        with concurrent.futures.ThreadPoolExecutor(1) as pool:  # another thread: answered
            item = await asyncio.wrap_future(pool.submit(store.get, ("a",), "k"))
        assert item is not None and item.value == {"v": 1}
        assert [i.key for i in await store.asearch(("a",))] == ["k"]

    asyncio.run(main())
    assert store.get(("a",), "k") is not None  # no loop here: answered
    assert issubclass(SyncCallInEventLoopError, sqlmem.SqlmemError)
    store.close()


# -- filters run in SQL as far as they compile; the meaning stays Python's ---------------------

# Small pools, so that stored values and filter arguments meet often (equal, ordered,
# of another type, past 2**53).
_SCALARS = st.sampled_from(
    [None, True, False, 0, 1, 2, 1.0, 1.5, 2**53 + 1, 2**70, "", "a", "b", "é", "1"]
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=2),
        st.dictionaries(st.sampled_from(["b", "c"]), inner, max_size=2),
    ),
    max_leaves=4,
)
_KEYS = st.sampled_from(["a", "b", "a.b", "a.b.c", "zz"])
_WANTS = st.one_of(
    _SCALARS,
    _VALUES,
    st.dictionaries(
        st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]),
        _SCALARS,
        min_size=1,
        max_size=2,
    ),
)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.dictionaries(_KEYS, _VALUES, max_size=4), min_size=1, max_size=8),
    st.dictionaries(_KEYS, _WANTS, max_size=2),
    st.integers(0, 3),
    st.integers(1, 5),
)
def test_filters_in_sql_mean_what_they_mean_in_python(
    tmp_path_factory: pytest.TempPathFactory,
    values: list[dict[str, Any]],
    conditions: dict[str, Any],
    offset: int,
    limit: int,
) -> None:
    """The SQL conditions (scalar equality and operators) and the Python predicate (the
    reference: LangGraph's stores' meaning) pick the same items, in the same order."""
    from sqlmem.adapters.langgraph_filter import at, matches

    with sqlmem.open(tmp_path_factory.mktemp("filters") / "memory.db") as db:
        store = SqlmemStore(db)
        for i, value in enumerate(values):
            store.put(("f",), f"k{i}", value)
        found = [i.key for i in store.search(("f",), filter=conditions, limit=100)]
        page = [i.key for i in store.search(("f",), filter=conditions, limit=limit, offset=offset)]
    expected = [
        f"k{i}"
        for i in reversed(range(len(values)))
        if all(matches(at(values[i], k), want) for k, want in conditions.items())
    ]
    assert found == expected
    assert page == expected[offset : offset + limit]


def test_every_scalar_comparison_agrees_with_python(store: SqlmemStore) -> None:
    """Exhaustive over a pool of scalars: every operator against every argument, at a top
    level key, a dotted path and a literal dotted key, SQL picks what Python picks."""
    from sqlmem.adapters.langgraph_filter import at, matches

    pool: list[Any] = [None, True, False, 0, 1, 2, 1.0, 1.5, -3, 2**53 + 1, 2**70]
    pool += ["", "a", "b", "é", "1", [1], {"b": 1}]
    values = [{"a": v} for v in pool] + [{"a": {"b": v}} for v in pool]
    values += [{"a.b": v, "a": {"b": "shadowed"}} for v in pool] + [{}]
    for i, value in enumerate(values):
        store.put(("x",), f"k{i:02}", value)
    newest_first = list(reversed(range(len(values))))
    for key in ("a", "a.b"):
        for arg in pool:
            for want in [arg, *({op: arg} for op in ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte"))]:
                found = [i.key for i in store.search(("x",), filter={key: want}, limit=1000)]
                expected = [f"k{i:02}" for i in newest_first if matches(at(values[i], key), want)]
                assert found == expected, (key, want)


def test_async_store_ttl_housekeeping_is_awaited(tmp_path: Path) -> None:
    """As LangGraph's AsyncSqliteStore: `sweep_ttl`, `start_ttl_sweeper` (a task of the
    running loop) and `stop_ttl_sweeper` are coroutines."""
    from sqlmem.adapters.langgraph import AsyncSqlmemStore

    async def main() -> None:
        store = AsyncSqlmemStore(tmp_path / "memory.db", ttl={"default_ttl": 5})
        try:
            await store.aput(("t",), "old", {"v": 1})
            await store.aput(("t",), "new", {"v": 2})
            _expire(store.db, "old")
            assert await store.sweep_ttl() == 1
            assert [i.key for i in await store.asearch(("t",))] == ["new"]
            task = await store.start_ttl_sweeper()
            assert isinstance(task, asyncio.Task) and not task.done()
            assert await store.start_ttl_sweeper() is task  # one sweeper
            assert await store.stop_ttl_sweeper(timeout=10)
            assert task.done() and not task.cancelled()
            assert await store.stop_ttl_sweeper()  # none running
            running = await store.start_ttl_sweeper()
        finally:
            store.close()  # cancels a sweeper still running
        await asyncio.sleep(0)
        assert running.cancelled()
        plain = AsyncSqlmemStore(tmp_path / "other.db")  # no ttl config: nothing to sweep
        try:
            await (await plain.start_ttl_sweeper())
        finally:
            plain.close()

    asyncio.run(main())
