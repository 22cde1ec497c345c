"""The per-turn read (issue 22): get_recent and get_all read `history_sql.READ_COLUMNS`
(a text-only message as four values and a NULL, any other with its five other fields in
one JSON array) and build records with `rules.rows.messages_from_read_rows`.

The records must be exactly what the full column list gives (`MESSAGE_COLUMNS` through
`messages_from_rows`, the shape pop, around and search still read), and behave as any
Message a user builds: equality, repr, model_dump, JSON, pickling, copies, validation of
a rebuilt one, and containers owned by each record.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlmem
from sqlmem import Message, ToolCall
from sqlmem.rules import rows as row_builders
from sqlmem.rules.encoding import dt_from_ms
from sqlmem.sqlite.stores import history_sql as sql

OpenDB = Callable[..., sqlmem.MemoryDB]

# Text that JSON must escape or that SQLite's json() must carry through untouched.
TEXTS = ["", "a", "\x00", "a\x00b", "\u2028", '"\\/', "\x1f", "😀", "naïve 跑步", "{}", "[]"]
json_scalar = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(TEXTS)
)
json_value = st.recursive(
    json_scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(TEXTS), inner),
    max_leaves=6,
)


@st.composite
def messages(draw: st.DrawFn) -> Message:
    plain = draw(st.booleans())  # half of them text only, the read's fast case
    return Message(
        role=draw(st.sampled_from(["user", "assistant", "tool", "system"])),
        content=draw(st.sampled_from(TEXTS)),
        name="" if plain else draw(st.sampled_from(TEXTS)),
        tool_call_id="" if plain else draw(st.sampled_from(TEXTS)),
        tool_calls=[]
        if plain
        else draw(
            st.lists(
                st.builds(
                    ToolCall,
                    id=st.sampled_from(TEXTS),
                    name=st.sampled_from(TEXTS),
                    arguments=st.sampled_from(TEXTS),
                ),
                max_size=2,
            )
        ),
        is_error=False if plain else draw(st.booleans()),
        metadata={} if plain else draw(st.dictionaries(st.sampled_from(TEXTS), json_value)),
        created_at=dt_from_ms(draw(st.integers(0, 2**42))),
    )


def _full_rows(db: sqlmem.MemoryDB, session_id: str) -> list[Message]:
    """The same messages through MESSAGE_COLUMNS and `messages_from_rows`."""
    with db._engine.read() as conn:
        rows = conn.execute(sql.SELECT_ALL, (session_id,)).fetchall()
    return row_builders.messages_from_rows(rows, session_id)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batch=st.lists(messages(), min_size=1, max_size=8))
def test_read_rows_equal_the_full_column_read(open_db: OpenDB, batch: list[Message]) -> None:
    db = open_db()
    db.history.purge("s")
    seqs = db.history.append_many("s", batch)
    want = _full_rows(db, "s")
    for got in (
        db.history.get_all("s"),
        db.history.get_all("s", include_archived=True),
        db.history.get_recent("s", len(batch), pair_safe=False),
    ):
        assert got == want
        assert [repr(m) for m in got] == [repr(m) for m in want]
        assert [m.model_dump() for m in got] == [m.model_dump() for m in want]
        assert [m.model_dump_json() for m in got] == [m.model_dump_json() for m in want]
    for sent, read, seq in zip(batch, db.history.get_all("s"), seqs, strict=True):
        assert read.model_copy(update={"seq": None, "session_id": None}) == sent
        assert read.seq == seq and read.session_id == "s" and read.score is None


@pytest.mark.parametrize("fast", [True, False])
def test_read_rows_builder_and_its_fallback(fast: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both shapes of a row, through the inlined builder and its model_construct fallback
    (used when a pydantic release changed the internals the fast path sets)."""
    monkeypatch.setattr(row_builders, "_FAST", fast)
    extra = '["n","x",[{"id":"x","name":"f","arguments":"{}"}],1,{"k":[1,{"z":null}]}]'
    got = row_builders.messages_from_read_rows(
        [(3, "tool", "c", 5, extra), (4, "user", "hi", 1_795_000_000_123, None)], "s"
    )
    full = row_builders.messages_from_rows(
        [
            (3, "tool", "c", "n", "x", '[{"id":"x","name":"f","arguments":"{}"}]', 1,
             '{"k":[1,{"z":null}]}', 5),
            (4, "user", "hi", "", "", "[]", 0, "{}", 1_795_000_000_123),
        ],
        "s",
    )  # fmt: skip
    assert got == full
    assert [repr(m) for m in got] == [repr(m) for m in full]
    assert got[0].tool_calls == [ToolCall(id="x", name="f", arguments="{}")]
    assert got[0].is_error is True and got[1].is_error is False
    assert all(m.model_fields_set == set(Message.model_fields) for m in got)


def test_read_records_behave_as_built_ones(open_db: OpenDB) -> None:
    """A record read back is a Message in every way a user can tell."""
    db = open_db()
    sent = [
        Message(role="user", content="plain"),
        Message(
            role="assistant",
            content="",
            tool_calls=[ToolCall(id="c1", name="f", arguments='{"a": 1}')],
            metadata={"k": [1, {"x": None}], "big": 2**63 - 1},
        ),
        Message(role="tool", content="r", tool_call_id="c1", is_error=True),
    ]
    db.history.append_many("s", sent)
    read = db.history.get_recent("s", 10)
    assert all(type(m) is Message for m in read)
    for m in read:
        assert pickle.loads(pickle.dumps(m)) == m
        assert copy.deepcopy(m) == m and copy.copy(m) == m
        assert Message.model_validate_json(m.model_dump_json()) == m
        assert Message(**m.model_dump()) == m  # a rebuilt record validates and is equal
    # Each record owns its containers: changing one read never shows in another.
    again = db.history.get_recent("s", 10)
    read[0].metadata["x"] = 1
    read[0].tool_calls.append(read[1].tool_calls[0])
    read[1].metadata["k"].append(2)
    read[1].model_fields_set.discard("role")
    assert again[0].metadata == {} and again[0].tool_calls == []
    assert again[1].metadata == {"k": [1, {"x": None}], "big": 2**63 - 1}
    assert again[1].model_fields_set == set(Message.model_fields)
    # Validation still applies when a user changes a read record into a new one.
    with pytest.raises(sqlmem.InvalidArgumentError, match=r"Message\.role"):
        Message(**{**read[0].model_dump(), "role": "robot"})


def test_read_statements_use_the_window_index(open_db: OpenDB) -> None:
    """The lean statements keep SELECT_RECENT's plan, also after ANALYZE has seen a file
    with one session (tests/unit/test_hot_paths.py says why that matters)."""
    db = open_db()
    db.history.append_many("only", [Message(role="user", content=f"m{i}") for i in range(300)])
    with db._engine.write() as conn:
        conn.execute("ANALYZE")
    for query, args in [
        (sql.READ_RECENT, ("only", 50)),
        (sql.READ_ALL_ACTIVE, ("only",)),
        (sql.READ_ALL, ("only",)),
    ]:
        with db._engine.read() as conn:
            plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + query, args)]
        assert any("sqlite_autoindex_messages_1 (session=?" in p for p in plan), plan
        assert not any(p.startswith("SCAN") or "TEMP B-TREE" in p for p in plan), plan
    assert sql.READ_RECENT.replace(sql.READ_COLUMNS, sql.MESSAGE_COLUMNS) == sql.SELECT_RECENT
    assert sql.READ_ALL.replace(sql.READ_COLUMNS, sql.MESSAGE_COLUMNS) == sql.SELECT_ALL
