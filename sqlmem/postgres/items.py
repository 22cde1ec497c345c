"""Memory items on PostgreSQL (SPEC 12): remember's merge and the open hook that fills
fingerprints. `PostgresFactStore`'s methods call these inside their write transactions.

Every writer of an agent's facts first takes the agent's `corpus_stats` row (facts), so
two `remember`s of one text, from threads, processes or machines, run one after the other:
the second one's lookup runs after the first committed and finds its fact (exactly one
fact, hits summed). The merge itself is `rules.items.merge_item`, the rule the SQLite
store and the in-memory twin apply too.
"""

from __future__ import annotations

import json
from typing import Any

from ..rules.filters import FactRow
from ..rules.identity import fingerprint
from ..rules.items import merge_item
from . import facts_sql as sql
from .codec import decode, encode, jsonb_text
from .engine import Conn

__all__ = ["FINGERPRINT_BATCH", "fill_fingerprints", "remember", "tag_set"]

#: Rows read and updated per statement pair while filling fingerprints.
FINGERPRINT_BATCH = 5000


def tag_set(tags_json: str) -> list[str]:
    """The `tag_set` column of a fact's tags (JSON array text): distinct, escaped, sorted."""
    return sorted({encode(t) for t in json.loads(tags_json)}) if tags_json != "[]" else []


def remember(conn: Conn, agent: str, row: FactRow, now: int) -> str | None:
    """Merge `row` into the oldest live fact of its layer with its fingerprint, inside
    the caller's write transaction (the agent's corpus row already locked); returns that
    fact's id, or None when `row` must be written as `index` writes it (its id is stored,
    or nothing matches)."""
    if row.valid_from_ms is not None:
        return None  # a fact given its own valid time is a version of its own
    if conn.execute(sql.ID_EXISTS, {"agent": agent, "id": encode(row.id)}).fetchone():
        return None
    found = conn.execute(
        sql.REMEMBER_FIND,
        {
            "agent": agent,
            "fingerprint": row.fingerprint,
            "layer": row.layer,
            "key": row.key,
            "now": now,
        },
    ).fetchone()
    if found is None:
        return None
    pk, fact_id, *stored = found
    merged = merge_item(
        tuple(stored),
        row.tags,
        row.refs,
        row.metadata,
        row.confidence,
        row.salience,
        row.expires_ms,
    )
    params: dict[str, Any] = {
        "agent": agent,
        "pk": pk,
        "tags": merged.tags,
        "tag_set": tag_set(merged.tags),
        "refs": merged.refs,
        "metadata": merged.metadata,
        "meta": meta_jsonb(merged.metadata),
        "confidence": merged.confidence,
        "salience": merged.salience,
        "expires": merged.expires_ms,
        "now": now,
    }
    conn.execute(sql.REMEMBER_MERGE, params)
    return decode(fact_id)


def meta_jsonb(metadata_json: str) -> str:
    """The jsonb text of stored metadata (`codec.jsonb_text`)."""
    if metadata_json == "{}":
        return metadata_json
    return jsonb_text(json.loads(metadata_json))


def fill_fingerprints(conn: Conn, agent: str) -> None:
    """Open hook: the fingerprint of each of the agent's facts stored without one (rows
    written before migration 0002, or by another client), in the caller's transaction.
    SQL cannot NFKC-normalise and casefold as Python does, so the migration left ''.
    Their `meta` is rewritten too: version 1 wrote floats and NUL-holding strings in
    another jsonb form than `codec.jsonb_text`, which the 0.2 operators compare."""
    while True:
        rows = conn.execute(sql.UNFINGERPRINTED, (agent, FINGERPRINT_BATCH)).fetchall()
        if not rows:
            return
        with conn.cursor() as cur:
            cur.executemany(
                sql.SET_FINGERPRINT,
                [
                    (fingerprint(decode(content)), meta_jsonb(metadata), agent, pk)
                    for pk, content, metadata in rows
                ],
            )
