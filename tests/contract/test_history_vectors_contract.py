"""History by meaning on every backend (SQLite, the in-memory twin, PostgreSQL): vectors
stored with their messages, computed outside the write lock, cached by content; search
modes "vector" and "hybrid" with the facts' semantics under the session filter; an
embedder's failure never costs a message; embed_pending; forgetting."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hybrid_oracle import expected_hybrid

import sqlmem
from sqlmem import InvalidArgumentError, Message, ToolCall
from sqlmem.embedders import HashEmbedder, WordLlamaEmbedder
from sqlmem.protocols import HistoryStore
from sqlmem.rules.history_modes import vector_text
from sqlmem.search.vectors import checked_rows, hybrid_leg_size


class CountingEmbedder:
    """HashEmbedder that counts the texts it embeds and can be told to fail or misbehave."""

    def __init__(self, dim: int = 32, model: str | None = None) -> None:
        self.inner = HashEmbedder(dim)
        self.model = model or self.inner.model
        self.texts: list[str] = []
        self.mode = "ok"
        self.on_call: Callable[[], None] | None = None

    def embed(self, texts: Sequence[str]) -> Any:
        if self.on_call is not None:
            self.on_call()
        self.texts.extend(texts)
        out = self.inner.embed(texts)
        if self.mode == "raise":
            raise ConnectionError("embedding API down")
        if self.mode == "nan":
            out[:] = np.nan
        if self.mode == "inf":
            out[:, 0] = np.inf
        if self.mode == "float64":
            return out.astype(np.float64)
        if self.mode == "short":
            return out[:-1]
        if self.mode == "list":
            return out.tolist()
        if self.mode == "flat":
            return out.reshape(-1)
        return out


class Opened:
    """A database of one backend: `.history`, `missing()` (messages without vectors), and
    `reopen(embedder)`: the same database under another embedder (None for the twin)."""

    def __init__(self, kind: str, db: Any, reopen: Callable[[Any], Opened] | None = None) -> None:
        self.kind = kind
        self.db = db
        self.history: HistoryStore = db.history
        self.reopen = reopen

    def missing(self) -> int:
        if self.kind == "memory":
            return int(self.db.history.without_vectors())
        return int(self.db.stats()["messages_without_vectors"])


Make = Callable[..., Opened]


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Make]:
    """`make(embedder)`: a database of the parametrised kind with that embedder."""
    opened: list[Any] = []

    def build(embedder: Any = None, **config: Any) -> Opened:
        cfg = sqlmem.StoreConfig(**config)
        if request.param == "memory":
            return Opened("memory", sqlmem.inmemory.open(cfg, embedder=embedder))
        if request.param == "postgres":
            from pgserver import new_agent_id

            from sqlmem import postgres

            dsn, agent = request.getfixturevalue("pg_dsn"), new_agent_id()

            def pg_open(embedder: Any) -> Opened:
                pg = postgres.open(dsn, agent, cfg, embedder=embedder, pool_size=2)
                opened.append(pg)
                return Opened("postgres", pg, pg_open)

            return pg_open(embedder)
        path = tmp_path / f"m{len(opened)}.db"

        def sqlite_open(embedder: Any) -> Opened:
            db = sqlmem.open(path, cfg, embedder=embedder)
            opened.append(db)
            return Opened("sqlite", db, sqlite_open)

        return sqlite_open(embedder)

    yield build
    for db in opened:
        db.close()


#: The time of the test messages: a message's vector is of its text after its date
#: (`rules.history_modes.vector_text`), so a fixed one keeps the expected texts fixed.
WHEN = datetime(2026, 3, 14, 9, 30, tzinfo=timezone.utc)


def _user(text: str) -> Message:
    return Message(role="user", content=text, created_at=WHEN)


def _stored(text: str, name: str = "") -> str:
    """What the embedder is given for a test message of `text`."""
    return vector_text(text, name, WHEN)


def _keys(messages: Sequence[Message]) -> list[tuple[str | None, int | None]]:
    return [(m.session_id, m.seq) for m in messages]


def _cos(embedder: Any, a: str, b: str) -> float:
    x, y = checked_rows(embedder.embed([a, b]), 2)
    assert x is not None and y is not None
    return float(x @ y)


TEXTS = ["green tea please", "the sea is blue", "tea with apple", "fast red car", "blue sky"]


def test_vector_search_ranks_by_cosine_within_the_session(make: Make) -> None:
    embedder = CountingEmbedder()
    history = make(embedder).history
    history.append_many("a", [_user(t) for t in TEXTS])
    history.append("b", _user("green tea"))
    found = history.search("green tea", mode="vector", top_k=3)
    expected = sorted(
        [("a", i + 1, _cos(embedder, "green tea", _stored(t))) for i, t in enumerate(TEXTS)]
        + [("b", 1, _cos(embedder, "green tea", _stored("green tea")))],
        key=lambda x: -x[2],
    )[:3]
    assert [(m.session_id, m.seq) for m in found] == [(s, q) for s, q, _ in expected]
    assert [m.score for m in found] == pytest.approx([c for _, _, c in expected], abs=1e-6)
    assert found[0].content == "green tea" and found[0].role == "user"
    in_a = history.search("green tea", mode="vector", session_id="a", top_k=10)
    assert {m.session_id for m in in_a} == {"a"}
    assert len(in_a) == len(TEXTS)
    assert history.search("green tea", mode="vector", session_id="nobody") == []


def test_hybrid_fuses_the_rankings_and_lifts_each_turn_by_its_neighbours(make: Make) -> None:
    history = make(CountingEmbedder()).history
    history.append_many("a", [_user(t) for t in TEXTS * 3])
    history.append_many("b", [_user("nothing here"), _user("blue tea"), _user("at all")])
    history.pop("a")  # a gap at the end of "a"
    for session in (None, "a", "b"):
        for top_k in (1, 4, 30):
            depth = hybrid_leg_size(top_k)
            lexical = history.search("blue tea", session_id=session, top_k=depth)
            semantic = history.search("blue tea", mode="vector", session_id=session, top_k=depth)
            want = expected_hybrid(_keys(lexical), _keys(semantic), top_k)
            got = history.search("blue tea", mode="hybrid", session_id=session, top_k=top_k)
            assert _keys(got) == [key for key, _ in want]
            assert [m.score for m in got] == pytest.approx([s for _, s in want])


def test_the_reply_after_a_matching_turn_is_found_by_hybrid(make: Make) -> None:
    """The answer is often the turn after the one that matched: hybrid returns it right
    after the match, though it shares no word with the question."""
    history = make(CountingEmbedder()).history
    history.append_many(
        "chat",
        [
            _user("how was the support group?"),
            _user("yesterday, it was so powerful"),
            _user("unrelated words"),
            _user("more filler"),
        ],
    )
    found = _keys(history.search("support group", mode="hybrid", top_k=2))
    assert found == [("chat", 1), ("chat", 2)]
    assert ("chat", 2) not in _keys(history.search("support group", top_k=10))


def test_archived_messages_are_found_by_meaning_too(make: Make) -> None:
    history = make(CountingEmbedder()).history
    history.append_many("a", [_user(t) for t in TEXTS])
    history.compact("a", keep_last=1)
    assert len(history.search("tea", mode="vector", top_k=10)) == len(TEXTS)
    assert {m.seq for m in history.search("green tea", mode="hybrid", top_k=10)} >= {1, 3}


def test_the_modes_need_an_embedder_and_are_checked(make: Make) -> None:
    history = make().history
    history.append("a", _user("hello"))
    for mode in ("vector", "hybrid"):
        with pytest.raises(InvalidArgumentError, match="embedder"):
            history.search("hello", mode=mode)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="embedder"):
        history.embed_pending()
    with pytest.raises(InvalidArgumentError, match="mode"):
        history.search("hello", mode="all")  # type: ignore[arg-type]
    assert [m.content for m in history.search("hello", mode="any")] == ["hello"]
    with_vectors = make(CountingEmbedder()).history
    with pytest.raises(InvalidArgumentError, match="mode"):
        with_vectors.search("hello", mode="raw")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="batch_size"):
        with_vectors.embed_pending(batch_size=0)


def test_odd_queries_and_limits(make: Make) -> None:
    history = make(CountingEmbedder()).history
    history.append("a", _user("words here"))
    for mode in ("vector", "hybrid"):
        assert history.search("words", mode=mode, top_k=0) == []  # type: ignore[arg-type]
        assert history.search("   ", mode=mode) == []  # type: ignore[arg-type]
    assert history.search("!!!", mode="vector") == []  # no words: a zero query vector
    assert [m.content for m in history.search("!!! words", mode="hybrid")] == ["words here"]


@pytest.mark.parametrize("failure", ["raise", "nan", "inf", "float64", "short", "list", "flat"])
def test_a_failing_embedder_never_costs_a_message(
    make: Make, failure: str, caplog: pytest.LogCaptureFixture
) -> None:
    embedder = CountingEmbedder()
    opened = make(embedder)
    history = opened.history
    embedder.mode = failure
    with caplog.at_level(logging.WARNING, logger="sqlmem"):
        assert history.append("a", _user("first words")) == 1
        assert history.append_many("a", [_user("second words"), _user("third")]) == [2, 3]
    assert "embedder" in caplog.text
    assert [m.content for m in history.get_all("a")] == ["first words", "second words", "third"]
    assert opened.missing() == 3
    assert history.search("words", mode="vector") == []
    assert len(history.search("words", mode="hybrid")) == 2  # through BM25 alone
    embedder.mode = "ok"
    progress: list[tuple[int, int]] = []
    assert history.embed_pending(batch_size=2, progress=lambda d, t: progress.append((d, t))) == 3
    assert progress[-1] == (3, 3)
    assert opened.missing() == 0
    assert history.embed_pending() == 0
    assert history.search("third", mode="vector", top_k=1)[0].content == "third"


def test_messages_without_text_need_no_vector(make: Make) -> None:
    embedder = CountingEmbedder()
    opened = make(embedder)
    call = ToolCall(id="c1", name="lookup", arguments="{}")
    opened.history.append_many(
        "a",
        [
            Message(role="assistant", content="", tool_calls=[call]),
            Message(role="tool", content="sunny", tool_call_id="c1", created_at=WHEN),
        ],
    )
    assert embedder.texts == [_stored("sunny")]
    assert opened.missing() == 0
    assert [m.seq for m in opened.history.search("sunny", mode="vector")] == [2]


def test_identical_text_is_embedded_once(make: Make) -> None:
    embedder = CountingEmbedder()
    history = make(embedder).history
    history.append_many("a", [_user("ok"), _user("thanks"), _user("ok")])
    history.append("b", _user("ok"))
    assert sorted(embedder.texts) == sorted([_stored("ok"), _stored("thanks")])
    assert len(history.search("ok", mode="vector", top_k=10)) == 4


def test_vectors_of_another_model_count_as_missing(make: Make) -> None:
    first = make(CountingEmbedder(model="model-a"))
    first.history.append_many("a", [_user("one thing"), _user("another thing")])
    if first.reopen is None:
        pytest.skip("a twin's vectors live and die with its one embedder")
    second = first.reopen(CountingEmbedder(model="model-b"))
    assert second.missing() == 2
    assert second.history.search("thing", mode="vector") == []  # the old model's: unused
    assert second.history.embed_pending() == 2
    assert second.missing() == 0
    assert len(second.history.search("thing", mode="vector")) == 2
    assert first.missing() == 2  # model-a's view: replaced


def test_pop_and_purge_forget_the_vectors(make: Make) -> None:
    opened = make(CountingEmbedder())
    history = opened.history
    history.append_many("a", [_user("alpha tea"), _user("beta tea")])
    history.append("b", _user("gamma tea"))
    popped = history.pop("a")
    assert popped is not None and popped.content == "beta tea"
    history.purge("b")
    found = history.search("tea", mode="vector", top_k=10)
    assert [m.content for m in found] == ["alpha tea"]
    assert [m.content for m in history.search("tea", mode="hybrid", top_k=10)] == ["alpha tea"]
    if opened.kind == "sqlite":
        with opened.db.engine.read() as conn:
            rows = conn.execute("SELECT count(*) FROM message_vectors").fetchall()
        assert rows[0][0] == 1
    history.append("a", _user("delta tea"))  # seq 3: a popped seq is never reused
    assert _keys(history.search("delta", mode="vector", top_k=1)) == [("a", 3)]


def test_the_model_runs_outside_the_write_lock_on_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    embedder = CountingEmbedder()
    with (
        sqlmem.open(path, embedder=embedder) as db,
        sqlmem.open(path, sqlmem.StoreConfig(busy_timeout_ms=0)) as other,
    ):
        written: list[int] = []
        embedder.on_call = lambda: written.append(other.history.append("x", _user("meanwhile")))
        db.history.append("s", _user("one"))
        db.history.append_many("s", [_user("two"), _user("three")])
        with db.atomic():
            pass
        assert written == [1, 2]  # another writer got through during each embedding
        assert db.stats()["messages_without_vectors"] == 2  # the other writer's


def test_the_model_runs_outside_the_twins_lock() -> None:
    embedder = CountingEmbedder()
    db = sqlmem.inmemory.open(embedder=embedder)
    got: list[bool] = []

    def try_lock() -> None:
        def other() -> None:
            acquired = db.history._lock.acquire(blocking=False)
            if acquired:
                db.history._lock.release()
            got.append(acquired)

        thread = threading.Thread(target=other)
        thread.start()
        thread.join()

    embedder.on_call = try_lock
    db.history.append("s", _user("one"))
    db.history.append_many("s", [_user("two")])
    assert got == [True, True]


def test_the_model_runs_outside_the_write_transaction_on_postgres(pg_dsn: str) -> None:
    from pgserver import new_agent_id

    from sqlmem import postgres

    agent = new_agent_id()
    embedder = CountingEmbedder()
    with (
        postgres.open(pg_dsn, agent, embedder=embedder, pool_size=2) as db,
        postgres.open(pg_dsn, agent, sqlmem.StoreConfig(busy_timeout_ms=200), pool_size=1) as other,
    ):
        written: list[int] = []
        embedder.on_call = lambda: written.append(other.history.append("s", _user("meanwhile")))
        assert db.history.append("s", _user("one")) == 2
        assert db.history.append_many("s", [_user("two"), _user("three")]) == [4, 5]
        assert written == [1, 3]


def test_wordllama_finds_a_turn_bm25_cannot(make: Make) -> None:
    history = make(WordLlamaEmbedder()).history
    history.append_many(
        "chat",
        [
            _user("The user is vegetarian."),
            _user("The user lives in Berlin."),
            _user("Deploy with make"),
        ],
    )
    assert history.search("what do I eat?", mode="any") == []
    for mode in ("vector", "hybrid"):
        top = history.search("what do I eat?", mode=mode, top_k=1)  # type: ignore[arg-type]
        assert top[0].content == "The user is vegetarian."


def test_a_session_being_purged_is_never_found_by_meaning(tmp_path: Path) -> None:
    """A large purge detaches the session first and deletes its rows in chunks; what a
    crash leaves between the two must not be found (nor counted as missing vectors)."""
    from sqlmem.sqlite.stores import history_sql

    with sqlmem.open(tmp_path / "m.db", embedder=CountingEmbedder()) as db:
        db.history.append_many("gone", [_user("green tea"), _user("blue sea")])
        db.history.append("kept", _user("green apple"))
        with db.engine.write() as conn:  # as a purge interrupted after its first step
            pk = conn.execute("SELECT pk FROM sessions WHERE session_id = 'gone'").fetchall()
            conn.execute(history_sql.DETACH_SESSION, (pk[0][0], 0))
        for mode in ("vector", "hybrid"):
            found = db.history.search("green tea sea", mode=mode, top_k=10)  # type: ignore[arg-type]
            assert [(m.session_id, m.seq) for m in found] == [("kept", 1)]
        assert db.stats()["messages_without_vectors"] == 0
        db.history.purge("kept")  # finishes the interrupted purge too
        with db.engine.read() as conn:
            assert conn.execute("SELECT count(*) FROM message_vectors").fetchall()[0][0] == 0
