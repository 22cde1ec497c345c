"""Memory items on SQLite: remember, promote, expire, and the open hook that
fills fingerprints. `SQLiteFactStore`'s methods of those names call these.

Every operation is one `BEGIN IMMEDIATE` transaction on the writer, with its lookups
inside it: the write lock is taken before the lookup, so two `remember`s of one text, from
threads or from processes, run one after the other and the second finds the first's fact
(exactly one fact, hits summed). The merge itself is `rules.items.merge_item`, the rule
the in-memory twin applies too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import apsw

from ...config import StoreConfig
from ...rules.filters import FactRow
from ...rules.identity import fingerprint
from ...rules.items import merge_item
from . import facts_sql as sql
from .chains import place_keyed

if TYPE_CHECKING:
    from ..core.writer import Writer

__all__ = ["FINGERPRINT_BATCH", "fill_fingerprints", "promote_eligible", "remember"]

#: Rows read and updated per statement pair while filling fingerprints.
FINGERPRINT_BATCH = 5000


def remember(conn: apsw.Connection, row: FactRow, now: int) -> str | None:
    """Merge `row` into the oldest live fact of its layer with its fingerprint, inside
    the caller's write transaction; returns that fact's id, or None when `row` must be
    written as `index` writes it (its id is stored, or nothing matches)."""
    if row.valid_from_ms is not None or conn.execute(sql.ID_EXISTS, (row.id,)).fetchall():
        return None  # a fact given its own valid time is a version of its own
    params = {"fingerprint": row.fingerprint, "layer": row.layer, "now": now}
    found: list[Any] = [r[:-1] for r in conn.execute(sql.REMEMBER_FIND, params) if r[-1] == row.key]
    if not found:
        return None  # a text under another key is another slot's fact: no merge
    pk, fact_id, *stored = found[0]
    merged = merge_item(
        tuple(stored),
        row.tags,
        row.refs,
        row.metadata,
        row.confidence,
        row.salience,
        row.expires_ms,
    )
    conn.execute(sql.REMEMBER_MERGE, (*merged, now, pk))
    return str(fact_id)


def promote_eligible(conn: apsw.Connection, params: dict[str, Any]) -> list[str]:
    """Move every qualifying fact; their ids, oldest first (as the twin orders them)."""
    rows: list[Any] = conn.execute(sql.PROMOTE_ELIGIBLE, params).fetchall()
    rows.sort(key=lambda r: (r[1], r[2]))
    # facts_chain_move took the chained ones out of their chains: keyed ones join their
    # key's chain of the new layer
    place_keyed(conn, [(str(r[0]), str(r[3])) for r in rows if r[3]])
    return [r[0] for r in rows]


def fill_fingerprints(writer: Writer, config: StoreConfig) -> None:
    """Open hook: compute the fingerprint of every fact stored without one.

    Who stores such facts: the upgrade from a 0.1 file (SQL cannot NFKC-normalise or
    casefold, so migration 0003 leaves '' in every existing row), and any plain SQLite
    client inserting rows. An open with nothing to fill costs one index probe and takes no
    write lock. Otherwise every such row is filled in batches inside ONE write transaction:
    a crash leaves either all of them filled or none (the next open starts again), a
    second opener waits for the lock then finds nothing left, and no `remember` of
    another process runs while some facts still lack the fingerprint it would look up.
    """
    del config  # the hook signature; fingerprints do not depend on settings
    if not writer.connection.execute(sql.ANY_UNFINGERPRINTED).fetchall():
        return
    with writer.transaction() as conn:
        while True:
            rows: list[Any] = conn.execute(sql.UNFINGERPRINTED, (FINGERPRINT_BATCH,)).fetchall()
            if not rows:
                return
            conn.executemany(
                sql.SET_FINGERPRINT, [(fingerprint(content), pk) for pk, content in rows]
            )
