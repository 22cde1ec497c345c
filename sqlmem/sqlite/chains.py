"""Facts that change on SQLite: placing facts in their chains inside the caller's write
transaction (migration 0010; the rules are `sqlmem.rules.chains`).

Every function here runs under the writer's `BEGIN IMMEDIATE`: the chain is read and
relinked after the write lock is taken, so two processes writing one key run one after
the other and the later finds the earlier's fact (never two live facts of one key). A
placement reads the chain's members through facts_chain (a chain holds a slot's
versions: a handful of rows) and updates two rows. Deletes need nothing here: the
facts_chain_splice trigger relinks the member before a deleted one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw

from ..errors import FactNotFoundError, InvalidArgumentError
from ..rules.chains import Link, chain_name, place, supersede_valid_from
from ..rules.encoding import dumps_json
from ..rules.filters import FactRow

__all__ = ["link_supersessions", "place_rows", "prepare_supersede", "relink"]

ANY_CHAINED = "SELECT 1 FROM facts WHERE chain IS NOT NULL LIMIT 1"
#: Stored rows of a batch that are in a chain (an update may move them).
STORED_CHAINED = (
    "SELECT id, chain, key, layer, coalesce(valid_from, created_at) FROM facts"
    " WHERE chain IS NOT NULL AND id IN (SELECT value FROM json_each(?))"
)
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


def stored_links(conn: apsw.Connection, ids: Sequence[str]) -> dict[str, tuple[Any, ...]]:
    """Chained facts among the ids about to be written: (chain, key, layer, valid_from).
    One probe of facts_chain when no fact is in a chain (the usual case)."""
    if not conn.execute(ANY_CHAINED).fetchall():
        return {}
    found = conn.execute(STORED_CHAINED, (dumps_json(list(ids)),))
    return {str(r[0]): tuple(r[1:]) for r in found}


def place_rows(
    conn: apsw.Connection, rows: Sequence[FactRow], before: dict[str, tuple[Any, ...]]
) -> None:
    """After an upsert of `rows`: keyed facts join their key's chain, and a stored chained
    fact whose key, layer or valid_from changed moves (`before`: `stored_links`)."""
    for row in rows:
        old = before.get(row.id)
        if old is not None:
            chain, key, layer, valid_from = old
            moved = (
                key != row.key
                or layer != row.layer
                or (row.valid_from_ms is not None and row.valid_from_ms != valid_from)
            )
            if not moved:
                continue
            leave(conn, row.id)
            if not row.key and key == "" and layer == row.layer:
                relink(conn, row.id, str(chain))  # an unkeyed chain: a new valid_from
                continue
        if row.key:
            relink(conn, row.id, row.key)


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
    "SELECT id, chain, coalesce(valid_from, created_at) FROM facts WHERE id IN (?, ?)"
    " AND key = ''"
)


def prepare_supersede(
    conn: apsw.Connection, old_id: str, row: FactRow, now: int
) -> tuple[FactRow, str]:
    """`supersede(old_id, fact)` inside the write transaction: the row to write (the old
    fact's key and layer, a valid_from not before the old one's) and its chain; the old
    fact joins that chain first when it was in none."""
    found: Any = conn.execute(OLD_FACT, {"id": old_id, "now": now}).fetchall()
    if not found:
        raise FactNotFoundError(f"no fact with id {old_id!r}")
    _, key, chain, layer, old_from = found[0]
    if row.key and row.key != key:
        raise InvalidArgumentError(
            f"supersede keeps the old fact's key {key!r}; the new fact has key {row.key!r}"
        )
    if row.id == old_id:
        raise InvalidArgumentError("a fact cannot supersede itself: give the new fact its own id")
    if chain is None:
        chain = chain_name(key, old_id)
        conn.execute(JOIN_CHAIN, (chain, old_from, old_id))
    valid_from = supersede_valid_from(row.valid_from_ms, int(old_from), now)
    return row._replace(key=key, layer=layer, valid_from_ms=valid_from), str(chain)
