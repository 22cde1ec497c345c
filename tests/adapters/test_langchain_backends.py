"""LangChain's classes on PostgreSQL and in memory: langchain-tests' own
`BaseStoreSyncTests`/`BaseStoreAsyncTests` for the byte store, and the chat history and
byte store tests that take a database (imported from test_langchain, run here over each
backend)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

langchain_tests = pytest.importorskip("langchain_tests.integration_tests")

from backends import BACKENDS, open_backend, other_backend_db  # noqa: E402
from test_langchain import (  # noqa: E402
    test_any_keys_stay_distinct_and_prefixes_match,
    test_async_byte_store_calls_share_the_file,
    test_async_methods,
    test_bad_input_is_refused_and_nothing_stored,
    test_convenience_methods_and_clear,
    test_every_message_type_round_trips,
    test_messages_json_cannot_hold_are_refused_whole,
    test_messages_written_by_other_code,
    test_mset_last_value_wins_and_bytes_like_values,
    test_namespaces_are_separate,
    test_sqlmem_sees_roles_tool_calls_and_text,
    test_yield_keys_pages_through_a_large_namespace,
)

from sqlmem.adapters.langchain import SqlmemByteStore, SqlmemChatMessageHistory  # noqa: E402

__all__ = [
    "test_any_keys_stay_distinct_and_prefixes_match",
    "test_async_byte_store_calls_share_the_file",
    "test_async_methods",
    "test_bad_input_is_refused_and_nothing_stored",
    "test_convenience_methods_and_clear",
    "test_every_message_type_round_trips",
    "test_messages_json_cannot_hold_are_refused_whole",
    "test_messages_written_by_other_code",
    "test_mset_last_value_wins_and_bytes_like_values",
    "test_namespaces_are_separate",
    "test_sqlmem_sees_roles_tool_calls_and_text",
    "test_yield_keys_pages_through_a_large_namespace",
]


@pytest.fixture(params=BACKENDS)
def db(request: pytest.FixtureRequest) -> Iterator[Any]:
    yield from other_backend_db(request)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def history(db: Any) -> Iterator[SqlmemChatMessageHistory]:
    h = SqlmemChatMessageHistory("chat:1", db)
    yield h
    h.close()


@pytest.fixture
def store(db: Any) -> Iterator[SqlmemByteStore]:
    s = SqlmemByteStore(db)
    yield s
    s.close()


class TestByteStoreSyncOnBackend(langchain_tests.BaseStoreSyncTests[bytes]):
    @pytest.fixture
    def kv_store(self, backend: str, request: pytest.FixtureRequest) -> Iterator[SqlmemByteStore]:
        store = SqlmemByteStore(open_backend(request, backend))
        yield store
        store.close()

    @pytest.fixture
    def three_values(self) -> tuple[bytes, bytes, bytes]:
        return b"foo", b"\x00bar\xff", b""


class TestByteStoreAsyncOnBackend(langchain_tests.BaseStoreAsyncTests[bytes]):
    @pytest.fixture
    def kv_store(self, backend: str, request: pytest.FixtureRequest) -> Iterator[SqlmemByteStore]:
        store = SqlmemByteStore(open_backend(request, backend))
        yield store
        store.close()

    @pytest.fixture
    def three_values(self) -> tuple[bytes, bytes, bytes]:
        return b"foo", b"\x00bar\xff", b""
