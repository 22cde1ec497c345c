"""Moving a session's archive boundary in SQLite (compact, max_history_len), holes included.

Seqs were gap-free until 0.2's `pop`: the messages to archive were "all but the last
`keep` seqs", and the number archived the distance the boundary moved. A pop deletes the
newest active message but never hands its seq out again, so a session may have holes
(`sessions.holes` counts those in the active range, migrations/0005_history_pop.sql).
Sessions without holes, nearly all of them, keep the arithmetic; with holes, the oldest
kept message is found by walking UNIQUE(session, seq) back `keep` rows, and what the move
archived is counted, so the holes it passed can be taken off the counter in the same
transaction.
"""

from __future__ import annotations

import apsw

from ...rules.encoding import now_ms
from ...rules.window import archive_boundary
from . import history_sql as sql

__all__ = ["archive"]


def archive(
    conn: apsw.Connection,
    session: tuple[int, int, int, int],
    keep: int,
    summary: str | None,
) -> int:
    """Archive every active message but the newest `keep` (pair-safe, `rules.window`), and
    store `summary` if given, inside the caller's write transaction. `session` is the
    row's (pk, last_seq, archived_seq, holes). Returns how many messages were archived.
    """
    pk, last, archived, holes = session
    if holes == 0 or keep <= 0:
        wanted = last - keep
    else:
        oldest = conn.execute(sql.OLDEST_KEPT, (pk, archived, keep - 1)).get
        wanted = archived if oldest is None else int(oldest) - 1  # keep >= active: none

    def call_at_or_before(seq: int) -> int | None:
        kept = conn.execute(sql.FIRST_NON_TOOL_AT_OR_BEFORE, (pk, archived, seq)).get
        return None if kept is None else int(kept)

    new = archive_boundary(archived, last, wanted, call_at_or_before)
    moved = new - archived
    if holes and moved:
        moved = int(conn.execute(sql.COUNT_RANGE, (pk, archived, new)).get)
    if new != archived or summary is not None:
        conn.execute(sql.ARCHIVE, (pk, new, summary, now_ms(), new - archived - moved))
    return moved
