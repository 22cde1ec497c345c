"""Pair-safety: a tool call and its results are never split by a window or an archive cut.

A chat model rejects a prompt whose `tool` message answers a call it cannot see, so every
backend applies the same two rules, written here once:

* `archive_boundary`: where `compact` (and `max_history_len`) moves a session's archive
  boundary. The SQLite store decides it inside its write transaction from one indexed
  query, the in-memory twin from its list, and `Compactor` from the messages it is about
  to summarize (so it hands the summarizer exactly what the store will archive): each
  passes the rule its own lookup of "the last non-tool message at or before this seq".
* `drop_leading_tool_results`: the start of a `get_recent` window.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

__all__ = ["archive_boundary", "drop_leading_tool_results", "last_non_tool"]


class _HasRole(Protocol):
    @property
    def role(self) -> str: ...


_Item = TypeVar("_Item", bound=_HasRole)


def archive_boundary(
    archived: int, last: int, wanted: int, call_at_or_before: Callable[[int], int | None]
) -> int:
    """The new archive boundary: the seq of the last archived message (seqs count from 1).

    `archived` is the current boundary, `last` the newest seq, `wanted` the boundary asked
    for (`last - keep_last`). If the first message that would stay (`wanted + 1`) is a tool
    result, the boundary moves back to just before the nearest earlier non-tool message
    (the assistant turn that made the call), so the call and its results stay together.
    When only tool results lie between `archived` and it, their call is already archived
    and nothing is left to keep together: `wanted` stands. Never moves backwards.

    `call_at_or_before(seq)` returns the largest seq in `(archived, seq]` whose message is
    not a tool result, or None; it is called at most once, and only when some message is
    archived and some stays (a store skips its query otherwise).
    """
    if archived < wanted < last:
        kept = call_at_or_before(wanted + 1)
        if kept is not None:
            wanted = kept - 1
    return archived if wanted < archived else wanted


def last_non_tool(messages: Sequence[_HasRole], archived: int, seq: int) -> int | None:
    """`call_at_or_before` over a list whose index is `seq - 1` (the in-memory lookup)."""
    for candidate in range(seq, archived, -1):
        if messages[candidate - 1].role != "tool":
            return candidate
    return None


def drop_leading_tool_results(messages: list[_Item]) -> list[_Item]:
    """A window never starts with tool results: their call lies before it, so they go.

    Returns `messages` itself when nothing goes (get_recent's usual case: no copy).
    """
    start = 0
    while start < len(messages) and messages[start].role == "tool":
        start += 1
    return messages[start:] if start else messages
