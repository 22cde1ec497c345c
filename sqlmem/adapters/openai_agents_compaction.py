"""Atomic compaction of a `SqlmemSession` by the SDK's `OpenAIResponsesCompactionSession`.

When a run ends, the SDK may replace the items of the latest model exchange by the
compacted output of the Responses API. It only does so when the session can read that
exchange as a bounded snapshot and later replace exactly that suffix atomically: a session
without the hook ("complete stored history could not be matched") keeps its history and
compaction never happens. This module is the hook for sqlmem.

The snapshot is the latest `limit` active messages (one read, so one consistent view) with
their seqs; `complete` says no older active message exists. The replacement is one
`db.atomic()` block: it checks that the newest messages are still exactly the snapshot's
suffix (same seqs, same items: any write in between, by this process or another, makes it
refuse and change nothing), archives the expired prefix the caller names (an encrypted
session's items past their time to live), pops the suffix and appends the output. Only
public history operations are used, so the rule is the same on every backend that has
`atomic()`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agents.memory.session import _CompactionSnapshot

from ..records import Message
from ._backend import Backend

__all__ = ["read_compaction_snapshot"]

#: One stored item as the snapshot saw it: its seq and the item itself.
_Row = tuple[int, Any]


async def read_compaction_snapshot(
    backend: Backend,
    session_id: str,
    limit: int,
    to_message: Callable[[Any, str], Message],
    to_item: Callable[[Message], Any],
    prune_prefix: Callable[[Any], bool] | None,
) -> _CompactionSnapshot:
    """The latest `limit` items of the session and their atomic suffix replacement."""
    latest: list[Message] = await backend.run_db(_latest, session_id, limit + 1)
    complete = len(latest) <= limit
    rows: list[_Row] = [(_seq(m), to_item(m)) for m in latest[-limit:]] if limit > 0 else []

    async def replace_suffix(start: int, output: list[Any]) -> bool:
        expected = rows[start:]
        if not expected:
            return False
        # Built before the write lock is taken: a refused item changes nothing.
        messages = [to_message(item, f"output[{i}]") for i, item in enumerate(output)]
        replaced: bool = await backend.write_db(
            _replace, session_id, expected, messages, to_item, prune_prefix
        )
        return replaced

    return _CompactionSnapshot([item for _, item in rows], complete, replace_suffix)


def _latest(db: Any, session_id: str, n: int) -> list[Message]:
    found: list[Message] = db.history.get_recent(session_id, n, pair_safe=False)
    return found


def _replace(
    db: Any,
    session_id: str,
    expected: list[_Row],
    output: list[Message],
    to_item: Callable[[Message], Any],
    prune_prefix: Callable[[Any], bool] | None,
) -> bool:
    """One transaction: refuse when the stored suffix moved, else swap it for `output`."""
    history = db.history
    with db.atomic():
        current = history.get_recent(session_id, len(expected), pair_safe=False)
        if [(_seq(m), to_item(m)) for m in current] != expected:
            return False
        if prune_prefix is not None:
            _archive_expired_prefix(history, session_id, len(expected), to_item, prune_prefix)
        for _ in expected:
            history.pop(session_id)
        if output:
            history.append_many(session_id, output)
    return True


def _archive_expired_prefix(
    history: Any,
    session_id: str,
    suffix_len: int,
    to_item: Callable[[Message], Any],
    is_expired: Callable[[Any], bool],
) -> None:
    """Archive the leading run of items `is_expired` accepts (it stops at the first one it
    does not), before the suffix. Archived, not deleted: they leave the session's items as
    the SDK asks, and stay in the file's archive like everything sqlmem compacts."""
    active = history.count(session_id)
    before = active - suffix_len
    if before <= 0:
        return
    oldest = history.get_recent(session_id, active, pair_safe=False)[:before]
    expired = 0
    for message in oldest:
        if not is_expired(to_item(message)):
            break
        expired += 1
    if expired:
        history.compact(session_id, active - expired)


def _seq(message: Message) -> int:
    if message.seq is None:  # pragma: no cover - stores always fill it
        raise AssertionError("a stored message without a seq")
    return message.seq
