"""Keeping a session's active history short: archive old messages, fold them into a summary.

An agent replays the active messages (plus the session summary) into every prompt, so the
active part has to stay bounded. `Compactor.maybe_compact` runs after a turn: past the
threshold it asks the summarizer to fold the messages about to be archived into the
previous summary, then hands both to `HistoryStore.compact`, which stores the summary and
archives the messages in one transaction. Archived messages stay in the file and in
`history.search`; only the active window shrinks.

Failures are reported, not raised, because compaction is housekeeping that must never cost
the user their turn:

- without a summarizer, messages are simply archived and the previous summary kept.
- a summarizer that raises or returns a blank (or unstorable) text, or a summary the store
  refuses: the messages are archived anyway without a new summary, the previous summary
  stays, and the result carries the error (also logged as a warning on the "sqlmem"
  logger). The transcript is not lost: archived messages remain searchable.
- an operational storage error (busy past the timeout, closed store, I/O): nothing moved,
  because `compact` is one transaction; the result carries the error and the next turn
  tries again. `InvalidArgumentError` (e.g. an empty session id) is a bug in the caller and
  is raised.

Concurrency: the helper reads the active messages, summarizes, then compacts with a
`keep_last` count. Messages appended to the same session in between would shift that
window, and would be archived without being summarized; run compaction between the turns
of a session (as the agent loop naturally does). A mismatch is reported in the result.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import InvalidArgumentError, SqlmemError
from ..protocols import HistoryStore
from ..records import Message
from ..rules.checks import check_at_least
from ..rules.window import archive_boundary, last_non_tool
from .tokens import Estimator, estimate_tokens

__all__ = ["CompactionResult", "Compactor", "Summarizer", "message_tokens", "pair_safe_boundary"]

_log = logging.getLogger("sqlmem")

#: `summarizer(messages_to_archive, previous_summary) -> new_summary`.
Summarizer = Callable[[list[Message], str], str]

#: Tokens a chat format spends on each message besides its text (role markers, separators).
MESSAGE_OVERHEAD_TOKENS = 4


@dataclass(frozen=True)
class CompactionResult:
    """What one compaction attempt did.

    `compacted`: messages were archived (`archived` of them). `summarized`: a new summary
    was stored with them. `error`: why the summary or the whole compaction failed, else None.
    """

    compacted: bool
    archived: int
    summarized: bool
    error: str | None = None


_NOTHING = CompactionResult(compacted=False, archived=0, summarized=False)


def message_tokens(message: Message, estimator: Estimator = estimate_tokens) -> int:
    """Estimated prompt cost of one message: its text, its tool calls, a fixed overhead."""
    tokens = MESSAGE_OVERHEAD_TOKENS + estimator(message.content)
    for call in message.tool_calls:
        tokens += estimator(call.name) + estimator(call.arguments)
    return tokens


def pair_safe_boundary(messages: list[Message], keep_last: int) -> int:
    """How many of the active `messages` (oldest first) `HistoryStore.compact` archives
    when asked to keep the last `keep_last`.

    The stores' own rule (`rules.window.archive_boundary`, the active messages counted
    from 1), applied here so the summarizer is given exactly what will be archived.
    """
    last = len(messages)
    return archive_boundary(
        0, last, last - max(keep_last, 0), lambda seq: last_non_tool(messages, 0, seq)
    )


class Compactor:
    """Compacts a session's history when it grows past a message count or token budget.

    Defaults suit a chat agent: past 40 active messages, keep the last 20 (so about 20
    are archived at a time, not one per turn); an emergency (the model rejected the prompt
    as too long) keeps only the last 4.
    """

    def __init__(
        self,
        history: HistoryStore,
        summarizer: Summarizer | None = None,
        *,
        threshold: int = 40,
        retain_recent: int = 20,
        emergency_retain: int = 4,
        token_threshold: int | None = None,
        estimator: Estimator | None = None,
    ) -> None:
        self.threshold = check_at_least(threshold, "threshold", 1)
        self.retain_recent = check_at_least(retain_recent, "retain_recent", 0)
        self.emergency_retain = check_at_least(emergency_retain, "emergency_retain", 0)
        if retain_recent >= threshold:
            raise InvalidArgumentError(
                f"retain_recent ({retain_recent}) must be less than threshold ({threshold}), "
                "or every compaction would archive nothing"
            )
        if emergency_retain > retain_recent:
            raise InvalidArgumentError(
                f"emergency_retain ({emergency_retain}) must not exceed retain_recent "
                f"({retain_recent}): an emergency compaction keeps fewer messages"
            )
        if token_threshold is not None:
            check_at_least(token_threshold, "token_threshold", 1)
        if summarizer is not None and not callable(summarizer):
            raise InvalidArgumentError("summarizer must be callable or None")
        if estimator is not None and not callable(estimator):
            raise InvalidArgumentError("estimator must be callable or None")
        self.history = history
        self.summarizer = summarizer
        self.token_threshold = token_threshold
        self.estimator: Estimator = estimator or estimate_tokens

    def maybe_compact(self, session_id: str) -> CompactionResult:
        """Compact down to `retain_recent` when the active count passes `threshold` (is
        greater than it) or, with `token_threshold`, their estimated tokens pass it."""
        try:
            over = self.history.count(session_id) > self.threshold
            messages: list[Message] | None = None
            if not over and self.token_threshold is not None:
                messages = self.history.get_all(session_id)
                tokens = sum(message_tokens(m, self.estimator) for m in messages)
                over = tokens > self.token_threshold
        except InvalidArgumentError:
            raise
        except SqlmemError as exc:
            return self._storage_failed(session_id, exc)
        if not over:
            return _NOTHING
        return self._compact(session_id, self.retain_recent, messages)

    def emergency_compact(self, session_id: str) -> CompactionResult:
        """Keep only the last `emergency_retain` messages, whatever the thresholds say."""
        return self._compact(session_id, self.emergency_retain, None)

    # -- internals --------------------------------------------------------------------

    def _compact(
        self, session_id: str, keep_last: int, messages: list[Message] | None
    ) -> CompactionResult:
        try:
            if messages is None:
                messages = self.history.get_all(session_id)
            boundary = pair_safe_boundary(messages, keep_last)
            if boundary == 0:
                return _NOTHING
            to_archive = messages[:boundary]
            summary, error = self._summarize(session_id, to_archive)
            keep = len(messages) - boundary
            try:
                archived = self.history.compact(session_id, keep_last=keep, summary=summary)
            except InvalidArgumentError as exc:
                if summary is None:
                    raise
                # The store refused the summary itself (too large, say): archive anyway.
                error = f"store refused the summary: {exc}"
                _log.warning("compaction of session %r: %s", session_id, error)
                summary = None
                archived = self.history.compact(session_id, keep_last=keep, summary=None)
        except InvalidArgumentError:
            raise
        except SqlmemError as exc:
            return self._storage_failed(session_id, exc)
        if archived != len(to_archive):
            # The session changed between reading and compacting (see module docstring).
            drift = (
                f"archived {archived} messages but {len(to_archive)} were summarized; "
                "was the session written to during compaction?"
            )
            _log.warning("compaction of session %r: %s", session_id, drift)
            error = f"{error}; {drift}" if error else drift
        return CompactionResult(
            compacted=archived > 0, archived=archived, summarized=summary is not None, error=error
        )

    def _summarize(
        self,
        session_id: str,
        to_archive: list[Message],
        *,
        consequence: str = "archiving without a new summary",
    ) -> tuple[str | None, str | None]:
        """(new summary or None, error or None). Never raises: a failing summarizer must
        not stop the archive, which is what keeps the prompt inside the model's limit.
        `consequence`: what the caller does instead, for the warning logged."""
        if self.summarizer is None:
            return None, None
        previous = self.history.get_summary(session_id)
        try:
            summary = self.summarizer(list(to_archive), previous)
        except Exception as exc:  # any failure of user code is reported, not raised
            error = f"summarizer failed: {type(exc).__name__}: {exc}"
            _log.warning(
                "compaction of session %r: %s; %s", session_id, error, consequence, exc_info=exc
            )
            return None, error
        problem = _unusable(summary)
        if problem is not None:
            _log.warning("compaction of session %r: %s; %s", session_id, problem, consequence)
            return None, problem
        return summary, None

    def _storage_failed(self, session_id: str, exc: SqlmemError) -> CompactionResult:
        error = f"storage failed: {type(exc).__name__}: {exc}"
        _log.warning("compaction of session %r skipped: %s", session_id, error, exc_info=exc)
        return CompactionResult(compacted=False, archived=0, summarized=False, error=error)


def _unusable(summary: object) -> str | None:
    """Why a summarizer's return value cannot be stored, or None when it can."""
    if not isinstance(summary, str):
        return f"summarizer returned {type(summary).__name__}, not str"
    if not summary.strip():
        return "summarizer returned a blank summary"
    try:
        summary.encode("utf-8")
    except UnicodeEncodeError:
        return "summarizer returned text with lone surrogates, which UTF-8 cannot store"
    return None
