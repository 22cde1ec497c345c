"""`InMemoryHistoryStore`: the SQLite history store's twin, for tests and file-less programs:
the history store front over `InMemoryHistoryPort`.

Same protocol, same semantics, same errors as `SQLiteHistoryStore`; the contract suite and
the stateful agreement test hold both to that. Sessions live in a dict of `_Session`
objects: the messages in seq order, the last seq handed out, an archive boundary (the seq
of the last archived message) and a summary. Seqs are gap-free until `pop` removes the
newest active message: its seq is never handed out again, so the list may skip seqs and
positions are found by bisection on seq.

Search reproduces FTS5: documents and query words are tokenized by the same SQLite
tokenizer (through `sqlmem.search.query`), a query word matches where its tokens occur as a
consecutive run, and hits are ranked with FTS5's own BM25 (`sqlmem.search.bm25`, shared
with the fact twin), so results agree with the SQLite store as a set and, up to float
rounding, in score.
"""

from __future__ import annotations

import json
import threading
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..config import StoreConfig
from ..errors import InvalidArgumentError
from ..records import Message, ToolCall
from ..rules.checks import check_session_id, check_text, encode_metadata, encode_tool_calls
from ..rules.embedder import check_embedder
from ..rules.encoding import dt_from_ms, dt_to_ms
from ..rules.history_modes import message_needs_vector
from ..rules.window import archive_boundary
from ..search.bm25 import occurrences, scores
from ..search.query import MAX_QUERY_TERMS, compiler_for, rarest_terms, segment, tokens_of
from ..stores.history import HistoryStoreFront
from .history_vectors import TwinVectors, pending_vectors, vectors_for

if TYPE_CHECKING:
    from ..protocols import Embedder
    from ..rules.history_hybrid import MessageVectorLeg
    from ..search.embedding import Embedding

__all__ = ["InMemoryHistoryPort", "InMemoryHistoryStore"]


@dataclass
class _Stored:
    message: Message  # seq and session_id filled; never handed out (copies are)
    tokens: tuple[str, ...] | None = None  # tokenized lazily, on the first search
    order: int = 0  # insertion order over the whole store: equal cosines rank by it
    vector: Any = None  # unit vector of the text under the store's embedder, or None

    @property
    def role(self) -> str:  # what the pair-safety rules (rules.window) look at
        return self.message.role

    @property
    def seq(self) -> int:
        return self.message.seq or 0


@dataclass
class _Session:
    messages: list[_Stored] = field(default_factory=list)  # in seq order, maybe with holes
    last: int = 0  # the last seq handed out (popped ones included: never reused)
    archived: int = 0  # messages with seq <= archived are archived
    summary: str = ""

    def first_active(self) -> int:
        """The list position of the oldest active message."""
        return bisect_right(self.messages, self.archived, key=_seq_of)

    def active_count(self) -> int:
        return len(self.messages) - self.first_active()


def _seq_of(stored: _Stored) -> int:
    return stored.seq


class InMemoryHistoryPort:
    """The twin's storage operations (`HistoryPort`): sessions in a dict, one lock.

    Honours `StoreConfig.history_search`, `max_history_len` and `tokenizer`; the other
    settings concern files only.
    """

    def __init__(self, config: StoreConfig, embedder: Embedder | None = None) -> None:
        """`embedder`: messages with text get vectors, and search modes "vector" and
        "hybrid", as on SQLite."""
        self._config = config
        self._compiler = compiler_for(config.tokenizer)
        self._sessions: dict[str, _Session] = {}
        self._lock = threading.RLock()
        self._inserted = 0  # messages ever stored: the next one's `order`
        #: This thread's open `atomic()` block of an InMemoryDB: its after-block work list
        #: (set by sqlmem.inmemory.db), None outside one.
        self._open_block: Callable[[], list[Callable[[], None]] | None] = lambda: None
        self._embedding: Embedding | None = None
        if check_embedder(embedder) is not None:  # numpy loads only with an embedder
            from ..search.embedding import Embedding

            self._embedding = Embedding(embedder)

    @property
    def config(self) -> StoreConfig:
        return self._config

    @property
    def label(self) -> str:
        return f"InMemoryHistoryStore sessions={len(self._sessions)}"

    @property
    def embedder(self) -> Embedder | None:
        return self._embedding.embedder if self._embedding is not None else None

    # -- atomic blocks (sqlmem.inmemory.db) ---------------------------------------------------

    def snapshot(self) -> object:
        """The sessions as they are now; stored messages are never changed in place, so
        copying each session's list and scalars is enough."""
        return {sid: replace(s, messages=list(s.messages)) for sid, s in self._sessions.items()}

    def restore(self, state: object) -> None:
        assert isinstance(state, dict)
        self._sessions = state

    # -- writes ---------------------------------------------------------------------------

    def append(self, session_id: str, messages: Sequence[Message], now: int) -> list[int]:
        items = [_normalise(m, now) for m in messages]
        # The model runs here, with no lock held; inside an atomic() block (which holds the
        # lock) only known vectors are taken, and the rest filled once the block has ended.
        block = self._open_block() if self._embedding is not None else None
        vectors = vectors_for(self._embedding, items, run_model=block is None)
        if block is not None and any(
            v is None and message_needs_vector(m.content)
            for m, v in zip(items, vectors, strict=True)
        ):
            block.append(self._fill_after_block)
        with self._lock:
            session = self._sessions.setdefault(session_id, _Session())
            seqs = []
            for item, vector in zip(items, vectors, strict=True):
                session.last += 1
                self._inserted += 1
                item.seq, item.session_id = session.last, session_id
                session.messages.append(_Stored(item, order=self._inserted, vector=vector))
                seqs.append(session.last)
            limit = self._config.max_history_len
            if limit is not None and session.active_count() > limit:
                _archive(session, limit)
            return seqs

    def _fill_after_block(self) -> None:
        """The vectors an `atomic()` block's appends lacked, once it ended (no lock held)."""
        if self._embedding is not None:
            TwinVectors(self._embedding, self).embed_pending(64, None)

    def set_summary(self, session_id: str, text: str, now: int) -> None:
        with self._lock:
            self._sessions.setdefault(session_id, _Session()).summary = text

    def compact(self, session_id: str, keep_last: int, summary: str | None, now: int) -> int:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                if summary is not None:
                    self._sessions[session_id] = _Session(summary=summary)
                return 0
            if summary is not None:
                session.summary = summary
            return _archive(session, keep_last)

    def pop(self, session_id: str, now: int) -> Message | None:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None or not session.active_count():
                return None
            return _copy(session.messages.pop().message)  # session.last stays: no reuse

    def forget_message(self, session_id: str, seq: int) -> int:
        """Remove the message `seq` (archived or not; its seq is never reused); 1 when it
        was there (`InMemoryDB.forget`; not part of the HistoryStore protocol)."""
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return 0
            kept = [m for m in session.messages if m.seq != seq]
            removed = len(session.messages) - len(kept)
            session.messages = kept
            return removed

    def purge(self, session_id: str) -> None:
        with self._lock:
            self._sessions.pop(session_id, None)

    # -- reads ----------------------------------------------------------------------------

    def recent(self, session_id: str, n: int) -> list[Message]:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return []
            start = max(session.first_active(), len(session.messages) - n)
            return [_copy(s.message) for s in session.messages[start:]]

    def around(self, session_id: str, seq: int, before: int, after: int) -> list[Message]:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return []
            stored = session.messages
            at = bisect_left(stored, seq, key=_seq_of)
            if at == len(stored) or stored[at].seq != seq:
                return []
            return [_copy(s.message) for s in stored[max(0, at - before) : at + after + 1]]

    def all(self, session_id: str, include_archived: bool) -> list[Message]:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return []
            start = 0 if include_archived else session.first_active()
            return [_copy(s.message) for s in session.messages[start:]]

    def count(self, session_id: str) -> int:
        with self._lock:
            session = self._sessions.get(session_id)
            return 0 if session is None else session.active_count()

    def archived_seq(self, session_id: str) -> int:
        with self._lock:
            session = self._sessions.get(session_id)
            return 0 if session is None else session.archived

    def summary(self, session_id: str) -> str:
        with self._lock:
            session = self._sessions.get(session_id)
            return "" if session is None else session.summary

    def sessions(self) -> list[str]:
        with self._lock:
            return sorted(k for k, s in self._sessions.items() if s.messages or s.summary)

    def sessions_after(self, after: str | None, limit: int | None) -> list[str]:
        listed = [k for k in self.sessions() if after is None or k > after]
        return listed if limit is None else listed[:limit]

    def vector_leg(self) -> MessageVectorLeg | None:
        return None if self._embedding is None else TwinVectors(self._embedding, self)

    def embed_pending(self, batch_size: int, progress: Callable[[int, int], object] | None) -> int:
        assert self._embedding is not None  # the front checked the embedder
        return TwinVectors(self._embedding, self).embed_pending(batch_size, progress)

    def without_vectors(self) -> int:
        """Messages with text but no vector (what a database's `stats()` reports)."""
        with self._lock:
            return len(pending_vectors(self._sessions))

    def search_words(self, query: str, session_id: str | None, top_k: int) -> list[Message]:
        """Same matches as the SQLite store; BM25 computed here as FTS5 computes it."""
        found = self._compiler.terms(query)
        if not found:
            return []
        with self._lock:
            docs = [s for session in self._sessions.values() for s in session.messages]
            for doc in docs:
                if doc.tokens is None:
                    text = doc.message.content
                    doc.tokens = self._compiler.tokens(segment(text) or text)
            if len(found) > MAX_QUERY_TERMS:  # the rarest, as the SQLite store keeps them
                counts = Counter[str]()
                wanted = tokens_of(found)
                for doc in docs:
                    counts.update(wanted.intersection(doc.tokens or ()))
                found = rarest_terms(found, counts, "any")
            # Every message counts in N, n_t and avgdl (as in FTS5); the session only picks.
            freqs = [[occurrences(d.tokens or (), t.tokens) for t in found] for d in docs]
            lengths = [len(d.tokens or ()) for d in docs]
            if session_id is None:
                ranked = scores(freqs, lengths)
            else:
                ranked = scores(
                    freqs, lengths, keep=lambda i: docs[i].message.session_id == session_id
                )
            ranked.sort(key=lambda hit: -hit[1])  # stable: equal scores in storage order
            return [_copy(docs[i].message, score) for i, score in ranked[:top_k]]


class InMemoryHistoryStore(HistoryStoreFront):
    """`HistoryStore` held in a dict: the front over an `InMemoryHistoryPort`; thread-safe
    (one lock), nothing persisted.

    Honours `StoreConfig.history_search` (search raises `InvalidArgumentError` when off),
    `max_history_len` and `tokenizer`; the other settings concern files only.
    """

    def __init__(
        self, config: StoreConfig | None = None, *, embedder: Embedder | None = None
    ) -> None:
        """`embedder`: messages with text get vectors, and search modes "vector" and
        "hybrid", as on SQLite."""
        if config is not None and not isinstance(config, StoreConfig):
            raise InvalidArgumentError("config must be a StoreConfig")
        self._twin = InMemoryHistoryPort(config or StoreConfig(), embedder)
        super().__init__(self._twin)

    # What an InMemoryDB shares with its twins (one lock, the atomic block's work list)
    # and reads of them (its stats, maintenance and forgetting), beyond the protocol.

    @property
    def _lock(self) -> Any:
        return self._twin._lock

    @_lock.setter
    def _lock(self, lock: Any) -> None:
        self._twin._lock = lock

    @property
    def _open_block(self) -> Callable[[], list[Callable[[], None]] | None]:
        return self._twin._open_block

    @_open_block.setter
    def _open_block(self, found: Callable[[], list[Callable[[], None]] | None]) -> None:
        self._twin._open_block = found

    @property
    def _sessions(self) -> dict[str, _Session]:
        return self._twin._sessions

    def _snapshot(self) -> object:
        return self._twin.snapshot()

    def _restore(self, state: object) -> None:
        self._twin.restore(state)

    def forget_message(self, session_id: str, seq: int) -> int:
        """Remove the message `seq` (archived or not; its seq is never reused); 1 when it
        was there (`InMemoryDB.forget`; not part of the HistoryStore protocol)."""
        check_session_id(session_id)
        return self._twin.forget_message(session_id, seq)

    def without_vectors(self) -> int:
        """Messages with text but no vector (what a database's `stats()` reports)."""
        return self._twin.without_vectors()


def _normalise(message: Message, now: int) -> Message:
    """A private copy stored as SQLite would store it (JSON round trip, ms timestamps)."""
    metadata_text = encode_metadata(message.metadata)
    tool_calls_text = encode_tool_calls(message.tool_calls)
    for name in ("content", "name", "tool_call_id"):
        check_text(getattr(message, name), f"message.{name}")
    check_text(metadata_text, "message.metadata")
    check_text(tool_calls_text, "message.tool_calls")
    created = now if message.created_at is None else dt_to_ms(message.created_at)
    return Message.model_construct(
        role=message.role,
        content=message.content,
        name=message.name,
        tool_call_id=message.tool_call_id,
        tool_calls=[ToolCall.model_construct(**t) for t in json.loads(tool_calls_text)],
        is_error=bool(message.is_error),
        metadata=json.loads(metadata_text),
        created_at=dt_from_ms(created),
        seq=None,
        session_id=None,
        score=None,
    )


def _copy(message: Message, score: float | None = None) -> Message:
    return message.model_copy(update={"score": score}, deep=True)


def _archive(session: _Session, keep: int) -> int:
    """Archive all active messages but the newest `keep`, pair-safe (`rules.window`); the
    boundary is the seq before the oldest kept message (holes make seqs skip)."""
    archived, stored = session.archived, session.messages
    first = session.first_active()
    if keep <= 0:
        wanted = session.last
    elif len(stored) - first > keep:
        wanted = stored[len(stored) - keep].seq - 1
    else:
        wanted = archived  # nothing to archive

    def call_at_or_before(seq: int) -> int | None:
        """The newest non-tool message in (archived, seq], as the SQLite store's query."""
        for s in reversed(stored[first : bisect_right(stored, seq, key=_seq_of)]):
            if s.role != "tool":
                return s.seq
        return None

    new = archive_boundary(archived, session.last, wanted, call_at_or_before)
    session.archived = new
    return bisect_right(stored, new, key=_seq_of) - first
