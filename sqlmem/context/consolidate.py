"""Folding conversations and notes into the workspace documents.

- `Consolidator`: past `memory_window` active messages, the older ones go to the
  model with the current MEMORY.md; its answer becomes one line of HISTORY.md and, when it
  changed, a new MEMORY.md; then the messages are archived with the entry as the session
  summary. The three writes are ONE transaction (`atomic()`): a crash leaves either all
  of them or none, never an entry without its archive (messages summarised twice) nor an
  archive without its entry (a conversation lost from the workspace).
- `consolidate_daily_notes` (the daily emergence): the last daily notes and
  MEMORY.md go to the model, which may rewrite MEMORY.md (a new revision: the old text
  stays readable with `docs.read_revision`).

The model is called before the transaction, never while the write lock is held. So
another writer (a session's memory tool, a person in an editor) may change MEMORY.md
while the model thinks: the revision read before the call is the one the rewrite must
replace (`expected_revision`). On a conflict the whole transaction is undone and the
model is asked once more with the new text; a second conflict is reported in `error`
and nothing changes (no HISTORY.md line, no archive), so no edit is ever lost.

Nothing the model answers can raise: an exception, a blank answer or unusable JSON changes
nothing and is reported in the result's `error`. `InvalidArgumentError` (a bug in the
caller) and `StoreClosedError` still raise; other storage errors are reported.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import InvalidArgumentError, RevisionConflictError, SqlmemError, StoreClosedError
from ..protocols import Database
from ..records import Message
from ..rules.async_guard import refuse_async, refuse_async_model
from ..rules.checks import check_at_least
from ..rules.doc_render import DAILY_NOTE
from .compactor import pair_safe_boundary
from .llm_json import ask_json, bool_field, format_message, one_line, stamp, text_field

__all__ = ["ConsolidationResult", "Consolidator", "consolidate_daily_notes"]

_log = logging.getLogger("sqlmem")

MEMORY_FILE = "MEMORY.md"
HISTORY_FILE = "HISTORY.md"
_DATED = re.compile(r"\A\[?\d{4}-\d{2}-\d{2}")

CONSOLIDATION_PROMPT = """You maintain an assistant's long-term memory.

Below are older messages of a conversation, and the current MEMORY.md.
Answer with one JSON object and nothing else:
{{"history_entry": "<one or two sentences: what happened, for a searchable log>",
 "memory_update": "<the complete new MEMORY.md with durable facts added, or \"\" to keep it>"}}

## Current MEMORY.md
{memory}

## Messages
{transcript}
"""

DAILY_PROMPT = """You maintain an assistant's long-term memory.

Below are the assistant's daily notes of the last days and the current MEMORY.md.
Decide whether MEMORY.md should absorb durable facts, preferences or decisions from the notes.
Answer with one JSON object and nothing else:
{{"should_update": true or false, "reason": "<why>",
 "memory_content": "<the complete new MEMORY.md when should_update is true>"}}

## Current MEMORY.md
{memory}

## Daily notes
{notes}
"""


@dataclass(frozen=True)
class ConsolidationResult:
    """`consolidated`: the model's answer was applied; `archived`: messages archived;
    `history_entry`: the line added to HISTORY.md ("" when none); `memory_updated`: a new
    MEMORY.md revision was written; `error`: why nothing (or less) happened, else None."""

    consolidated: bool
    archived: int
    history_entry: str
    memory_updated: bool
    error: str | None = None


#: Model calls per consolidation: the first, and one more when MEMORY.md changed during it.
ATTEMPTS = 2


def _conflict(exc: RevisionConflictError) -> str:
    return f"MEMORY.md was changed by another writer during each of {ATTEMPTS} model calls ({exc})"


def _failed(error: str, what: str) -> ConsolidationResult:
    _log.warning("%s: %s; nothing changed", what, error)
    return ConsolidationResult(False, 0, "", False, error)


class Consolidator:
    """The memory loop: past `memory_window` active messages, the ones before the
    last `keep_last` become a HISTORY.md entry and, maybe, a new MEMORY.md (see the module
    docstring). `memory_window=0` turns the model off: the session is only trimmed to its
    last `keep_last` active messages (archived, never deleted)."""

    def __init__(
        self,
        db: Database,
        complete: Callable[[str], str],
        *,
        memory_window: int = 50,
        keep_last: int = 10,
    ) -> None:
        refuse_async(db, "Consolidator", "sqlmem.aio.Consolidator(adb, complete)")
        refuse_async_model(complete, "Consolidator", "sqlmem.aio.Consolidator(adb, complete)")
        if not callable(complete):
            raise InvalidArgumentError("complete must be callable: complete(prompt) -> str")
        self.memory_window = check_at_least(memory_window, "memory_window", 0)
        self.keep_last = check_at_least(keep_last, "keep_last", 0)
        if memory_window and keep_last >= memory_window:
            raise InvalidArgumentError(
                f"keep_last ({keep_last}) must be less than memory_window ({memory_window})"
            )
        self.db = db
        self.complete = complete

    def maybe_consolidate(self, session_id: str) -> ConsolidationResult:
        return self._with_retry(session_id, self.keep_last, when_due=True)

    def consolidate(self, session_id: str, *, keep_last: int | None = None) -> ConsolidationResult:
        """Consolidate now, whatever `memory_window` says: the messages before the last
        `keep_last` (default: the consolidator's own, pair-safe) become a HISTORY.md entry
        archived in the same transaction. This is how a `ContextWindow` past its trigger
        archives: never without the record. The model is asked even when `memory_window`
        is 0, because an archive without an entry is exactly what this call exists to avoid."""
        keep = self.keep_last if keep_last is None else check_at_least(keep_last, "keep_last", 0)
        return self._with_retry(session_id, keep, when_due=False)

    def _with_retry(
        self, session_id: str, keep_last: int, *, when_due: bool
    ) -> ConsolidationResult:
        for attempt in range(1, ATTEMPTS + 1):
            try:
                return self._consolidate_once(session_id, keep_last, when_due=when_due)
            except RevisionConflictError as exc:  # MEMORY.md changed during the model call
                if attempt == ATTEMPTS:
                    return _failed(_conflict(exc), f"consolidation of session {session_id!r}")
        raise AssertionError("unreachable")  # pragma: no cover

    def _consolidate_once(
        self, session_id: str, keep_last: int, *, when_due: bool
    ) -> ConsolidationResult:
        history = self.db.history
        try:
            if when_due and self.memory_window == 0:
                archived = history.compact(session_id, keep_last=self.keep_last)
                return ConsolidationResult(False, archived, "", False)
            if when_due and history.count(session_id) <= self.memory_window:
                return ConsolidationResult(False, 0, "", False)
            messages = history.get_all(session_id)
            boundary = pair_safe_boundary(messages, keep_last)
            if boundary == 0:
                return ConsolidationResult(False, 0, "", False)
            old = messages[:boundary]
            memory, revision = _memory(self.db)
        except (InvalidArgumentError, StoreClosedError):
            raise
        except SqlmemError as exc:
            return _failed(f"storage failed: {type(exc).__name__}: {exc}", session_id)
        transcript = "\n".join(format_message(m) for m in old)
        answer, problem = ask_json(
            self.complete, CONSOLIDATION_PROMPT.format(memory=memory, transcript=transcript)
        )
        entry, update = "", ""
        if answer is not None:
            entry, problem = text_field(answer, "history_entry")
            if problem is None:
                update, problem = text_field(answer, "memory_update")
            if problem is None and not entry.strip():
                problem = "the model's 'history_entry' is blank"
        if problem is not None:
            return _failed(problem, f"consolidation of session {session_id!r}")
        line = one_line(entry)
        if not _DATED.match(line):
            line = f"[{stamp(old[-1].created_at)}] {line}"
        return self._apply(session_id, old, line, update, memory, revision)

    def _apply(
        self,
        session_id: str,
        old: list[Message],
        line: str,
        update: str,
        memory: str,
        revision: int,
    ) -> ConsolidationResult:
        """The entry, MEMORY.md and the archive in one transaction, if the session still
        starts with the messages the model saw (else nothing, and the next call retries)
        and MEMORY.md is still the one it read (else RevisionConflictError, nothing done)."""
        history, docs = self.db.history, self.db.docs
        try:
            with self.db.atomic():
                active = history.get_all(session_id)
                if [m.seq for m in active[: len(old)]] != [m.seq for m in old]:
                    return _failed(
                        "the session changed while the model was consolidating it",
                        f"consolidation of session {session_id!r}",
                    )
                docs.append(HISTORY_FILE, line)
                updated = bool(update.strip()) and update != memory
                if updated:
                    docs.write(MEMORY_FILE, update, expected_revision=revision)
                archived = history.compact(
                    session_id, keep_last=len(active) - len(old), summary=line
                )
        except (StoreClosedError, RevisionConflictError):
            raise
        except InvalidArgumentError as exc:  # the session id passed count(): the model's text
            return _failed(f"the store refused the model's text: {exc}", session_id)
        except SqlmemError as exc:
            return _failed(f"storage failed: {type(exc).__name__}: {exc}", session_id)
        return ConsolidationResult(True, archived, line, updated)


def _memory(db: Database) -> tuple[str, int]:
    """MEMORY.md's content and revision (0: there is none), read before the model call."""
    doc = db.docs.read(MEMORY_FILE)
    return (doc.content, doc.revision) if doc is not None else ("", 0)


def consolidate_daily_notes(
    db: Database, complete: Callable[[str], str], *, days: int = 7
) -> ConsolidationResult:
    """The daily emergence: the last `days` daily notes (by date) and MEMORY.md go to
    the model, which may replace MEMORY.md (a new revision)."""
    refuse_async(db, "consolidate_daily_notes", "sqlmem.aio.consolidate_daily_notes")
    refuse_async_model(complete, "consolidate_daily_notes", "sqlmem.aio.consolidate_daily_notes")
    if not callable(complete):
        raise InvalidArgumentError("complete must be callable: complete(prompt) -> str")
    check_at_least(days, "days", 1)
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return _consolidate_notes_once(db, complete, days)
        except RevisionConflictError as exc:  # MEMORY.md changed during the model call
            if attempt == ATTEMPTS:
                return _failed(_conflict(exc), "daily consolidation")
    raise AssertionError("unreachable")  # pragma: no cover


def _consolidate_notes_once(
    db: Database, complete: Callable[[str], str], days: int
) -> ConsolidationResult:
    try:
        paths = sorted(
            (info.path for info in db.docs.list("memory/") if DAILY_NOTE.match(info.path)),
            reverse=True,
        )[:days]
        notes = [(path, db.docs.read(path)) for path in sorted(paths)]
        memory, revision = _memory(db)
    except (InvalidArgumentError, StoreClosedError):
        raise
    except SqlmemError as exc:
        return _failed(f"storage failed: {type(exc).__name__}: {exc}", "daily consolidation")
    texts = [f"### {path}\n{doc.content}" for path, doc in notes if doc is not None]
    if not texts:
        return ConsolidationResult(False, 0, "", False)
    prompt = DAILY_PROMPT.format(memory=memory, notes="\n\n".join(texts))
    answer, problem = ask_json(complete, prompt)
    should, content = False, ""
    if answer is not None:
        should, problem = bool_field(answer, "should_update")
        if problem is None:
            content, problem = text_field(answer, "memory_content")
        if problem is None and should and not content.strip():
            problem = "the model asked for an update with a blank 'memory_content'"
    if problem is not None:
        return _failed(problem, "daily consolidation")
    if not should or content == memory:
        return ConsolidationResult(True, 0, "", False)
    try:
        db.docs.write(MEMORY_FILE, content, expected_revision=revision)
    except (StoreClosedError, RevisionConflictError):
        raise
    except InvalidArgumentError as exc:  # too large: the model's text, not the caller's
        return _failed(f"the store refused the model's text: {exc}", "daily consolidation")
    except SqlmemError as exc:
        return _failed(f"storage failed: {type(exc).__name__}: {exc}", "daily consolidation")
    return ConsolidationResult(True, 0, "", True)
