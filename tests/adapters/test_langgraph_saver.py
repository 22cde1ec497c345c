"""SPEC 18: `SqlmemSaver` / `AsyncSqlmemSaver`, LangGraph's checkpointer in the memory file.

The judge is the `langgraph-checkpoint-conformance` suite, run here for both classes and
every capability (base and extended), so CI runs it. Then sqlmem's own: a real graph
resumes from the file, threads stay apart, a reopened file keeps everything, long
histories page, the async class refuses blocking calls in its loop, bad input is
refused with sqlmem's errors.
"""

from __future__ import annotations

import asyncio
import itertools
import operator
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("langgraph.checkpoint.conformance")

from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import Capability
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

import sqlmem
from sqlmem.adapters.langgraph import (
    AsyncSqlmemSaver,
    SqlmemSaver,
    SqlmemStore,
    SyncCallInEventLoopError,
)
from sqlmem.errors import InvalidArgumentError
from sqlmem.sqlite.frameworks import checkpoints

SAVERS = [SqlmemSaver, AsyncSqlmemSaver]
#: LangGraph's (now private) error channel, a special channel of WRITES_IDX_MAP.
ERROR = "__error__"


# -- the conformance suite ------------------------------------------------------------------


@pytest.mark.parametrize("capability", [c.value for c in Capability])
@pytest.mark.parametrize("cls", SAVERS, ids=lambda c: c.__name__)
async def test_conformance(cls: type[SqlmemSaver], capability: str, tmp_path: Path) -> None:
    opened: list[SqlmemSaver] = []

    async def factory() -> AsyncGenerator[SqlmemSaver, None]:
        saver = cls(tmp_path / f"memory{len(opened)}.db")
        opened.append(saver)
        yield saver
        saver.close()

    registered = checkpointer_test(name=f"{cls.__name__}-{capability}")(factory)
    report = await validate(registered, capabilities={capability})
    result = report.results[capability]
    assert result.detected, f"{capability} not detected"
    assert result.failures == [], result.failures
    assert result.passed is True and result.tests_passed > 0
    assert opened and all(s.db.closed for s in opened)


# -- a real graph -----------------------------------------------------------------------------


class State(TypedDict):
    said: Annotated[list[str], operator.add]


def _graph(saver: SqlmemSaver) -> Any:
    builder = StateGraph(State)
    builder.add_node("echo", lambda state: {"said": [f"echo {len(state['said'])}"]})
    builder.add_edge(START, "echo")
    builder.add_edge("echo", END)
    return builder.compile(checkpointer=saver)


def _config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def test_a_graph_resumes_its_thread_from_a_reopened_file(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with SqlmemSaver(path) as saver:
        graph = _graph(saver)
        graph.invoke({"said": ["hi"]}, _config("t1"))
        graph.invoke({"said": ["again"]}, _config("t1"))
    with SqlmemSaver(path) as saver:
        state = _graph(saver).get_state(_config("t1"))
        assert state.values["said"] == ["hi", "echo 1", "again", "echo 3"]
        history = list(saver.list(_config("t1")))
        assert len(history) == len({t.config["configurable"]["checkpoint_id"] for t in history})
        ids = [t.checkpoint["id"] for t in history]
        assert ids == sorted(ids, reverse=True)
        assert history[0].checkpoint["id"] == state.config["configurable"]["checkpoint_id"]


async def test_two_threads_stay_apart_async(tmp_path: Path) -> None:
    saver = AsyncSqlmemSaver(tmp_path / "memory.db")
    graph = _graph(saver)
    await asyncio.gather(
        graph.ainvoke({"said": ["a"]}, _config("a")),
        graph.ainvoke({"said": ["b"]}, _config("b")),
    )
    a = await graph.aget_state(_config("a"))
    b = await graph.aget_state(_config("b"))
    assert a.values["said"] == ["a", "echo 1"]
    assert b.values["said"] == ["b", "echo 1"]
    await saver.adelete_thread("a")
    assert await saver.aget_tuple(_config("a")) is None
    assert (await graph.aget_state(_config("b"))).values["said"] == ["b", "echo 1"]
    await asyncio.to_thread(saver.close)


# -- storage ------------------------------------------------------------------------------------


def _put(saver: SqlmemSaver, thread: str, parent: str | None = None, **meta: Any) -> Any:
    config = _config(thread)
    if parent is not None:
        config["configurable"]["checkpoint_id"] = parent
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"blob": b"\x00\xff", "n": len(meta)}
    return saver.put(config, checkpoint, {"source": "loop", "step": -1, **meta}, {})


def test_values_and_writes_round_trip_through_a_reopened_file(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with SqlmemSaver(path) as saver:
        first = _put(saver, "t", score=1)
        second = _put(saver, "t", first["configurable"]["checkpoint_id"], score=2)
        saver.put_writes(second, [("ch", {"x": [1, 2.5, None]}), ("bytes", b"\x01")], "task")
        saver.put_writes(second, [("ch", "retried")], "task")  # a retry keeps the first
        saver.put_writes(second, [(ERROR, "first")], "task")
        saver.put_writes(second, [(ERROR, "latest")], "task")  # special channels: latest
    with SqlmemSaver(path) as saver:
        tup = saver.get_tuple(_config("t"))
        assert tup is not None
        assert tup.config == second
        assert tup.parent_config is not None
        assert (
            tup.parent_config["configurable"]["checkpoint_id"]
            == first["configurable"]["checkpoint_id"]
        )
        assert tup.checkpoint["channel_values"] == {"blob": b"\x00\xff", "n": 1}
        assert tup.metadata["score"] == 2
        assert tup.pending_writes == [  # LangGraph's order: special channels' idx < 0
            ("task", ERROR, "latest"),
            ("task", "ch", {"x": [1, 2.5, None]}),
            ("task", "bytes", b"\x01"),
        ]
        assert [t.metadata["score"] for t in saver.list(None, filter={"score": 1})] == [1]


def test_pending_writes_read_back_in_langgraph_order(db: sqlmem.MemoryDB) -> None:
    """Pending writes come back sorted by LangGraph's writes_sort_key (task path, task
    id, index), whatever order the tasks wrote them in, through get_tuple (by id and
    latest) and list."""
    saver = SqlmemSaver(db)
    config = _put(saver, "t")
    saver.put_writes(config, [("c", "b1"), ("c", "b2")], "task-b", "~p2")
    saver.put_writes(config, [("c", "a1")], "task-a", "~p2")
    saver.put_writes(config, [("c", "z1"), ("c", "z2")], "task-z", "~p1")
    saver.put_writes(config, [("c", "é")], "task-é", "")
    expected = [
        ("task-é", "c", "é"),
        ("task-z", "c", "z1"),
        ("task-z", "c", "z2"),
        ("task-a", "c", "a1"),
        ("task-b", "c", "b1"),
        ("task-b", "c", "b2"),
    ]
    by_id, latest = saver.get_tuple(config), saver.get_tuple(_config("t"))
    assert by_id is not None and by_id.pending_writes == expected
    assert latest is not None and latest.pending_writes == expected
    assert [t.pending_writes for t in saver.list(_config("t"))] == [expected]


def test_latest_checkpoint_is_read_from_the_index(db: sqlmem.MemoryDB) -> None:
    """The latest of a thread walks the primary key backwards (no sort of the thread's
    checkpoints, however many), and is the newest id."""
    saver = SqlmemSaver(db)
    ids = [_put(saver, "t")["configurable"]["checkpoint_id"] for _ in range(5)]
    latest = saver.get_tuple(_config("t"))
    assert latest is not None and latest.config["configurable"]["checkpoint_id"] == max(ids)
    with db.engine.read() as conn:
        plan = conn.execute("EXPLAIN QUERY PLAN " + checkpoints._GET_LATEST, ("t", "")).fetchall()
    details = " ".join(str(row[3]) for row in plan)
    assert "USING INDEX" in details and "TEMP B-TREE" not in details


def test_metadata_whole_and_filters_by_dotted_paths(db: sqlmem.MemoryDB) -> None:
    """As SqliteSaver and InMemorySaver: metadata reads back whole ("writes" included);
    a filter key absent at the top with dots walks nested dicts, as SqliteSaver's does;
    metadata keys of any characters are stored, but filter keys SqliteSaver refuses are
    refused (see test_filter_keys_saver_refuses_are_refused_here_too)."""
    saver = SqlmemSaver(db)
    meta = {
        "writes": {"node": {"x": 1}},
        "user": {"access-level": "nested", "123abc": "ok2"},
        "a.b": "flat",
        "x') OR '1'='1": "odd",
    }
    _put(saver, "t", **meta)
    _put(saver, "u", user={"access-level": "other"})
    tup = saver.get_tuple(_config("t"))
    assert tup is not None and tup.metadata == {"source": "loop", "step": -1, **meta}

    def threads(**flt: Any) -> list[str]:
        found = saver.list(None, filter=flt)
        return [t.config["configurable"]["thread_id"] for t in found]

    assert threads(writes={"node": {"x": 1}}) == ["t"]
    assert threads(**{"user.access-level": "nested"}) == ["t"]
    assert threads(**{"user.123abc": "ok2"}) == ["t"]
    assert threads(**{"user.access-level": "other"}) == ["u"]
    assert threads(**{"a.b": "flat"}) == ["t"]  # the top-level key wins
    assert threads(**{"user.missing": None}) == []
    assert threads(**{"source.x": "loop"}) == []  # a path through a non-dict matches nothing
    with pytest.raises(ValueError, match="Invalid filter key"):
        threads(**{"x') OR '1'='1": "odd"})
    saver.close()


def test_list_pages_through_a_long_history(db: sqlmem.MemoryDB) -> None:
    saver = SqlmemSaver(db)
    count = checkpoints.SEARCH_PAGE * 2 + 7
    stored = [
        _put(saver, "t", even=i % 2 == 0)["configurable"]["checkpoint_id"] for i in range(count)
    ]
    listed = [t.checkpoint["id"] for t in saver.list(_config("t"))]
    assert listed == stored[::-1]
    evens = [t.checkpoint["id"] for t in saver.list(_config("t"), filter={"even": True})]
    assert evens == stored[::-2]
    before = {"configurable": {"checkpoint_id": stored[150]}}
    assert [t.checkpoint["id"] for t in saver.list(None, before=before, limit=3)] == stored[
        149:146:-1
    ]
    saver.close()
    assert not db.closed  # a shared database stays open


def test_the_saver_shares_the_file_with_the_other_stores(db: sqlmem.MemoryDB) -> None:
    saver, store = SqlmemSaver(db), SqlmemStore(db)
    _put(saver, "t")
    store.put(("ns",), "k", {"v": 1})
    db.history.append("s1", sqlmem.Message(role="user", content="hello"))
    assert saver.get_tuple(_config("t")) is not None
    assert store.get(("ns",), "k") is not None
    assert [m.content for m in db.history.get_all("s1")] == ["hello"]
    saver.close()
    store.close()


async def test_the_async_saver_refuses_blocking_calls_in_its_loop(tmp_path: Path) -> None:
    saver = AsyncSqlmemSaver(tmp_path / "memory.db")
    with pytest.raises(SyncCallInEventLoopError):
        saver.get_tuple(_config("t"))
    with pytest.raises(asyncio.InvalidStateError):
        list(saver.list(None))
    # Off the loop's thread, the sync API works.
    stored = await asyncio.to_thread(_put, saver, "t")
    assert (await saver.aget_tuple(_config("t"))).config == stored  # type: ignore[union-attr]
    await asyncio.to_thread(saver.close)


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.get_tuple({}),
        lambda s: s.get_tuple({"configurable": {}}),
        lambda s: s.put_writes(_config("t"), [("ch", 1)], "task"),  # no checkpoint_id
        lambda s: s.prune(["t"], strategy="all"),
        lambda s: s.prune("t"),
        lambda s: s.delete_for_runs("run"),
        lambda s: list(s.list(None, limit="3")),
        lambda s: s.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": 3}}),
    ],
)
def test_bad_input_is_refused_clearly(db: sqlmem.MemoryDB, call: Any) -> None:
    saver = SqlmemSaver(db)
    with pytest.raises(InvalidArgumentError):
        call(saver)
    saver.close()


def test_a_wrong_db_or_path_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="db_or_path"):
        SqlmemSaver(3)  # type: ignore[arg-type]


def test_versions_increase_as_strings(db: sqlmem.MemoryDB) -> None:
    saver = SqlmemSaver(db)
    versions: list[str] = []
    current: str | None = None
    for _ in range(12):
        current = saver.get_next_version(current)
        versions.append(current)
    assert versions == sorted(versions) and len(set(versions)) == 12
    saver.close()


# -- the same answers as LangGraph's InMemorySaver ---------------------------------------------

_threads = st.sampled_from(["a", "b"])
_namespaces = st.sampled_from(["", "child:1"])
_steps = st.integers(0, 3)
_actions = st.lists(
    st.one_of(
        st.tuples(st.just("put"), _threads, _namespaces, _steps),
        st.tuples(st.just("write"), st.sampled_from(["ch", ERROR]), st.integers(0, 9)),
        st.tuples(st.just("delete"), _threads),
    ),
    max_size=25,
)


def _view(found: Any) -> list[tuple[Any, ...]]:
    return [
        (
            t.config["configurable"]["thread_id"],
            t.config["configurable"]["checkpoint_ns"],
            t.checkpoint["id"],
            t.metadata,
            t.parent_config,
            sorted(t.pending_writes or [], key=repr),
        )
        for t in found
    ]


@settings(max_examples=40, deadline=None)
@given(actions=_actions, step=_steps, limit=st.sampled_from([None, 1, 2]))
def test_answers_as_in_memory_saver(
    tmp_path_factory: pytest.TempPathFactory,
    actions: list[tuple[Any, ...]],
    step: int,
    limit: int | None,
) -> None:
    ours = SqlmemSaver(tmp_path_factory.mktemp("saver") / "memory.db")
    theirs = InMemorySaver()
    heads: dict[tuple[str, str], Any] = {}
    last: Any = None
    for action in actions:
        if action[0] == "put":
            _, thread, ns, meta_step = action
            config = heads.get((thread, ns)) or {
                "configurable": {"thread_id": thread, "checkpoint_ns": ns}
            }
            checkpoint = empty_checkpoint()
            metadata: Any = {"source": "loop", "step": meta_step}
            last = ours.put(config, checkpoint, metadata, {})
            assert theirs.put(config, checkpoint, metadata, {}) == last
            heads[(thread, ns)] = last
        elif action[0] == "write" and last is not None:
            writes = [(action[1], action[2])]
            ours.put_writes(last, writes, "task")
            theirs.put_writes(last, writes, "task")
        elif action[0] == "delete":
            ours.delete_thread(action[1])
            theirs.delete_thread(action[1])
            heads = {k: v for k, v in heads.items() if k[0] != action[1]}
            last = None
    for thread, ns in itertools.product(["a", "b"], ["", "child:1"]):
        config = {"configurable": {"thread_id": thread, "checkpoint_ns": ns}}
        assert _view([ours.get_tuple(config)] if ours.get_tuple(config) else []) == _view(
            [theirs.get_tuple(config)] if theirs.get_tuple(config) else []
        )
        query: dict[str, Any] = {"filter": {"step": step}, "limit": limit}
        assert _view(ours.list(config, **query)) == _view(theirs.list(config, **query))
    assert sorted(_view(ours.list(None)), key=repr) == sorted(_view(theirs.list(None)), key=repr)
    ours.close()


def test_filter_keys_saver_refuses_are_refused_here_too(tmp_path) -> None:
    """As SqliteSaver: a filter key that is not a name or dotted path of names raises
    ValueError "Invalid filter key" (sqlmem's filters never reach SQL; the refusal keeps
    a graph's behaviour the same on either saver), and plain keys still filter."""
    from langgraph.checkpoint.base import empty_checkpoint

    with SqlmemSaver(tmp_path / "memory.db") as saver:
        for access in ("public", "private"):
            config = {"configurable": {"thread_id": f"t-{access}", "checkpoint_ns": ""}}
            saver.put(config, empty_checkpoint(), {"access": access, "user.x": 1}, {})
        found = list(saver.list(None, filter={"access": "public"}))
        assert [t.metadata["access"] for t in found] == ["public"]
        assert len(list(saver.list(None, filter={"user.x": 1}))) == 2
        for key in ("x') OR '1'='1", "'; DROP TABLE checkpoints; --", "a b", ""):
            with pytest.raises(ValueError, match="Invalid filter key"):
                list(saver.list(None, filter={key: "dummy"}))
