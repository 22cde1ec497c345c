"""`WorkspaceExtractor`: the post-conversation extraction.

After a conversation the model reads its transcript and may add a line to today's note and
rewrite MEMORY.md and PROFILE.md, in one transaction. It is housekeeping, so it is cheap to
skip and never fails the turn:

- Skipped without calling the model when the trigger source is disabled (a cron job talking
  to itself), the conversation is short, the user's last message is a few characters
  ("ok"), another run on the same database is under way ("busy": returned at once, never
  waited for), or the last run on that database started less than `cooldown_seconds` ago.
- The cooldown and the one-run-at-a-time rule are per database, shared by every extractor
  on it (several agents' loops, several instances, several processes), because what they
  protect is the database's documents and the model's bill, not one object. Their state
  is a lease in the database (`MemoryDB.run_leases`, `sqlmem.rules.run_leases`): taken in
  a short transaction before the model call, given back after, expiring after
  `lease_seconds` so a process killed during its run never blocks the others for good.
  Threads of one process meet first at an in-process lock, so they are "busy" at once
  without touching the database.
- The model's failures (exception, blank, unusable JSON) change nothing and are reported.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from typing import Any

from ..errors import InvalidArgumentError, RevisionConflictError, SqlmemError, StoreClosedError
from ..protocols import Database
from ..rules.async_guard import refuse_async, refuse_async_model
from ..rules.checks import check_at_least
from ..rules.documents import daily_path
from ..rules.run_leases import RunLeases, new_token
from .llm_json import ask_json, bool_field, format_message, text_field

__all__ = ["ExtractionOutcome", "WorkspaceExtractor"]

_log = logging.getLogger("sqlmem")

MAX_MESSAGE_CHARS = 2000
#: Model calls per run: the first, and one more when a document changed during it.
_ATTEMPTS = 2
#: The lease's name in `run_leases`.
_LEASE = "workspace_extractor"

EXTRACTION_PROMPT = """You keep an assistant's workspace memory up to date after a conversation.

Read the conversation and decide whether anything is worth remembering: durable facts about
the user (PROFILE.md), durable knowledge, preferences and decisions (MEMORY.md), and what
happened today (one line for today's note).
Answer with one JSON object and nothing else:
{{"should_update": true or false, "reason": "<why>",
 "daily_entry": "<one line for today's note, or empty>",
 "memory_update": "<the complete new MEMORY.md, or empty to keep it>",
 "profile_update": "<the complete new PROFILE.md, or empty to keep it>"}}

## Current MEMORY.md
{memory}

## Current PROFILE.md
{profile}

## Conversation
{transcript}
"""


@dataclass(frozen=True)
class ExtractionOutcome:
    """`ran`: the model was called; `reason`: why it did not run, or the model's reason;
    `updated`: the document paths changed; `error`: what went wrong, else None."""

    ran: bool
    reason: str
    updated: list[str] = field(default_factory=list)
    error: str | None = None


class _Gate:
    """One database's run lock and last start time (see the module docstring)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started = float("-inf")


_gates_lock = threading.Lock()
_gates: dict[Any, _Gate] = {}
_twin_gates: weakref.WeakKeyDictionary[Any, _Gate] = weakref.WeakKeyDictionary()


def _gate(db: Database) -> _Gate:
    """The file's gate (every MemoryDB on one path shares it), or the object's for a twin."""
    path = getattr(db, "path", None)
    with _gates_lock:
        if path is not None:
            return _gates.setdefault(path, _Gate())
        gate = _twin_gates.get(db)
        if gate is None:
            gate = _twin_gates[db] = _Gate()
        return gate


class WorkspaceExtractor:
    """Runs the post-conversation extraction on a database (see the module docstring)."""

    def __init__(
        self,
        db: Database,
        complete: Callable[[str], str],
        *,
        min_messages: int = 4,
        min_user_chars: int = 10,
        cooldown_seconds: float = 300,
        skip_sources: Sequence[str] = ("cron",),
        max_transcript_messages: int = 30,
        lease_seconds: float = 600,
    ) -> None:
        """`lease_seconds`: how long a run may keep others out; past it (a process killed
        during its run, or a model slower than that) the next run may start."""
        form = "sqlmem.aio.WorkspaceExtractor(adb, complete)"
        refuse_async(db, "WorkspaceExtractor", form)
        refuse_async_model(complete, "WorkspaceExtractor", form)
        if not callable(complete):
            raise InvalidArgumentError("complete must be callable: complete(prompt) -> str")
        self.min_messages = check_at_least(min_messages, "min_messages", 0)
        self.min_user_chars = check_at_least(min_user_chars, "min_user_chars", 0)
        if (
            isinstance(cooldown_seconds, bool)
            or not isinstance(cooldown_seconds, (int, float))
            or not cooldown_seconds >= 0
        ):
            raise InvalidArgumentError(f"cooldown_seconds must be >= 0, got {cooldown_seconds!r}")
        self.cooldown_seconds = float(cooldown_seconds)
        if (
            isinstance(lease_seconds, bool)
            or not isinstance(lease_seconds, (int, float))
            or not 0 < lease_seconds <= 86_400 * 365
        ):
            raise InvalidArgumentError(
                f"lease_seconds must be > 0 and at most a year, got {lease_seconds!r}"
            )
        self.lease_seconds = float(lease_seconds)
        if isinstance(skip_sources, str) or not all(isinstance(s, str) for s in skip_sources):
            raise InvalidArgumentError("skip_sources must be a sequence of str")
        self.skip_sources = tuple(skip_sources)
        self.max_transcript_messages = check_at_least(
            max_transcript_messages, "max_transcript_messages", 0
        )
        self.db = db
        self.complete = complete
        self._gate = _gate(db)

    def run(self, session_id: str, *, trigger_source: str = "web") -> ExtractionOutcome:
        if not isinstance(trigger_source, str):
            raise InvalidArgumentError("trigger_source must be a str")
        if trigger_source in self.skip_sources:
            return ExtractionOutcome(False, "disabled source")
        try:
            talk = [
                m for m in self.db.history.get_all(session_id) if m.role in ("user", "assistant")
            ]
        except (InvalidArgumentError, StoreClosedError):
            raise
        except SqlmemError as exc:
            return ExtractionOutcome(False, "storage failed", error=f"{type(exc).__name__}: {exc}")
        if len(talk) < self.min_messages:  # the conversation's length, before the cut
            return ExtractionOutcome(False, "too few messages")
        keep = self.max_transcript_messages
        messages = talk[-keep:] if keep else []  # all of them when fewer than `keep`
        last_user = next((m for m in reversed(talk) if m.role == "user"), None)
        if last_user is None or len(last_user.content.strip()) < self.min_user_chars:
            return ExtractionOutcome(False, "user message too short")
        gate = self._gate
        if not gate.lock.acquire(blocking=False):
            return ExtractionOutcome(False, "busy")
        try:
            leases: RunLeases | None = getattr(self.db, "run_leases", None)
            if leases is None:  # a database without run leases: this process's gate only
                now = time.monotonic()
                if now - gate.started < self.cooldown_seconds:
                    return ExtractionOutcome(False, "cooldown")
                gate.started = now
                return self._extract(messages)
            return self._extract_leased(leases, messages)
        finally:
            gate.lock.release()

    def _extract_leased(self, leases: RunLeases, messages: list[Any]) -> ExtractionOutcome:
        token = new_token()
        lease_ms = round(self.lease_seconds * 1000)
        try:
            refused = leases.acquire(_LEASE, token, lease_ms, round(self.cooldown_seconds * 1000))
        except StoreClosedError:
            raise
        except SqlmemError as exc:
            return ExtractionOutcome(False, "storage failed", error=f"{type(exc).__name__}: {exc}")
        if refused is not None:
            return ExtractionOutcome(False, refused)
        try:
            return self._extract(messages)
        finally:
            try:
                leases.release(_LEASE, token)
            except SqlmemError:  # the lease expires by itself; the run's outcome stands
                _log.warning("workspace extractor: could not give back its lease", exc_info=True)

    def _extract(self, messages: list[Any]) -> ExtractionOutcome:
        """The model call and its writes; once more when MEMORY.md or PROFILE.md changed
        during the call (the rewrite must replace the text the model read)."""
        for attempt in range(1, _ATTEMPTS + 1):
            try:
                return self._extract_once(messages)
            except RevisionConflictError as exc:
                if attempt == _ATTEMPTS:
                    return ExtractionOutcome(
                        True,
                        "conflict",
                        error=f"another writer changed the documents during each of "
                        f"{_ATTEMPTS} model calls ({exc}); nothing changed",
                    )
        raise AssertionError("unreachable")  # pragma: no cover

    def _extract_once(self, messages: list[Any]) -> ExtractionOutcome:
        docs = self.db.docs
        try:
            memory_doc, profile_doc = docs.read("MEMORY.md"), docs.read("PROFILE.md")
        except StoreClosedError:
            raise
        except SqlmemError as exc:
            return ExtractionOutcome(False, "storage failed", error=f"{type(exc).__name__}: {exc}")
        read = {
            "MEMORY.md": (memory_doc.content, memory_doc.revision) if memory_doc else ("", 0),
            "PROFILE.md": (profile_doc.content, profile_doc.revision) if profile_doc else ("", 0),
        }
        transcript = "\n".join(format_message(m, limit=MAX_MESSAGE_CHARS) for m in messages)
        prompt = EXTRACTION_PROMPT.format(
            memory=read["MEMORY.md"][0], profile=read["PROFILE.md"][0], transcript=transcript
        )
        answer, problem = ask_json(self.complete, prompt)
        fields: dict[str, str] = {}
        should, reason = False, ""
        if answer is not None:
            should, problem = bool_field(answer, "should_update")
            for name in ("reason", "daily_entry", "memory_update", "profile_update"):
                if problem is None:
                    fields[name], problem = text_field(answer, name)
            reason = fields.get("reason", "")
        if problem is not None:
            return ExtractionOutcome(True, "model answer unusable", error=problem)
        if not should:
            return ExtractionOutcome(True, reason or "nothing to remember")
        return self._apply(fields, read, reason)

    def _apply(
        self, fields: dict[str, str], read: dict[str, tuple[str, int]], reason: str
    ) -> ExtractionOutcome:
        """In one transaction; RevisionConflictError (nothing written) when a document the
        model rewrote is no longer at the revision read before the call."""
        docs, updated = self.db.docs, []
        today: date = datetime.now(timezone.utc).date()
        try:
            with self.db.atomic():
                entry = " ".join(fields["daily_entry"].split())
                if entry:
                    docs.append_daily(entry, day=today)
                    updated.append(daily_path(today))
                for path, new in (
                    ("MEMORY.md", fields["memory_update"]),
                    ("PROFILE.md", fields["profile_update"]),
                ):
                    old, revision = read[path]
                    if new.strip() and new != old:
                        written = docs.write(path, new, expected_revision=revision)
                        if written.created or written.overwritten:
                            updated.append(path)
        except (StoreClosedError, RevisionConflictError):
            raise
        except SqlmemError as exc:  # InvalidArgumentError here: the model's text refused
            return ExtractionOutcome(True, "storage failed", error=f"{type(exc).__name__}: {exc}")
        return ExtractionOutcome(True, reason or "updated", updated)
