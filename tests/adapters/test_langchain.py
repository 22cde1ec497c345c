"""SPEC 18: LangChain's chat message history and byte store over sqlmem.

The byte store runs langchain-tests' own `BaseStoreSyncTests` and `BaseStoreAsyncTests`;
the rest is written from the behaviour LangChain's interfaces promise, plus sqlmem's:
exact round trips, refusals before anything is written, keys that never collide.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("langchain_core")
langchain_tests = pytest.importorskip("langchain_tests.integration_tests")

from langchain_core.messages import (  # noqa: E402
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    HumanMessageChunk,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

import sqlmem  # noqa: E402
from sqlmem.adapters.langchain import (  # noqa: E402
    MESSAGE_KEY,
    SqlmemByteStore,
    SqlmemChatMessageHistory,
)
from sqlmem.sqlite.frameworks import kv  # noqa: E402

# -- langchain-tests' own suites ----------------------------------------------------------------


class TestByteStoreSync(langchain_tests.BaseStoreSyncTests[bytes]):
    @pytest.fixture
    def kv_store(self, tmp_path: Path) -> Iterator[SqlmemByteStore]:
        store = SqlmemByteStore(tmp_path / "memory.db")
        yield store
        store.close()

    @pytest.fixture
    def three_values(self) -> tuple[bytes, bytes, bytes]:
        return b"foo", b"\x00bar\xff", b""


class TestByteStoreAsync(langchain_tests.BaseStoreAsyncTests[bytes]):
    @pytest.fixture
    def kv_store(self, tmp_path: Path) -> Iterator[SqlmemByteStore]:
        store = SqlmemByteStore(tmp_path / "memory.db")
        yield store
        store.close()

    @pytest.fixture
    def three_values(self) -> tuple[bytes, bytes, bytes]:
        return b"foo", b"\x00bar\xff", b""


# -- chat message history ------------------------------------------------------------------------

MESSAGES: list[BaseMessage] = [
    SystemMessage("You are terse.", id="s1"),
    HumanMessage("What's the weather in Paris?", id="h1", name="ann"),
    HumanMessage(
        [
            {"type": "text", "text": "and this picture"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}},
        ]
    ),
    AIMessage(
        "",
        tool_calls=[
            {"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"},
            {"name": "get_time", "args": {}, "id": "c2"},
        ],
        usage_metadata={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
        response_metadata={"model_name": "m", "finish_reason": "tool_calls"},
        id="a1",
    ),
    ToolMessage("Sunny, 21 degrees", tool_call_id="c1", artifact={"raw": [1, 2]}),
    ToolMessage("boom", tool_call_id="c2", status="error"),
    AIMessage("It is sunny. 晴れ 😊", additional_kwargs={"refusal": None, "n": 2**70}),
    ChatMessage("Looks fine", role="critic"),
    FunctionMessage("result", name="legacy_fn"),
    AIMessageChunk("partial"),
    HumanMessageChunk("chunk"),
    RemoveMessage(id="h1"),
    HumanMessage("nul \x00 inside"),
]


@pytest.fixture
def history(db: sqlmem.MemoryDB) -> Iterator[SqlmemChatMessageHistory]:
    h = SqlmemChatMessageHistory("chat:1", db)
    yield h
    h.close()


def test_every_message_type_round_trips(history: SqlmemChatMessageHistory) -> None:
    history.add_messages(MESSAGES)
    got = history.messages
    assert got == MESSAGES
    assert [type(m) for m in got] == [type(m) for m in MESSAGES]
    assert got[3].tool_calls == MESSAGES[3].tool_calls  # type: ignore[attr-defined]


def test_async_methods(history: SqlmemChatMessageHistory) -> None:
    async def main() -> list[BaseMessage]:
        await history.aadd_messages(MESSAGES[:4])
        await history.aadd_messages(MESSAGES[4:])
        got = await history.aget_messages()
        await history.aclear()
        assert await history.aget_messages() == []
        return got

    assert asyncio.run(main()) == MESSAGES


def test_convenience_methods_and_clear(db: sqlmem.MemoryDB) -> None:
    a, b = SqlmemChatMessageHistory("a", db), SqlmemChatMessageHistory("b", db)
    a.add_user_message("hello")
    a.add_ai_message("hi there")
    a.add_message(HumanMessage("third"))
    b.add_user_message("other session")
    assert [m.content for m in a.messages] == ["hello", "hi there", "third"]
    assert [type(m) for m in a.messages] == [HumanMessage, AIMessage, HumanMessage]
    a.clear()
    assert a.messages == []
    assert [m.content for m in b.messages] == ["other session"]
    assert "other session" in str(b)


def test_sqlmem_sees_roles_tool_calls_and_text(
    history: SqlmemChatMessageHistory, db: sqlmem.MemoryDB
) -> None:
    history.add_messages(MESSAGES[:6])
    stored = db.history.get_all("chat:1")
    assert [m.role for m in stored] == ["system", "user", "user", "assistant", "tool", "tool"]
    assert [(t.id, t.name, t.arguments) for t in stored[3].tool_calls] == [
        ("c1", "get_weather", '{"city": "Paris"}'),
        ("c2", "get_time", "{}"),
    ]
    assert stored[4].tool_call_id == "c1" and stored[4].content == "Sunny, 21 degrees"
    assert stored[2].content == "and this picture"
    assert all(MESSAGE_KEY in m.metadata for m in stored)
    hits = db.history.search("degrees", session_id="chat:1")
    assert [h.seq for h in hits] == [5]
    # sqlmem's pair-safe window keeps the tool results with their call
    assert db.history.get_recent("chat:1", 2) == []


def test_messages_written_by_other_code(
    history: SqlmemChatMessageHistory, db: sqlmem.MemoryDB
) -> None:
    db.history.append_many(
        "chat:1",
        [
            sqlmem.Message(role="user", content="u"),
            sqlmem.Message(role="assistant", content="a"),
            sqlmem.Message(role="system", content="s"),
            sqlmem.Message(role="tool", content="t", tool_call_id="c"),
        ],
    )
    assert history.messages == [
        HumanMessage("u"),
        AIMessage("a"),
        SystemMessage("s"),
        ToolMessage("t", tool_call_id="c"),
    ]


@pytest.mark.parametrize(
    "bad",
    [
        HumanMessage("x", additional_kwargs={"blob": b"bytes"}),
        HumanMessage("x", additional_kwargs={"n": float("nan")}),
        ToolMessage("x", tool_call_id="c", artifact=object()),
        HumanMessage("lone \ud800 surrogate"),
        AIMessage("", tool_calls=[{"name": "f", "args": {"v": float("inf")}, "id": "c"}]),
        "not a message",
    ],
    ids=["bytes", "nan", "object-artifact", "surrogate", "inf-args", "str"],
)
def test_messages_json_cannot_hold_are_refused_whole(
    history: SqlmemChatMessageHistory, bad: Any
) -> None:
    history.add_messages([HumanMessage("kept")])
    with pytest.raises(sqlmem.InvalidArgumentError, match=r"messages\[1\]"):
        history.add_messages([HumanMessage("good"), bad])
    with pytest.raises(sqlmem.InvalidArgumentError):
        asyncio.run(history.aadd_messages([HumanMessage("good"), bad]))
    assert history.messages == [HumanMessage("kept")]


def test_history_arguments_and_ownership(db: sqlmem.MemoryDB, tmp_path: Path) -> None:
    with pytest.raises(sqlmem.InvalidArgumentError):
        SqlmemChatMessageHistory("", db)
    with pytest.raises(sqlmem.InvalidArgumentError):
        SqlmemChatMessageHistory("s", 42)  # type: ignore[arg-type]
    owned = SqlmemChatMessageHistory("s", tmp_path / "other.db")
    owned.add_user_message("x")
    owned.close()
    assert owned.db.closed
    shared = SqlmemChatMessageHistory("s", db)
    shared.close()
    assert not db.closed


# -- byte store -----------------------------------------------------------------------------------


@pytest.fixture
def store(db: sqlmem.MemoryDB) -> Iterator[SqlmemByteStore]:
    s = SqlmemByteStore(db)
    yield s
    s.close()


def test_namespaces_are_separate(db: sqlmem.MemoryDB) -> None:
    a, b = SqlmemByteStore(db, namespace="a"), SqlmemByteStore(db, namespace="b")
    a.mset([("k", b"from a")])
    b.mset([("k", b"from b")])
    assert a.mget(["k"]) == [b"from a"] and b.mget(["k"]) == [b"from b"]
    a.mdelete(["k"])
    assert a.mget(["k"]) == [None] and b.mget(["k"]) == [b"from b"]
    assert list(SqlmemByteStore(db).yield_keys()) == []  # "default" is its own namespace


_ns = itertools.count()
KEYS = st.text(alphabet=st.characters(codec="utf-8"), max_size=8)


@settings(max_examples=50)
@given(pairs=st.dictionaries(KEYS, st.binary(max_size=20), max_size=12), prefix=KEYS)
def test_any_keys_stay_distinct_and_prefixes_match(
    db: sqlmem.MemoryDB, pairs: dict[str, bytes], prefix: str
) -> None:
    store = SqlmemByteStore(db, namespace=f"h{next(_ns)}")
    store.mset(list(pairs.items()))
    keys = list(pairs)
    assert store.mget(keys) == [pairs[k] for k in keys]
    assert list(store.yield_keys()) == sorted(keys)
    assert list(store.yield_keys(prefix=prefix)) == sorted(k for k in keys if k.startswith(prefix))


@pytest.mark.parametrize(
    ("prefix", "bound"),
    [
        ("", None),
        ("a", "b"),
        ("a\U0010ffff", "b"),
        ("\U0010ffff", None),
        ("x\ud7ff", "x\ue000"),
    ],
)
def test_prefix_upper_bound(prefix: str, bound: str | None) -> None:
    assert kv.prefix_upper_bound(prefix) == bound


def test_yield_keys_pages_through_a_large_namespace(
    store: SqlmemByteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kv, "KEYS_PAGE", 7)
    keys = [f"k{i:03d}" for i in range(50)]
    store.mset([(k, k.encode()) for k in keys])
    assert list(store.yield_keys()) == keys
    assert list(store.yield_keys(prefix="k01")) == keys[10:20]

    async def collect() -> list[str]:
        return [k async for k in store.ayield_keys(prefix="k0")]

    assert asyncio.run(collect()) == keys[:50]


def test_bad_input_is_refused_and_nothing_stored(store: SqlmemByteStore) -> None:
    store.mset([("kept", b"1")])
    for bad in (
        [("a", b"ok"), ("b", "text, not bytes")],
        [("a", b"ok"), ("lone \ud800", b"x")],
        [("a", b"ok"), (7, b"x")],
        [("a", b"ok"), ("b",)],
        "not pairs",
    ):
        with pytest.raises(sqlmem.InvalidArgumentError):
            store.mset(bad)  # type: ignore[arg-type]
    assert list(store.yield_keys()) == ["kept"]
    with pytest.raises(sqlmem.InvalidArgumentError):
        store.mget("kept")  # a str is not a sequence of keys here
    with pytest.raises(sqlmem.InvalidArgumentError):
        SqlmemByteStore(store.db, namespace=None)  # type: ignore[arg-type]


def test_mset_last_value_wins_and_bytes_like_values(store: SqlmemByteStore) -> None:
    store.mset([("k", b"one"), ("k", b"two"), ("m", bytearray(b"ba")), ("v", memoryview(b"mv"))])
    assert store.mget(["k", "m", "v", "missing", "k"]) == [b"two", b"ba", b"mv", None, b"two"]
    assert all(type(v) is bytes for v in store.mget(["m", "v"]))


def test_values_survive_reopen(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    store = SqlmemByteStore(path, namespace="cache")
    big = bytes(range(256)) * 4096  # 1 MiB
    store.mset([("big", big), ("empty", b"")])
    store.close()
    again = SqlmemByteStore(path, namespace="cache")
    assert again.mget(["big", "empty"]) == [big, b""]
    again.close()


def test_expiry_is_data_refreshed_and_swept(db: sqlmem.MemoryDB) -> None:
    """The table LangGraph's store will use: a ttl counts from the write or the last
    refresh; expired rows are invisible, never refreshed back, then swept."""
    store = kv.SQLiteKeyValueStore(db.engine)
    store.set_many("ns", [("short", b"1")], ttl_ms=1)
    store.set_many("ns", [("long", b"2")], ttl_ms=3_600_000)
    store.set_many("ns", [("forever", b"3")])
    with db.engine.write() as conn:  # let "short" lapse without waiting for the clock
        conn.execute("UPDATE kv SET expires_at = expires_at - 10 WHERE key = 'short'")
    assert store.get_many("ns", ["short", "long", "forever"]) == [None, b"2", b"3"]
    assert list(store.keys("ns")) == ["forever", "long"]
    with db.engine.read() as conn:
        (before,) = conn.execute("SELECT expires_at FROM kv WHERE key = 'long'").fetchall()[0]
    store.refresh("ns", ["short", "long", "forever", "missing"])
    with db.engine.read() as conn:
        rows = dict(conn.execute("SELECT key, expires_at FROM kv").fetchall())
    assert rows["long"] >= before and rows["forever"] is None
    assert store.get_many("ns", ["short"]) == [None]  # not brought back
    assert store.sweep() == 1
    assert store.sweep() == 0
    with db.engine.read() as conn:
        assert conn.execute("SELECT count(*) FROM kv").fetchall() == [(2,)]
    for bad in (0, -5, 1.5, True, 2**60):
        with pytest.raises(sqlmem.InvalidArgumentError):
            store.set_many("ns", [("k", b"v")], ttl_ms=bad)  # type: ignore[arg-type]


def test_byte_store_keys_are_tagged(db: sqlmem.MemoryDB) -> None:
    """Other stores sharing the kv table cannot reach (or be reached by) a byte store's keys."""
    SqlmemByteStore(db, namespace="n").mset([("k", b"v")])
    other = kv.SQLiteKeyValueStore(db.engine)
    assert other.get_many("n", ["k"]) == [None]
    assert other.get_many(SqlmemByteStore.TAG + "n", ["k"]) == [b"v"]


def test_kv_migration_is_applied(db: sqlmem.MemoryDB) -> None:
    from sqlmem.sqlite.core.migrations import latest_version, load_migrations

    assert any(m.name.endswith("_kv") for m in load_migrations())
    assert db.stats()["schema_version"] == latest_version()
    with db.engine.read() as conn:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(kv)")]
    assert columns == [
        "namespace", "key", "value", "created_at", "updated_at", "ttl_ms", "expires_at"
    ]  # fmt: skip


def test_async_byte_store_calls_share_the_file(store: SqlmemByteStore) -> None:
    async def main() -> list[bytes | None]:
        await asyncio.gather(*(store.amset([(f"k{i}", bytes([i]))]) for i in range(100)))
        await store.amdelete(["k0"])
        return await store.amget([f"k{i}" for i in range(100)])

    assert asyncio.run(main()) == [None] + [bytes([i]) for i in range(1, 100)]
    assert len(list(store.yield_keys())) == 99
