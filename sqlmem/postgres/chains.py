"""Facts that change on PostgreSQL: placing facts in their chains inside the caller's
write transaction (migrations/postgres/0005; the rules are `sqlmem.rules.chains`, and the
statements those of `sqlmem.sqlite.stores.chains` on the agent's rows).

Every fact write of an agent takes its corpus row lock first (`facts_sql.LOCK_CORPUS`),
so the chain is read and relinked by one writer at a time: two processes writing one key
run one after the other and the later finds the earlier's fact. Ids are stored escaped
(`codec.encode`); a chain name holds the escaped id. Deletes need nothing here: the
facts_chain_splice trigger relinks the member before a deleted one, and facts_chain_move
takes a fact whose key, layer or valid_from an update changes out of its chain (a keyed
one then joins its key's chain again, `place_keyed`): writes of facts without a key send
no statement more than in 0.2.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..rules.chains import Link, chain_name, place
from ..rules.filters import FactRow, superseding_row
from .codec import encode
from .engine import Conn

__all__ = ["leave", "link_supersessions", "place_keyed", "prepare_supersede", "relink"]

_UNPLACED = "SELECT 1 FROM facts WHERE agent_id = %s AND id = %s AND chain IS NULL"
_MEMBERS = (
    "SELECT id, coalesce(valid_from, created_at), pk FROM facts"
    " WHERE agent_id = %s AND chain = %s AND layer = %s AND id <> %s"
)
_OWN = (
    "SELECT coalesce(valid_from, created_at), pk, layer FROM facts WHERE agent_id = %s AND id = %s"
)
_SET_OWN = (
    "UPDATE facts SET chain = %s, valid_from = %s, valid_to = %s, superseded_by = %s"
    " WHERE agent_id = %s AND id = %s"
)
_SET_PREVIOUS = "UPDATE facts SET valid_to = %s, superseded_by = %s WHERE agent_id = %s AND id = %s"
_SPLICE_OUT = """
UPDATE facts AS p SET valid_to = o.valid_to, superseded_by = o.superseded_by
FROM facts AS o
WHERE o.agent_id = %(agent)s AND o.id = %(id)s
    AND p.agent_id = %(agent)s AND p.superseded_by = %(id)s
"""
_DETACH = (
    "UPDATE facts SET chain = NULL, valid_to = NULL, superseded_by = NULL"
    " WHERE agent_id = %s AND id = %s"
)
_OLD_FACT = """
SELECT id, key, chain, layer, coalesce(valid_from, created_at) FROM facts
WHERE agent_id = %(agent)s AND id = %(id)s AND (expires_at IS NULL OR expires_at > %(now)s)
"""
_JOIN_CHAIN = "UPDATE facts SET chain = %s, valid_from = %s WHERE agent_id = %s AND id = %s"


def relink(conn: Conn, agent: str, fact_id: str, chain: str) -> None:
    """Put the stored fact `fact_id` (escaped) in `chain` where its valid_from falls."""
    own = conn.execute(_OWN, (agent, fact_id)).fetchone()
    assert own is not None  # written in this transaction
    valid_from, pk, layer = int(own[0]), int(own[1]), str(own[2])
    members = [
        Link(str(i), int(v), int(p))
        for i, v, p in conn.execute(_MEMBERS, (agent, chain, layer, fact_id)).fetchall()
    ]
    placement = place(members, Link(fact_id, valid_from, pk))
    nxt = placement.following
    conn.execute(
        _SET_OWN,
        (
            chain,
            valid_from,
            None if nxt is None else nxt.valid_from,
            None if nxt is None else nxt.id,
            agent,
            fact_id,
        ),
    )
    if placement.previous is not None:
        conn.execute(_SET_PREVIOUS, (valid_from, fact_id, agent, placement.previous.id))


def leave(conn: Conn, agent: str, fact_id: str) -> None:
    conn.execute(_SPLICE_OUT, {"agent": agent, "id": fact_id})
    conn.execute(_DETACH, (agent, fact_id))


def place_keyed(conn: Conn, agent: str, facts: Iterable[tuple[str, str]]) -> None:
    """As `sqlite.chains.place_keyed` ((escaped id, key) pairs)."""
    for fact_id, key in facts:
        if key and conn.execute(_UNPLACED, (agent, fact_id)).fetchone() is not None:
            relink(conn, agent, fact_id, key)


def link_supersessions(conn: Conn, agent: str, pairs: Sequence[tuple[str, str | None]]) -> None:
    """As `sqlite.chains.link_supersessions`, the ids escaped."""
    for old_id, new_id in pairs:
        if new_id is None:
            continue
        found = conn.execute(_CHAIN_AND_FROM, (agent, [old_id, new_id])).fetchall()
        if len(found) != 2:
            continue
        by_id = {str(r[0]): r for r in found}
        chain = by_id[old_id][1] or chain_name("", old_id)
        if by_id[old_id][1] is None:
            conn.execute(_JOIN_CHAIN, (chain, by_id[old_id][2], agent, old_id))
        if by_id[new_id][1] != chain:
            conn.execute(_JOIN_CHAIN, (chain, by_id[new_id][2], agent, new_id))
            relink(conn, agent, new_id, chain)


_CHAIN_AND_FROM = (
    "SELECT id, chain, coalesce(valid_from, created_at) FROM facts"
    " WHERE agent_id = %s AND id = ANY(%s) AND key = ''"
)


def prepare_supersede(
    conn: Conn, agent: str, old_id: str, row: FactRow, now: int
) -> tuple[FactRow, str]:
    """As `sqlite.chains.prepare_supersede`: the row to write and its chain."""
    found = conn.execute(_OLD_FACT, {"agent": agent, "id": encode(old_id), "now": now}).fetchone()
    old = None if found is None else (found[1], found[3], int(found[4]))
    new = superseding_row(row, old_id, old, now)  # raises when there is no old fact
    assert found is not None
    _, key, chain, _, old_from = found
    if chain is None:
        chain = chain_name(key, encode(old_id))
        conn.execute(_JOIN_CHAIN, (chain, old_from, agent, encode(old_id)))
    return new, str(chain)
