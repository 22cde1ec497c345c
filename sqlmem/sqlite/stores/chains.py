"""Facts that change on SQLite: placing facts in their chains inside the caller's write
transaction (migration 0010; the rules are `sqlmem.rules.chains`).

Every function here runs under the writer's `BEGIN IMMEDIATE`: the chain is read and
relinked after the write lock is taken, so two processes writing one key run one after
the other and the later finds the earlier's fact (never two live facts of one key). A
placement reads the chain's members through facts_chain (a chain holds a slot's
versions: a handful of rows) and updates two rows. Deletes and moves need nothing here:
the facts_chain_splice trigger relinks the member before a deleted fact, and
facts_chain_move takes a fact whose key, layer or valid_from an update changed out of
its chain (a keyed one then joins its key's chain again, `place_keyed`), so writes of
facts without a key cost no statement more than in 0.2.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import apsw

from ...rules.chains import Link, chain_name, place
from ...rules.filters import FactRow, superseding_row

__all__ = ["leave", "link_supersessions", "place_keyed", "prepare_supersede", "relink"]

#: A keyed fact waiting for its place (a moved or new one has no chain).
UNPLACED = "SELECT 1 FROM facts WHERE id = ? AND chain IS NULL"
MEMBERS = (
    "SELECT id, coalesce(valid_from, created_at), pk FROM facts"
    " WHERE chain = ? AND layer = ? AND id <> ?"
)
OWN = "SELECT coalesce(valid_from, created_at), pk, layer FROM facts WHERE id = ?"
SET_OWN = "UPDATE facts SET chain = ?, valid_from = ?, valid_to = ?, superseded_by = ? WHERE id = ?"
SET_PREVIOUS = "UPDATE facts SET valid_to = ?, superseded_by = ? WHERE id = ?"
#: A fact leaves its chain: the member before it takes over its link.
SPLICE_OUT = (
    "UPDATE facts SET valid_to = (SELECT valid_to FROM facts WHERE id = :id),"
    " superseded_by = (SELECT superseded_by FROM facts WHERE id = :id)"
    " WHERE superseded_by = :id"
)
DETACH = "UPDATE facts SET chain = NULL, valid_to = NULL, superseded_by = NULL WHERE id = ?"
OLD_FACT = (
    "SELECT id, key, chain, layer, coalesce(valid_from, created_at) FROM facts"
    " WHERE id = :id AND (expires_at IS NULL OR expires_at > :now)"
)
JOIN_CHAIN = "UPDATE facts SET chain = ?, valid_from = ? WHERE id = ?"


def relink(conn: apsw.Connection, fact_id: str, chain: str) -> None:
    """Put the stored fact `fact_id` in `chain` (its layer's) where its valid_from falls."""
    own: Any = conn.execute(OWN, (fact_id,)).fetchall()[0]
    valid_from, pk, layer = int(own[0]), int(own[1]), str(own[2])
    members = [
        Link(str(i), int(v), int(p)) for i, v, p in conn.execute(MEMBERS, (chain, layer, fact_id))
    ]
    placement = place(members, Link(fact_id, valid_from, pk))
    nxt = placement.following
    conn.execute(
        SET_OWN,
        (
            chain,
            valid_from,
            None if nxt is None else nxt.valid_from,
            None if nxt is None else nxt.id,
            fact_id,
        ),
    )
    if placement.previous is not None:
        conn.execute(SET_PREVIOUS, (valid_from, fact_id, placement.previous.id))


def leave(conn: apsw.Connection, fact_id: str) -> None:
    """Take a stored fact out of its chain (it becomes a fact of its own, live)."""
    conn.execute(SPLICE_OUT, {"id": fact_id})
    conn.execute(DETACH, (fact_id,))


def place_keyed(conn: apsw.Connection, facts: Iterable[tuple[str, str]]) -> None:
    """After a write of (id, key) facts: each keyed fact not in a chain (new, or moved out
    of its chain by the facts_chain_move trigger) joins its key's chain; one already
    there stays where it is."""
    for fact_id, key in facts:
        if key and conn.execute(UNPLACED, (fact_id,)).fetchall():
            relink(conn, fact_id, key)


def link_supersessions(conn: apsw.Connection, pairs: Sequence[tuple[str, str | None]]) -> None:
    """An import's facts without a key that name their successor (`superseded_by`): each
    pair whose two facts are stored is linked as `supersede` links them (in file order, so
    a chain's head comes first and names it)."""
    for old_id, new_id in pairs:
        if new_id is None:
            continue
        found: Any = conn.execute(_CHAIN_AND_FROM, (old_id, new_id)).fetchall()
        if len(found) != 2:
            continue  # one of them is not in the file or the store
        by_id = {str(r[0]): r for r in found}
        chain = by_id[old_id][1] or chain_name("", old_id)
        if by_id[old_id][1] is None:
            conn.execute(JOIN_CHAIN, (chain, by_id[old_id][2], old_id))
        if by_id[new_id][1] != chain:
            conn.execute(JOIN_CHAIN, (chain, by_id[new_id][2], new_id))
            relink(conn, new_id, chain)


_CHAIN_AND_FROM = (
    "SELECT id, chain, coalesce(valid_from, created_at) FROM facts WHERE id IN (?, ?) AND key = ''"
)


def prepare_supersede(
    conn: apsw.Connection, old_id: str, row: FactRow, now: int
) -> tuple[FactRow, str]:
    """`supersede(old_id, fact)` inside the write transaction: the row to write (the old
    fact's key and layer, a valid_from not before the old one's) and its chain; the old
    fact joins that chain first when it was in none."""
    found: Any = conn.execute(OLD_FACT, {"id": old_id, "now": now}).fetchall()
    old = (found[0][1], found[0][3], int(found[0][4])) if found else None
    new = superseding_row(row, old_id, old, now)  # raises when there is no old fact
    _, key, chain, _, old_from = found[0]
    if chain is None:
        chain = chain_name(key, old_id)
        conn.execute(JOIN_CHAIN, (chain, old_from, old_id))
    return new, str(chain)
