"""`HistoryStoreFront`: the `HistoryStore` protocol once, over any backend's port.

Every backend answers the same calls with the same checks, the same errors and the same
empty answers; only the storage differs. So the public methods live here: each checks its
arguments (`rules.checks`), applies the rules that hold everywhere (a window never starts
with a tool result whose call lies outside it; `[]` for n <= 0 or a seq no message can
have; the search modes and their fusion, `rules.history_hybrid`), and then makes ONE call
into the backend's `HistoryPort`, which executes it (SQL, or dict operations in memory).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ..errors import InvalidArgumentError
from ..records import Message
from ..rules.checks import (
    check_around,
    check_history_search,
    check_message,
    check_session_id,
    check_text,
)
from ..rules.encoding import now_ms
from ..rules.filters import check_limit
from ..rules.history_modes import HistoryMode, check_history_mode, needs_embedder_error
from ..rules.window import drop_leading_tool_results
from .history_port import HistoryPort

if TYPE_CHECKING:
    from ..protocols import Embedder

__all__ = ["MAX_SEQ", "HistoryStoreFront", "seqs_exhausted"]

#: The largest seq a message can get (SQLite's and PostgreSQL's largest integer): `around`
#: answers `[]` past it without asking the backend.
MAX_SEQ = 2**63 - 1


class HistoryStoreFront:
    """`HistoryStore` over a backend's `HistoryPort`; as thread-safe as its port.

    `search` raises `InvalidArgumentError` when the store's config has
    `history_search=False`.
    """

    def __init__(self, port: HistoryPort) -> None:
        self._port = port
        self._config = port.config

    @property
    def port(self) -> HistoryPort:
        """The backend's storage operations (internal: the database and its tools use it)."""
        return self._port

    @property
    def embedder(self) -> Embedder | None:
        """The embedder message vectors come from (None: BM25 search only)."""
        return self._port.embedder

    def __repr__(self) -> str:
        return f"<{self._port.label}>"

    # -- writes ---------------------------------------------------------------------------

    def append(self, session_id: str, message: Message) -> int:
        """Store one message; returns its seq (1, 2, 3 ... within the session)."""
        check_session_id(session_id)
        return self._port.append(session_id, [check_message(message)], now_ms())[0]

    def append_many(self, session_id: str, messages: Iterable[Message]) -> list[int]:
        """Store messages in one transaction (all or nothing); returns their seqs in order."""
        check_session_id(session_id)
        if isinstance(messages, (Message, str, bytes)) or not isinstance(messages, Iterable):
            raise InvalidArgumentError("messages must be an iterable of sqlmem.Message")
        now = now_ms()
        checked = [check_message(m, f"messages[{i}]") for i, m in enumerate(messages)]
        if not checked:
            return []
        return self._port.append(session_id, checked, now)

    def set_summary(self, session_id: str, text: str) -> None:
        """Replace the session's summary (last write wins)."""
        check_session_id(session_id)
        check_text(text, "text")
        self._port.set_summary(session_id, text, now_ms())

    def compact(self, session_id: str, keep_last: int, summary: str | None = None) -> int:
        """Archive all active messages but the last `keep_last`, storing `summary` with it.

        One transaction: the summary and the new boundary land together or not at all. The
        boundary moves earlier when needed so that a tool call and its results stay on the
        same side. Returns how many messages were archived.
        """
        check_session_id(session_id)
        keep_last = check_limit(keep_last, "keep_last")
        if keep_last < 0:
            raise InvalidArgumentError(f"keep_last must be >= 0, got {keep_last}")
        if summary is not None:
            check_text(summary, "summary")
        return self._port.compact(session_id, keep_last, summary, now_ms())

    def pop(self, session_id: str) -> Message | None:
        """Remove and return the newest active message (None when there is none), its
        search index entry with it, in one transaction. Its seq is never used again: the
        next append gets the next number."""
        check_session_id(session_id)
        return self._port.pop(session_id, now_ms())

    def purge(self, session_id: str) -> None:
        """Remove the session: messages (archived too), summary and their index entries."""
        check_session_id(session_id)
        self._port.purge(session_id)

    # -- reads ----------------------------------------------------------------------------

    def get_recent(self, session_id: str, n: int, *, pair_safe: bool = True) -> list[Message]:
        """The last `n` active messages, oldest first; pair-safe (the default), never
        starting with a tool result whose call lies outside the window."""
        check_session_id(session_id)
        n = check_limit(n, "n")
        if n <= 0:
            return []
        found = self._port.recent(session_id, n)
        return drop_leading_tool_results(found) if pair_safe else found

    def around(
        self, session_id: str, seq: int, *, before: int = 0, after: int = 1
    ) -> list[Message]:
        """The message at `seq` with up to `before` messages before it and `after` after
        it, archived ones included, oldest first; `[]` when the session or that seq (a
        popped one too) does not exist."""
        check_session_id(session_id)
        seq, before, after = check_around(seq, before, after)
        if not 0 < seq <= MAX_SEQ:
            return []
        found = self._port.around(session_id, seq, before, after)
        return found if any(m.seq == seq for m in found) else []

    def get_all(self, session_id: str, *, include_archived: bool = False) -> list[Message]:
        """Active messages oldest first; with `include_archived`, every stored message."""
        check_session_id(session_id)
        return self._port.all(session_id, include_archived)

    def count(self, session_id: str) -> int:
        """Active messages."""
        check_session_id(session_id)
        return self._port.count(session_id)

    def archived_seq(self, session_id: str) -> int:
        """The seq up to which the session is archived (0: none): its archive boundary,
        read without reading a message."""
        check_session_id(session_id)
        return self._port.archived_seq(session_id)

    def get_summary(self, session_id: str) -> str:
        check_session_id(session_id)
        return self._port.summary(session_id)

    def sessions(self, *, after: str | None = None, limit: int | None = None) -> list[str]:
        """Sessions with messages (archived count) or a non-empty summary, sorted (by
        code point). A page of them, for a store of many sessions: `after`, only those
        sorting after that id (the last one of the previous page); `limit`, at most that
        many. Neither: every one."""
        if after is None and limit is None:
            return self._port.sessions()
        if after is not None:
            check_session_id(after, "after")
        if limit is not None:
            limit = check_limit(limit, "limit")
            if limit <= 0:
                return []
        return self._port.sessions_after(after, limit)

    def embed_pending(
        self, *, batch_size: int = 64, progress: Callable[[int, int], object] | None = None
    ) -> int:
        """Vectors for the messages with text that have none (or one of another model):
        those appended while the embedder failed, imported, or written by another program.
        Returns how many were filled; `progress(done, total)` after each batch."""
        if self._port.embedder is None:
            raise needs_embedder_error("embed_pending")
        from ..rules.hybrid import check_batch_size  # numpy: only with vectors

        return self._port.embed_pending(check_batch_size(batch_size), progress)

    def search(
        self,
        query: str,
        *,
        session_id: str | None = None,
        top_k: int = 10,
        mode: HistoryMode = "any",
    ) -> list[Message]:
        """Messages (archived included) matching any word of `query`, best BM25 first;
        modes "vector" and "hybrid" (with an embedder) rank by meaning, or fuse both.

        `score` is the BM25 score (higher is better). A query of more than
        `MAX_QUERY_TERMS` distinct words searches its rarest ones, like fact search. Any
        text is a valid query; one without words returns `[]`. Raises
        `InvalidArgumentError` when history search is off for this store.
        """
        if check_history_mode(mode) != "any":  # by meaning (numpy loads only then)
            from ..rules.history_hybrid import search_by_meaning

            return search_by_meaning(
                self._config.history_search, query, session_id, top_k, mode,
                self._port.vector_leg(),
                lambda wanted: self.search(query, session_id=session_id, top_k=wanted),
            )  # fmt: skip
        top_k = check_history_search(self._config.history_search, query, session_id, top_k)
        if top_k <= 0:
            return []
        return self._port.search_words(query, session_id, top_k)


def seqs_exhausted(session_id: str, count: int) -> InvalidArgumentError:
    """What every backend raises when a session's seq counter cannot take `count` more."""
    return InvalidArgumentError(
        f"session {session_id!r}: its seq counter cannot take {count} more message(s) "
        f"(seqs end at 2**63-1); nothing was stored. The session stays readable; "
        "purge it or use another session id"
    )
