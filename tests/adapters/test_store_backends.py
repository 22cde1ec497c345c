"""`SqlmemStore` on PostgreSQL and in memory: LangGraph store tests that take a database
(imported from test_langgraph and test_langgraph_index, run here over each backend), and
agreement with the SQLite file: the same operations give the same answers everywhere."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("langgraph.store.base")

from backends import BACKENDS, other_backend_db, postgres_url
from test_langgraph import (
    _KEYS,
    _VALUES,
    _WANTS,
    test_batch_refuses_labels_langgraph_refuses,
    test_batch_with_a_put_is_all_or_nothing,
    test_every_scalar_comparison_agrees_with_python,
    test_list_namespaces,
    test_namespaces_of_any_valid_labels_never_collide,
    test_other_kv_users_cannot_reach_the_store,
    test_put_get_delete,
    test_query_ranks_by_fts5_bm25,
    test_query_with_filter_offset_and_no_words,
    test_search_filters_order_and_pages,
    test_thousand_labels,
    test_values_json_cannot_hold_are_refused,
    test_wildcards_and_empty_prefixes_stay_allowed,
)
from test_langgraph_index import (
    INDEX,
    test_filters_apply_before_ranking,
    test_hybrid_fuses_bm25_and_vector_ranks,
    test_search_ranks_by_the_best_field_cosine,
)

import sqlmem
from sqlmem.adapters.langgraph import SqlmemStore

__all__ = [
    "test_batch_refuses_labels_langgraph_refuses",
    "test_batch_with_a_put_is_all_or_nothing",
    "test_every_scalar_comparison_agrees_with_python",
    "test_filters_apply_before_ranking",
    "test_hybrid_fuses_bm25_and_vector_ranks",
    "test_list_namespaces",
    "test_namespaces_of_any_valid_labels_never_collide",
    "test_other_kv_users_cannot_reach_the_store",
    "test_put_get_delete",
    "test_query_ranks_by_fts5_bm25",
    "test_query_with_filter_offset_and_no_words",
    "test_search_filters_order_and_pages",
    "test_search_ranks_by_the_best_field_cosine",
    "test_thousand_labels",
    "test_values_json_cannot_hold_are_refused",
    "test_wildcards_and_empty_prefixes_stay_allowed",
]


@pytest.fixture(params=BACKENDS)
def db(request: pytest.FixtureRequest) -> Iterator[Any]:
    yield from other_backend_db(request)


@pytest.fixture
def store(db: Any, request: pytest.FixtureRequest) -> Iterator[SqlmemStore]:
    # The index tests' store embeds (their module's fixture does too).
    from_index_tests = request.node.function.__module__ == "test_langgraph_index"
    index = INDEX if from_index_tests else None
    s = SqlmemStore(db, index=index)
    yield s
    s.close()


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.dictionaries(_KEYS, _VALUES, max_size=4), min_size=1, max_size=8),
    st.dictionaries(_KEYS, _WANTS, max_size=2),
    st.integers(0, 3),
    st.integers(1, 5),
)
def test_filters_mean_what_they_mean_in_python(
    db: Any,
    values: list[dict[str, Any]],
    conditions: dict[str, Any],
    offset: int,
    limit: int,
) -> None:
    """The backend's filtering (in Python here, SQL on the file) picks what LangGraph's
    meaning picks, newest first, paged."""
    from sqlmem.adapters.langgraph_filter import at, matches

    store = SqlmemStore(db)
    namespace = ("f", str(uuid.uuid4()))  # examples share the database: apart by namespace
    for i, value in enumerate(values):
        store.put(namespace, f"k{i}", value)
    found = [i.key for i in store.search(namespace, filter=conditions, limit=100)]
    page = [i.key for i in store.search(namespace, filter=conditions, limit=limit, offset=offset)]
    store.close()
    expected = [
        f"k{i}"
        for i in reversed(range(len(values)))
        if all(matches(at(values[i], k), want) for k, want in conditions.items())
    ]
    assert found == expected
    assert page == expected[offset : offset + limit]


def test_ttl_expires_refreshes_and_sweeps(db: Any) -> None:
    """Expiry is data on every backend: an expired item is gone from reads at once, a
    refresh on read restarts it, the sweep deletes it (and only it)."""
    store = SqlmemStore(db, ttl={"default_ttl": 0.0005, "refresh_on_read": True})  # 30 ms
    store.put(("t",), "short", {"v": 1})
    store.put(("t",), "kept", {"v": 2}, ttl=None)
    assert store.get(("t",), "short") is not None
    time.sleep(0.2)
    assert store.get(("t",), "short") is None
    assert [i.key for i in store.search(("t",))] == ["kept"]
    assert store.list_namespaces() == [("t",)]
    assert store.sweep_ttl() == 1
    assert store.sweep_ttl() == 0
    assert store.get(("t",), "kept") is not None
    store.close()


def test_a_rolled_back_batch_leaves_no_item_and_no_vector(db: Any) -> None:
    """A put inside the database's atomic() that raises is undone whole, vectors too."""
    store = SqlmemStore(db, index=INDEX)
    with pytest.raises(RuntimeError), db.atomic():
        store.put(("a",), "k", {"text": "red apple"})
        raise RuntimeError("undo")
    assert store.get(("a",), "k") is None
    assert store.search(("a",), query="red apple") == []
    store.put(("a",), "k", {"text": "red apple"})
    assert [i.key for i in store.search(("a",), query="red apple")] == ["k"]
    store.close()


def test_nul_keys_any_plane_and_long_namespaces(db: Any) -> None:
    store = SqlmemStore(db)
    keys = ["a\x00b", "a", "𝄞", "\U0010ffff", "é" * 3000]
    for key in keys:
        store.put(("n", "é\U0010ffff", "x" * 5000), key, {"key": key})
    for key in keys:
        item = store.get(("n", "é\U0010ffff", "x" * 5000), key)
        assert item is not None and item.value == {"key": key}
    assert store.list_namespaces(prefix=("n",)) == [("n", "é\U0010ffff", "x" * 5000)]
    store.close()


def test_agents_never_see_each_others_items_or_threads(open_pg: Any, pg_dsn: str) -> None:
    """Two agents of one PostgreSQL database (through `open_pg` and through
    `sqlmem.open(url, agent_id=...)`): items, namespaces and searches stay apart."""
    from sqlmem.adapters.langgraph import SqlmemSaver

    first = open_pg()
    second = sqlmem.open(postgres_url(pg_dsn), agent_id=f"other-{uuid.uuid4().hex[:8]}")
    assert type(second).__name__ == "PostgresDB"
    try:
        a, b = SqlmemStore(first, index=INDEX), SqlmemStore(second, index=INDEX)
        a.put(("ns",), "k", {"text": "only the first agent's"})
        assert b.get(("ns",), "k") is None
        assert b.search(("ns",)) == [] and b.search((), query="first agent") == []
        assert b.list_namespaces() == []
        assert [i.key for i in a.search((), query="first agent")] == ["k"]
        saver = SqlmemSaver(first)
        saver.put(
            {"configurable": {"thread_id": "t", "checkpoint_ns": ""}},
            {
                "v": 1,
                "id": "c1",
                "ts": "",
                "channel_values": {},
                "channel_versions": {},
                "versions_seen": {},
                "pending_sends": [],
            },  # type: ignore[typeddict-unknown-key]
            {},
            {},
        )
        other = SqlmemSaver(second)
        assert other.get_tuple({"configurable": {"thread_id": "t"}}) is None
        assert list(other.list(None)) == []
        for s in (a, b, saver, other):
            s.close()
    finally:
        second.close()
