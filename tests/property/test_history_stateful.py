"""The SQLite history store and its in-memory twin, driven through the same random steps,
must agree on every answer (SPEC section 7).

Search must return the same set of matches; since the twin computes FTS5's own BM25, the
scores agree too (up to float rounding), so only the order among equal scores may differ.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from pgserver import new_agent_id

from sqlmem.config import StoreConfig
from sqlmem.inmemory.history import InMemoryHistoryStore
from sqlmem.records import Message, Role, ToolCall, dt_from_ms
from sqlmem.sqlite.core.engine import Engine
from sqlmem.sqlite.stores.history import SQLiteHistoryStore, index_unsearchable_messages

SESSIONS = ["a", "b", "telegram:12345:"]

# Stems, case, diacritics, CJK runs (with repeats, for overlapping phrase hits), symbols.
WORDS = [
    "apple", "apples", "run", "running", "runs", "dog", "DOG", "the", "naïve", "naive",
    "跑步", "喜欢", "跑", "哈哈哈", "哈", "Python", "C++", "what's", "😀", "\x00", "42", "x",
]  # fmt: skip

text = st.lists(st.sampled_from(WORDS), max_size=6).flatmap(
    lambda words: st.sampled_from([" ".join(words), "".join(words), ", ".join(words)])
)
json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=5,
)
tool_calls = st.lists(
    st.builds(ToolCall, id=st.sampled_from(["c1", "c2"]), name=st.just("f"), arguments=text),
    max_size=2,
)


@st.composite
def messages(draw: st.DrawFn) -> Message:
    role: Role = draw(st.sampled_from(ROLES))
    return Message(
        role=role,
        content=draw(text),
        name=draw(st.sampled_from(["", "f"])),
        tool_call_id="c1" if role == "tool" else "",
        tool_calls=draw(tool_calls) if role == "assistant" else [],
        is_error=draw(st.booleans()),
        metadata=draw(st.dictionaries(st.text(max_size=3), json_value, max_size=2)),
        created_at=dt_from_ms(draw(st.integers(0, 2**42))),
    )


session_ids = st.sampled_from(SESSIONS)
ROLES: list[Role] = ["user", "assistant", "assistant", "tool", "tool", "system"]


def _key(m: Message) -> tuple[Any, ...]:
    return (m.session_id, m.seq)


class HistoryAgreement(RuleBasedStateMachine):
    config = StoreConfig()

    def __init__(self) -> None:
        super().__init__()
        self._dir = Path(tempfile.mkdtemp(prefix="sqlmem-stateful-"))
        self.engine = Engine(
            self._dir / "memory.db", self.config, hooks=(index_unsearchable_messages,)
        )
        self.sqlite = SQLiteHistoryStore(self.engine)
        self.memory = InMemoryHistoryStore(self.config)
        self.appended = 0
        self.high: dict[str, int] = {}  # the highest seq each session handed out (0.2: pop)

    def teardown(self) -> None:
        self.engine.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    # -- writes ---------------------------------------------------------------------------

    @rule(sid=session_ids, message=messages())
    def append(self, sid: str, message: Message) -> None:
        seq = self.sqlite.append(sid, message)
        assert seq == self.memory.append(sid, message)
        self._fresh(sid, [seq])
        self.appended += 1

    def _fresh(self, sid: str, seqs: list[int]) -> None:
        """New seqs are above every seq the session ever had, popped ones included."""
        assert all(seq > self.high.get(sid, 0) for seq in seqs), (seqs, self.high)
        if seqs:
            self.high[sid] = max(seqs)

    @rule(sid=session_ids, batch=st.lists(messages(), max_size=5))
    def append_many(self, sid: str, batch: list[Message]) -> None:
        seqs = self.sqlite.append_many(sid, batch)
        assert seqs == self.memory.append_many(sid, batch)
        self._fresh(sid, seqs)
        self.appended += len(batch)

    @rule(sid=session_ids)
    def pop(self, sid: str) -> None:
        newest = self.memory.get_recent(sid, 1, pair_safe=False)
        got = self.sqlite.pop(sid)
        assert got == self.memory.pop(sid)
        assert got == (newest[0] if newest else None)
        if got is not None:
            assert self.sqlite.around(sid, got.seq or 0) == []

    @rule(sid=session_ids, keep=st.integers(0, 6), summary=st.none() | text)
    def compact(self, sid: str, keep: int, summary: str | None) -> None:
        assert self.sqlite.compact(sid, keep, summary) == self.memory.compact(sid, keep, summary)

    @rule(sid=session_ids)
    def purge(self, sid: str) -> None:
        self.sqlite.purge(sid)
        self.memory.purge(sid)
        self.high.pop(sid, None)

    @rule(sid=session_ids, summary=text)
    def set_summary(self, sid: str, summary: str) -> None:
        self.sqlite.set_summary(sid, summary)
        self.memory.set_summary(sid, summary)

    # -- reads ----------------------------------------------------------------------------

    @rule(sid=session_ids, n=st.integers(-1, 9))
    def get_recent(self, sid: str, n: int) -> None:
        assert self.sqlite.get_recent(sid, n) == self.memory.get_recent(sid, n)

    @rule(sid=session_ids, n=st.integers(-1, 9))
    def get_recent_not_pair_safe(self, sid: str, n: int) -> None:
        got = self.sqlite.get_recent(sid, n, pair_safe=False)
        assert got == self.memory.get_recent(sid, n, pair_safe=False)
        assert got == self.memory.get_all(sid)[-n:] if n > 0 else got == []

    @rule(
        sid=session_ids,
        seq=st.integers(-1, 40),
        before=st.integers(0, 4),
        after=st.integers(0, 4),
    )
    def around(self, sid: str, seq: int, before: int, after: int) -> None:
        got = self.sqlite.around(sid, seq, before=before, after=after)
        assert got == self.memory.around(sid, seq, before=before, after=after)
        every = self.memory.get_all(sid, include_archived=True)
        at = [i for i, m in enumerate(every) if m.seq == seq]
        assert got == (every[max(0, at[0] - before) : at[0] + after + 1] if at else [])

    @rule(sid=session_ids, include_archived=st.booleans())
    def get_all(self, sid: str, include_archived: bool) -> None:
        expected = self.memory.get_all(sid, include_archived=include_archived)
        assert self.sqlite.get_all(sid, include_archived=include_archived) == expected

    @precondition(lambda self: self.appended > 0)
    @rule(
        query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
        sid=st.none() | session_ids,
        top_k=st.sampled_from([1, 3, 1000]),
    )
    def search(self, query: str, sid: str | None, top_k: int) -> None:
        got = self.sqlite.search(query, session_id=sid, top_k=top_k)
        want = self.memory.search(query, session_id=sid, top_k=top_k)
        assert len(got) == len(want)
        for results in (got, want):
            scores = [m.score for m in results]
            assert all(s is not None and s > 0 for s in scores)
            assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
            assert sid is None or all(m.session_id == sid for m in results)
        for g, w in zip(got, want, strict=True):  # same scores, rank by rank
            assert math.isclose(g.score or 0, w.score or 0, rel_tol=1e-9, abs_tol=1e-12)
        by_key = {_key(m): m for m in want}
        cutoff = (want[-1].score or 0) * (1 + 1e-9) if want else 0
        for m in got:
            if top_k == 1000 or (m.score is not None and m.score > cutoff):
                # Above the last score no tie can swap a result in or out.
                assert _key(m) in by_key
                other = by_key[_key(m)]
                assert m.model_copy(update={"score": None}) == other.model_copy(
                    update={"score": None}
                )

    @invariant()
    def counts_summaries_and_sessions_agree(self) -> None:
        assert self.sqlite.sessions() == self.memory.sessions()
        for sid in SESSIONS:
            assert self.sqlite.count(sid) == self.memory.count(sid)
            assert self.sqlite.get_summary(sid) == self.memory.get_summary(sid)
            limit = self.config.max_history_len
            assert limit is None or self.memory.count(sid) <= limit or self._pair_kept(sid)

    def _pair_kept(self, sid: str) -> bool:
        """Over max_history_len only to keep a tool call with its results."""
        active = self.memory.get_all(sid)
        limit = self.config.max_history_len or 0
        return active[len(active) - limit].role == "tool"


class HistoryAgreementWithLimit(HistoryAgreement):
    config = StoreConfig(max_history_len=3)


_settings = settings(max_examples=40, stateful_step_count=25, deadline=None)

TestHistoryAgreement = HistoryAgreement.TestCase
TestHistoryAgreement.settings = _settings
TestHistoryAgreementWithLimit = HistoryAgreementWithLimit.TestCase
TestHistoryAgreementWithLimit.settings = _settings


# -- PostgreSQL (issue 21): the same steps, the PostgreSQL store against the twin ------------
#
# A neighbour agent of the same database writes to the same session ids between steps: if
# one of its rows ever leaked into the agent under test (a statement missing its agent_id),
# the counts, windows, sessions or search statistics would stop agreeing with the twin.

_PG: dict[str, Any] = {}


@pytest.fixture(autouse=True)
def _pg_backend(request: pytest.FixtureRequest) -> None:
    if "postgres" in request.node.nodeid.lower():
        _PG["backend"] = request.getfixturevalue("pg_backend")


class PostgresHistoryAgreement(HistoryAgreement):
    def __init__(self) -> None:  # the PostgreSQL store takes the SQLite store's place
        RuleBasedStateMachine.__init__(self)
        self.db = _PG["backend"].open(new_agent_id(), self.config)
        self.neighbour = _PG["backend"].open(new_agent_id(), self.config)
        self.sqlite = self.db.history
        self.memory = InMemoryHistoryStore(self.config)
        self.appended = 0
        self.high: dict[str, int] = {}

    def teardown(self) -> None:
        self.db.close()
        self.neighbour.close()

    @rule(sid=session_ids, message=messages(), purge=st.booleans(), pop=st.booleans())
    def neighbour_writes(self, sid: str, message: Message, purge: bool, pop: bool) -> None:
        self.neighbour.history.append(sid, message)
        self.neighbour.history.set_summary(sid, "the neighbour's own summary")
        if pop:  # its holes and statistics must stay its own
            self.neighbour.history.pop(sid)
        if purge:
            self.neighbour.history.purge(sid)

    @invariant()
    def statistics_are_exact(self) -> None:
        """corpus_stats holds exactly the agent's message and token counts (BM25's N, avgdl)."""
        with self.db._engine.read() as conn:
            kept = conn.execute(
                "SELECT docs, tokens FROM corpus_stats WHERE agent_id = %s AND corpus = 2",
                (self.db.agent_id,),
            ).fetchone()
            real = conn.execute(
                "SELECT count(*), coalesce(sum(doc_len), 0) FROM messages WHERE agent_id = %s",
                (self.db.agent_id,),
            ).fetchone()
        assert tuple(kept or (0, 0)) == tuple(real)


class PostgresHistoryAgreementWithLimit(PostgresHistoryAgreement):
    config = StoreConfig(max_history_len=3)


_pg_settings = settings(max_examples=25, stateful_step_count=20, deadline=None)
TestPostgresHistoryAgreement = PostgresHistoryAgreement.TestCase
TestPostgresHistoryAgreement.settings = _pg_settings
TestPostgresHistoryAgreementWithLimit = PostgresHistoryAgreementWithLimit.TestCase
TestPostgresHistoryAgreementWithLimit.settings = _pg_settings
