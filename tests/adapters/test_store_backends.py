"""`SqlmemStore` on PostgreSQL and in memory: LangGraph store tests that take a database
(imported from test_langgraph and test_langgraph_index, run here over each backend), and
agreement with the SQLite file: the same operations give the same answers everywhere."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("langgraph.store.base")

from backends import BACKENDS, open_backend, other_backend_db
from test_langgraph import (
    _KEYS,
    _VALUES,
    _WANTS,
    test_batch_with_a_put_is_all_or_nothing,
    test_every_scalar_comparison_agrees_with_python,
    test_list_namespaces,
    test_namespaces_of_any_strings_never_collide,
    test_other_kv_users_cannot_reach_the_store,
    test_put_get_delete,
    test_query_ranks_by_fts5_bm25,
    test_query_with_filter_offset_and_no_words,
    test_search_filters_order_and_pages,
    test_thousand_labels,
    test_values_json_cannot_hold_are_refused,
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
    "test_batch_with_a_put_is_all_or_nothing",
    "test_every_scalar_comparison_agrees_with_python",
    "test_filters_apply_before_ranking",
    "test_hybrid_fuses_bm25_and_vector_ranks",
    "test_list_namespaces",
    "test_namespaces_of_any_strings_never_collide",
    "test_other_kv_users_cannot_reach_the_store",
    "test_put_get_delete",
    "test_query_ranks_by_fts5_bm25",
    "test_query_with_filter_offset_and_no_words",
    "test_search_filters_order_and_pages",
    "test_search_ranks_by_the_best_field_cosine",
    "test_thousand_labels",
    "test_values_json_cannot_hold_are_refused",
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
