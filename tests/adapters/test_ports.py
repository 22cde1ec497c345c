"""The frameworks' ports (`sqlmem.adapters.ports`): every shipped database offers them,
the adapters refuse what is not a database, a database without them still serves the
history adapters, and the key-value port answers alike on every backend."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("langgraph.store.base")

from backends import BACKENDS, open_backend

import sqlmem
from sqlmem.adapters.langchain import SqlmemByteStore
from sqlmem.adapters.langgraph import SqlmemSaver, SqlmemStore
from sqlmem.adapters.openai_agents import SqlmemSession
from sqlmem.adapters.ports import (
    CheckpointPort,
    KeyValuePort,
    KVSearchPort,
    has_framework_storage,
)


@pytest.fixture(params=["sqlite", *BACKENDS])
def any_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "sqlite":
        db = sqlmem.open(tmp_path / "memory.db")
        yield db
        db.close()
        return
    yield open_backend(request, request.param)


def test_every_database_offers_the_ports(any_db: Any) -> None:
    assert has_framework_storage(any_db)
    assert isinstance(any_db.kv, KeyValuePort)
    assert isinstance(any_db.kv_search, KVSearchPort)
    assert isinstance(any_db.checkpoints, CheckpointPort)
    assert not has_framework_storage(any_db.history)


@pytest.mark.parametrize("cls", [SqlmemStore, SqlmemSaver, SqlmemByteStore])
def test_what_is_not_a_database_is_refused(any_db: Any, cls: Any) -> None:
    for bad in (any_db.history, object(), 3, None, {"path": "x"}):
        with pytest.raises(sqlmem.InvalidArgumentError, match="db_or_path"):
            cls(bad)


class _HistoryOnly:
    """A third party's `Database`: the protocol's members and nothing else."""

    def __init__(self) -> None:
        self._inner = sqlmem.open(":memory:")

    history = property(lambda self: self._inner.history)
    facts = property(lambda self: self._inner.facts)
    docs = property(lambda self: self._inner.docs)

    def atomic(self) -> AbstractContextManager[None]:
        return self._inner.atomic()  # type: ignore[no-any-return]

    def stats(self) -> dict[str, Any]:
        return self._inner.stats()  # type: ignore[no-any-return]

    def check(self) -> Any:
        return self._inner.check()

    def maintain(self) -> dict[str, Any]:
        return self._inner.maintain()  # type: ignore[no-any-return]

    def close(self) -> None:
        self._inner.close()

    def __enter__(self) -> _HistoryOnly:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def test_a_database_without_the_ports_serves_the_history_adapters_only() -> None:
    db = _HistoryOnly()
    assert isinstance(db, sqlmem.protocols.Database) and not has_framework_storage(db)
    session = SqlmemSession("s", db)
    asyncio.run(session.add_items([{"role": "user", "content": "hi"}]))
    assert asyncio.run(session.get_items()) == [{"role": "user", "content": "hi"}]
    session.close()
    # Built without touching the database; the first call that needs the ports says why
    # it cannot work.
    uses = [
        (SqlmemStore, lambda s: s.get(("a",), "k")),
        (SqlmemSaver, lambda s: s.get_tuple({"configurable": {"thread_id": "t"}})),
        (SqlmemByteStore, lambda s: s.mget(["k"])),
    ]
    for cls, use in uses:
        adapter = cls(db)
        with pytest.raises(sqlmem.InvalidArgumentError, match="key-value or checkpoint"):
            use(adapter)
        adapter.close()


_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=6)
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("set"), st.lists(st.tuples(_TEXT, st.binary(max_size=4)), max_size=3)),
        st.tuples(st.just("delete"), st.lists(_TEXT, max_size=3)),
    ),
    max_size=8,
)


@settings(max_examples=30, deadline=None)
@given(ops=_OPS, prefix=_TEXT, probe=st.lists(_TEXT, max_size=4))
def test_the_key_value_port_answers_alike_on_every_backend(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    ops: Any,
    prefix: str,
    probe: list[str],
) -> None:
    """Keys of any text (NUL, any plane) in code point order, prefixes, last write wins,
    deletes: the SQLite file, the in-memory database and PostgreSQL agree."""
    file_db = sqlmem.open(tmp_path_factory.mktemp("kv") / "memory.db")
    others = [open_backend(request, kind) for kind in BACKENDS]
    namespace = f"ns-{uuid.uuid4().hex}"  # examples share the PostgreSQL agent
    answers = []
    for db in [file_db, *others]:
        kv = db.kv
        for op, arg in ops:
            if op == "set":
                kv.set_many(namespace, arg)
            else:
                kv.delete_many(namespace, arg)
        answers.append(
            (
                list(kv.keys(namespace, prefix)),
                kv.get_many(namespace, probe),
                list(kv.keys(namespace)),
            )
        )
    file_db.close()
    assert answers[1] == answers[0]
    assert answers[2] == answers[0]
    assert answers[0][2] == sorted(answers[0][2])  # code point order
