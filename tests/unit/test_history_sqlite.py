"""The SQLite history store beyond the shared contract: query plans, the search-off
backfill, concurrency (threads and processes), the archive boundary in the table, and
purge leaving nothing in the FTS index."""

from __future__ import annotations

import itertools
import multiprocessing
import sqlite3
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from sqlmem.config import StoreConfig
from sqlmem.errors import InvalidArgumentError
from sqlmem.records import Message, ToolCall
from sqlmem.sqlite.core.engine import Engine
from sqlmem.sqlite.stores import history_sql as sql
from sqlmem.sqlite.stores.history import SQLiteHistoryStore, index_unsearchable_messages

OpenStore = Callable[..., SQLiteHistoryStore]


@pytest.fixture
def open_store(tmp_path: Path) -> Iterator[OpenStore]:
    """`open_store(path=None, **config)`; every engine is closed when the test ends."""
    engines: list[Engine] = []

    def _open(path: Path | None = None, **config: object) -> SQLiteHistoryStore:
        engine = Engine(
            path or tmp_path / "memory.db",
            StoreConfig(**config),
            hooks=(index_unsearchable_messages,),
        )
        engines.append(engine)
        return SQLiteHistoryStore(engine)

    yield _open
    for engine in engines:
        engine.close()


def engine_of(store: SQLiteHistoryStore) -> Engine:
    return store._engine


T0 = datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=timezone.utc)


def user(text: str) -> Message:
    return Message(role="user", content=text)


def fts_hits(store: SQLiteHistoryStore, phrase: str) -> int:
    with engine_of(store).read() as conn:
        return int(
            conn.execute(
                "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", (f'"{phrase}"',)
            ).get
        )


def fts_integrity_check(store: SQLiteHistoryStore) -> None:
    with engine_of(store).write() as conn:
        conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")


# -- query plans ----------------------------------------------------------------------------


def _plan(store: SQLiteHistoryStore, query: str, args: tuple[object, ...]) -> list[str]:
    with engine_of(store).read() as conn:
        return [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + query, args)]


def test_get_recent_is_an_index_range_scan(open_store: OpenStore) -> None:
    store = open_store()
    plan = _plan(store, sql.SELECT_RECENT, ("s", 50))
    assert any("USING INDEX sqlite_autoindex_sessions_1 (session_id=?)" in p for p in plan)
    assert any("USING INDEX sqlite_autoindex_messages_1 (session=? AND seq>?)" in p for p in plan)
    assert not any(p.startswith("SCAN") or "TEMP B-TREE" in p for p in plan), plan


def test_other_reads_use_indexes(open_store: OpenStore) -> None:
    store = open_store()
    for query, args in [
        (sql.SELECT_ALL_ACTIVE, ("s",)),
        (sql.SELECT_ALL, ("s",)),
        (sql.FIRST_NON_TOOL_AT_OR_BEFORE, (1, 0, 5)),
    ]:
        plan = _plan(store, query, args)
        assert not any(p.startswith("SCAN") or "TEMP B-TREE" in p for p in plan), (query, plan)
    plan = _plan(store, sql.SEARCH_SESSION, ('"x"', "s", 10))
    assert plan[0].startswith("SCAN messages_fts VIRTUAL TABLE"), plan  # FTS drives


def test_search_all_sorts_bm25_inside_the_fts_subquery(open_store: OpenStore) -> None:
    """Exact search over all sessions keeps the best :limit by bm25() in SQLite's sorter,
    inside the FTS subquery, and reads message and session rows for those only. FTS5's
    `ORDER BY rank` measured ~1.5x slower for OR queries on 100,000 rows (p50; see
    tests/unit/test_fact_search.py); the benchmark's raw baseline uses the same shape."""
    store = open_store()
    assert sql.SEARCH_ALL is sql.ANY.bm25 and "rank" not in sql.SEARCH_ALL
    with engine_of(store).read() as conn:
        plan = [
            row[3]
            for row in conn.execute(
                "EXPLAIN QUERY PLAN " + sql.SEARCH_ALL, {"query": '"x"', "limit": 10}
            )
        ]
    assert plan == [
        "CO-ROUTINE r",
        "SCAN messages_fts VIRTUAL TABLE INDEX 0:M1",
        "USE TEMP B-TREE FOR ORDER BY",
        "SCAN r",
        "SEARCH m USING INTEGER PRIMARY KEY (rowid=?)",
        "SEARCH s USING INTEGER PRIMARY KEY (rowid=?)",
    ], plan


def test_open_hook_visits_only_flagged_sessions(open_store: OpenStore) -> None:
    """The backfill at open reads only the sessions table when nothing is pending, and
    otherwise goes through UNIQUE(session, seq) for the flagged sessions."""
    store = open_store()
    store.append_many("s", [user(f"m{i}") for i in range(200)])
    assert _plan(store, sql.ANY_UNINDEXED, ()) == ["SCAN sessions"]
    plan = _plan(store, sql.INDEX_UNSEARCHABLE, ())
    assert plan[0] == "SEARCH messages USING INDEX sqlite_autoindex_messages_1 (session=?)"
    engine = engine_of(store)
    with engine.write() as conn:
        conn.execute("ANALYZE")  # one big session: the planner may now scan messages
    writer = engine._writer
    assert writer is not None
    conn = writer.connection
    seen: list[str] = []
    conn.exec_trace = lambda _cursor, text, _args: seen.append(text) or True
    try:
        index_unsearchable_messages(writer, StoreConfig())
    finally:
        conn.exec_trace = None
    # Nothing pending: no message is read and no write transaction is begun.
    assert seen == [sql.ANY_UNINDEXED], seen


def test_appends_with_search_off_write_no_index_but_the_unique_one(
    open_store: OpenStore,
) -> None:
    """Regression: a partial index over unindexed messages (messages_unsearchable) held
    every row while search was off and cost a page write per append. The pending work
    is now a flag on the session row the append writes anyway."""
    store = open_store(history_search=False)
    with engine_of(store).read() as conn:
        indexes = {
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'messages'"
            )
        }
    assert indexes == {"sqlite_autoindex_messages_1"}
    store.append("a", user("one"))
    store.append_many("b", [user("two"), user("three")])
    store.set_summary("c", "only a summary")
    with engine_of(store).read() as conn:
        flags = dict(conn.execute("SELECT session_id, unindexed FROM sessions").fetchall())
    assert flags == {"a": 1, "b": 1, "c": 0}


def test_get_recent_stays_cheap_on_a_100k_session(open_store: OpenStore) -> None:
    store = open_store()
    with engine_of(store).write() as conn:  # bulk fill in SQL; unindexed to keep it fast
        conn.execute(
            "INSERT INTO sessions(session_id, last_seq, created_at, updated_at) "
            "VALUES ('big', 100000, 0, 0)"
        )
        conn.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000) "
            "INSERT INTO messages(session, seq, role, content, created_at, searchable) "
            "SELECT 1, i, 'user', 'message ' || i, i, 0 FROM n"
        )
    store.get_recent("big", 50)  # warm the reader
    times = []
    for _ in range(30):
        start = time.perf_counter()
        recent = store.get_recent("big", 50)
        times.append(time.perf_counter() - start)
    assert [m.seq for m in recent] == list(range(99951, 100001))
    assert store.count("big") == 100000
    # ~0.2 ms here; a full scan of 100k rows would take tens of milliseconds.
    assert statistics.median(times) < 0.01


# -- history_search off, then on ------------------------------------------------------------


def test_search_off_stores_unindexed_then_backfills_on_open(
    open_store: OpenStore, tmp_path: Path
) -> None:
    path = tmp_path / "off.db"
    off = open_store(path, history_search=False)
    off.append_many("s", [user("hello wombat"), user("我喜欢Python编程")])
    with pytest.raises(InvalidArgumentError, match="history_search"):
        off.search("wombat")
    assert fts_hits(off, "wombat") == 0
    with engine_of(off).read() as conn:
        rows: list[Any] = conn.execute(
            "SELECT searchable, search_text FROM messages ORDER BY seq"
        ).fetchall()
    assert [r[0] for r in rows] == [0, 0]
    assert rows[0][1] is None and rows[1][1] is not None and " 喜 " in rows[1][1]
    engine_of(off).close()

    on = open_store(path, history_search=True)
    assert [m.content for m in on.search("wombat")] == ["hello wombat"]
    assert [m.content for m in on.search("喜欢")] == ["我喜欢Python编程"]
    with engine_of(on).read() as conn:
        assert conn.execute("SELECT count(*) FROM messages WHERE searchable = 0").get == 0
        assert conn.execute("SELECT count(*) FROM sessions WHERE unindexed").get == 0
    fts_integrity_check(on)


def test_backfill_leaves_sessions_written_with_search_on_alone(
    open_store: OpenStore, tmp_path: Path
) -> None:
    """Only flagged sessions are backfilled; a session appended to in both modes gets its
    unindexed messages indexed once, and its indexed ones are not indexed twice."""
    path = tmp_path / "mixed.db"
    on = open_store(path)
    on.append("both", user("indexed wombat"))
    on.append("only-on", user("indexed koala"))
    engine_of(on).close()
    off = open_store(path, history_search=False)
    off.append("both", user("unindexed wombat"))
    off.append("only-off", user("unindexed koala"))
    engine_of(off).close()
    again = open_store(path)
    assert sorted(m.content for m in again.search("wombat")) == [
        "indexed wombat",
        "unindexed wombat",
    ]
    assert sorted(m.content for m in again.search("koala")) == ["indexed koala", "unindexed koala"]
    assert fts_hits(again, "wombat") == 2
    fts_integrity_check(again)


def test_score_is_negated_fts5_bm25(open_store: OpenStore) -> None:
    store = open_store()
    store.append_many("s", [user("red apple"), user("green apple pie"), user("red red car")])
    hits = store.search("red apple")
    with engine_of(store).read() as conn:
        raw: list[Any] = [
            row[0]
            for row in conn.execute(
                "SELECT bm25(messages_fts) FROM messages_fts "
                'WHERE messages_fts MATCH \'"red" OR "apple"\''
            )
        ]
    assert [m.score for m in hits] == sorted((-v for v in raw), reverse=True)


# -- concurrency -----------------------------------------------------------------------------


def test_threads_share_sessions_without_losing_or_repeating_seqs(open_store: OpenStore) -> None:
    store = open_store()
    sessions = ["s0", "s1", "s2"]
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def work(worker: int) -> None:
        try:
            start.wait()
            for i in range(200):
                store.append(sessions[i % 3], user(f"w{worker}-{i}"))
                if i % 50 == 0:
                    store.get_recent(sessions[i % 3], 5)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    seen: set[str] = set()
    for sid in sessions:
        messages = store.get_all(sid)
        assert [m.seq for m in messages] == list(range(1, len(messages) + 1))
        assert store.count(sid) == len(messages)
        seen.update(m.content for m in messages)
    assert seen == {f"w{w}-{i}" for w in range(8) for i in range(200)}


def _process_worker(path: str, worker: int, rounds: int) -> None:
    """Runs in a spawned process: appends singly and in batches to shared sessions."""
    engine = Engine(Path(path), StoreConfig(busy_timeout_ms=30_000))
    store = SQLiteHistoryStore(engine)
    try:
        for i in range(rounds):
            sid = f"s{i % 2}"
            if i % 3 == 0:
                store.append_many(sid, [user(f"p{worker}-{i}-a"), user(f"p{worker}-{i}-b")])
            else:
                store.append(sid, user(f"p{worker}-{i}"))
    finally:
        engine.close()


@pytest.mark.slow
def test_processes_append_to_one_file(open_store: OpenStore, tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    store = open_store(path)  # creates and migrates the file first
    rounds = 250
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_process_worker, args=(str(path), w, rounds)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    expected = set()
    for w in range(3):
        for i in range(rounds):
            if i % 3 == 0:
                expected |= {f"p{w}-{i}-a", f"p{w}-{i}-b"}
            else:
                expected.add(f"p{w}-{i}")
    seen: list[str] = []
    for sid in ("s0", "s1"):
        messages = store.get_all(sid)
        assert [m.seq for m in messages] == list(range(1, len(messages) + 1))
        seen.extend(m.content for m in messages)
        # a batch is contiguous: its two messages got consecutive seqs
        for m, nxt in itertools.pairwise(messages):
            if m.content.endswith("-a"):
                assert nxt.content == m.content[:-1] + "b"
    assert len(seen) == len(expected) and set(seen) == expected


# -- the archive boundary and max_history_len --------------------------------------------


def _session_row(store: SQLiteHistoryStore, sid: str) -> tuple[int, int]:
    with engine_of(store).read() as conn:
        row: Any = conn.execute(
            "SELECT last_seq, archived_seq FROM sessions WHERE session_id = ?", (sid,)
        ).fetchall()[0]
    return int(row[0]), int(row[1])


def test_compaction_moves_the_boundary_without_rewriting_rows(open_store: OpenStore) -> None:
    store = open_store()
    store.append_many("s", [user(str(i)) for i in range(10)])
    with engine_of(store).read() as conn:
        before = conn.execute("SELECT * FROM messages ORDER BY pk").fetchall()
    assert store.compact("s", 3, summary="sum") == 7
    assert _session_row(store, "s") == (10, 7)
    with engine_of(store).read() as conn:
        assert conn.execute("SELECT * FROM messages ORDER BY pk").fetchall() == before


def test_compact_inside_a_failed_outer_transaction_changes_nothing(open_store: OpenStore) -> None:
    store = open_store()
    store.append_many("s", [user(str(i)) for i in range(5)])
    with pytest.raises(RuntimeError), engine_of(store).write():
        store.compact("s", 1, summary="never")  # nested: a savepoint of the outer one
        raise RuntimeError("the caller's transaction fails")
    assert store.get_summary("s") == "" and store.count("s") == 5


def test_max_history_len_moves_the_boundary(open_store: OpenStore) -> None:
    store = open_store(max_history_len=4)
    store.append_many("s", [user(str(i)) for i in range(10)])
    assert _session_row(store, "s") == (10, 6)
    store.append("s", user("10"))
    assert _session_row(store, "s") == (11, 7)
    assert [m.content for m in store.search("7")] == ["7"]  # archived rows stay indexed


def test_tool_calls_are_stored_as_json_text(open_store: OpenStore) -> None:
    store = open_store()
    store.append(
        "s",
        Message(role="assistant", tool_calls=[ToolCall(id="1", name="f", arguments='{"a":1}')]),
    )
    store.append("s", user("plain"))
    with engine_of(store).read() as conn:
        rows = conn.execute("SELECT tool_calls, metadata FROM messages ORDER BY seq").fetchall()
    assert rows == [('[{"id":"1","name":"f","arguments":"{\\"a\\":1}"}]', "{}"), ("[]", "{}")]


# -- purge -----------------------------------------------------------------------------------


def test_purge_leaves_nothing_in_tables_or_index(open_store: OpenStore, tmp_path: Path) -> None:
    store = open_store()
    store.append_many("gone", [user("xylophone secret"), user("用户喜欢跑步 xylophone")])
    store.compact("gone", 1, summary="xylophone summary")
    store.append("kept", user("kept words"))
    assert fts_hits(store, "xylophone") == 2
    store.purge("gone")
    assert fts_hits(store, "xylophone") == 0
    assert fts_hits(store, "跑 步") == 0
    fts_integrity_check(store)
    with engine_of(store).read() as conn:
        assert conn.execute("SELECT count(*) FROM messages").get == 1
        assert conn.execute("SELECT session_id FROM sessions").fetchall() == [("kept",)]
    # An independent reader (stdlib sqlite3) sees no posting of the purged words.
    other = sqlite3.connect(tmp_path / "memory.db")
    try:
        other.execute(
            "CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, 'messages_fts', 'row')"
        )
        terms = {row[0] for row in other.execute("SELECT term FROM temp.vocab")}
    finally:
        other.close()
    assert terms == {"kept", "word"}


def test_no_apsw_error_leaves_the_store(open_store: OpenStore) -> None:
    store = open_store()
    engine_of(store).close()
    from sqlmem.errors import StoreClosedError

    with pytest.raises(StoreClosedError):
        store.append("s", user("x"))
    with pytest.raises(StoreClosedError):
        store.get_recent("s", 1)


def test_chunk_sizes() -> None:
    assert sql.chunk_sizes(0) == []
    assert sql.chunk_sizes(1) == [1]
    assert sql.chunk_sizes(7) == [7]  # a turn's messages: one statement, one FTS5 flush
    assert sql.chunk_sizes(32) == [32]
    assert sql.chunk_sizes(100) == [64, 32, 4]
    assert sql.chunk_sizes(128) == [128]
    assert sql.chunk_sizes(300) == [128, 128, 32, 12]
    sizes = set()
    for n in range(1, 600):
        assert sum(sql.chunk_sizes(n)) == n
        sizes.update(sql.chunk_sizes(n))
    # Few distinct INSERT texts, so bulk loads keep apsw's statement cache (100) useful.
    assert sizes == set(range(1, sql.EXACT_CHUNK_ROWS + 1)) | {64, 128}


def test_plain_and_full_inserts_store_identical_rows(open_store: OpenStore) -> None:
    """A text-only message is inserted binding fewer columns, leaving the rest to the
    schema's defaults: the stored row must be exactly the one the full INSERT writes
    (same values, same storage types), alone, batched, with search on or off."""
    rich = Message(role="user", content="rich", name="n")
    texts = [
        Message(role="user", content="hello world"),
        Message(role="assistant", content="中文测试 mixed", created_at=T0),
        Message(role="system", content=""),
    ]
    columns = (
        "role, content, name, tool_call_id, tool_calls, is_error, metadata, created_at, "
        "searchable, search_text"
    )
    typed = ", ".join(f"m.{c}, typeof(m.{c})" for c in columns.split(", "))
    for search in (True, False):
        store = open_store(history_search=search)
        store.append_many("plain", texts)  # plain shape, one INSERT
        store.append_many("full", [*texts, rich])  # full shape: a rich message in the batch
        for message in texts:
            store.append("one", message)  # plain shape, the single-row INSERT
        with engine_of(store).read() as conn:
            rows = {
                session: conn.execute(
                    f"SELECT {typed} FROM messages AS m JOIN sessions AS s ON s.pk = m.session"
                    " WHERE s.session_id = ? ORDER BY m.seq LIMIT 3",
                    (session,),
                ).fetchall()
                for session in ("plain", "full", "one")
            }
        # created_at of "now" rows differs between calls; the T0 row must match exactly.
        now_free = {k: [r[:14] + r[16:] for r in v] for k, v in rows.items()}
        assert now_free["plain"] == now_free["full"] == now_free["one"]
        assert rows["plain"][1] == rows["full"][1] == rows["one"][1]
        assert rows["plain"][0][4:10] == ("", "text", "", "text", "[]", "text")
        engine_of(store).close()


# -- search on large histories: the shared rare/common shortcut (sqlmem.sqlite.stores.fts_any) ---


def _exact_or(store: SQLiteHistoryStore, words: list[str]) -> dict[int, float]:
    """pk -> negated bm25 of the exact OR query, straight from FTS5."""
    query = " OR ".join(f'"{w}"' for w in words)
    with engine_of(store).read() as conn:
        return {
            int(pk): -float(score)
            for pk, score in conn.execute(
                "SELECT rowid, bm25(messages_fts) FROM messages_fts WHERE messages_fts MATCH ?",
                (query,),
            )
        }


def _pk_of(store: SQLiteHistoryStore, message: Message) -> int:
    with engine_of(store).read() as conn:
        return int(
            conn.execute(
                "SELECT m.pk FROM messages AS m JOIN sessions AS s ON s.pk = m.session"
                " WHERE s.session_id = ? AND m.seq = ?",
                (message.session_id, message.seq),
            ).get
        )


def test_large_history_search_uses_the_rare_word_shortcut(
    open_store: OpenStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """3,000 messages stand in for a large history ('the' in every other, 'zebra' in 12):
    "the zebra" ranks only the zebra messages, with their exact OR scores."""
    from sqlmem.sqlite.stores import fts_any

    store = open_store()

    def text(i: int) -> str:
        words = [f"w{i % 37}", f"w{i % 11}"]
        words += ["the"] if i % 2 else []
        words += ["zebra"] if i % 250 == 7 else []
        return " ".join(words)

    for s in range(3):
        store.append_many(f"s{s}", [user(text(i)) for i in range(s * 1000, (s + 1) * 1000)])
    monkeypatch.setattr(fts_any, "EXACT_BELOW", 1000)
    monkeypatch.setattr(fts_any, "RARE_SHARE", 0.01)  # scaled with the table: zebra is rare
    ran: list[str] = []
    real_run = fts_any._run
    monkeypatch.setattr(fts_any, "_run", lambda c, t, p: ran.append(t) or real_run(c, t, p))
    hits = store.search("the zebra", top_k=10)
    assert ran == [sql.ANY.bm25, sql.ANY.bm25]  # AND, then the rare word's OR; no fallback
    assert len(hits) == 10 and all("zebra" in m.content for m in hits)
    exact = _exact_or(store, ["the", "zebra"])
    for m in hits:
        assert m.score == pytest.approx(exact[_pk_of(store, m)], rel=1e-9)
        assert m.session_id in {"s0", "s1", "s2"}
    assert [m.score for m in hits] == sorted((m.score for m in hits), reverse=True)

    ran.clear()  # within one session: the exact query, as for filtered fact searches
    in_session = store.search("the zebra", session_id="s1", top_k=3)
    assert ran == []
    best = sorted((score for pk, score in exact.items() if 1000 < pk <= 2000), reverse=True)[:3]
    assert [m.score for m in in_session] == pytest.approx(best, rel=1e-9)


def test_small_history_search_is_exact(open_store: OpenStore) -> None:
    store = open_store()
    store.append_many(
        "s", [user(f"the w{i % 13}{' zebra' if i % 7 == 0 else ''}") for i in range(300)]
    )
    exact = sorted(_exact_or(store, ["the", "zebra"]).values(), reverse=True)[:20]
    assert [m.score for m in store.search("the zebra", top_k=20)] == pytest.approx(exact, rel=1e-12)
