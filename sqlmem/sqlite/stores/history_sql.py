"""SQL text of the history store, as constants so apsw's statement cache is always hit.

Tables (migrations/0001_initial.sql):

* `sessions`: one row per session id, owning the sequence counter `last_seq`, the archive
  boundary `archived_seq`, the compaction `summary`, and `unindexed` (messages stored
  with history search off are waiting for the FTS index). A message with
  `seq <= archived_seq` is archived; since seqs are gap-free, the active count is
  `last_seq - archived_seq` and needs no scan.
* `messages`: one row per message, `UNIQUE(session, seq)`; that index serves the range
  scans of `get_recent`/`get_all` and the cascade of `purge`.
* `messages_fts`: FTS5 over `coalesce(search_text, content)` of rows with `searchable = 1`,
  kept in sync by the schema's triggers (nothing here writes to it).

Export and import restore what these statements assign (seqs, timestamps, the archive
boundary), so their statements live apart, in `history_transfer_sql`.

The only SQL built at run time is the multi-row INSERT, whose row count comes from a small
fixed set (powers of two), so the statement cache still holds every variant.
"""

from __future__ import annotations

from functools import cache

from .fts_any import any_queries
from .fts_names import MESSAGES_FTS

__all__ = [
    "ANY",
    "ANY_UNINDEXED",
    "ARCHIVE",
    "AROUND",
    "CLEAR_UNINDEXED",
    "COUNT",
    "COUNT_RANGE",
    "DELETE_CHUNK",
    "DETACHED_SESSION",
    "DETACH_SESSION",
    "DROP_DETACHED",
    "EXACT_CHUNK_ROWS",
    "FIRST_NON_TOOL_AT_OR_BEFORE",
    "INDEX_UNSEARCHABLE",
    "INSERT_CHUNK_ROWS",
    "INSERT_ONE_FULL",
    "INSERT_ONE_PLAIN",
    "LISTED",
    "MESSAGE_COLUMNS",
    "OLDEST_KEPT",
    "POP",
    "POPPED",
    "PURGE",
    "READ_ALL",
    "READ_ALL_ACTIVE",
    "READ_COLUMNS",
    "READ_RECENT",
    "RESERVE_SEQS",
    "RESERVE_SEQS_UNINDEXED",
    "SEARCH_ALL",
    "SEARCH_LIVE",
    "SEARCH_SESSION",
    "SELECT_ALL",
    "SELECT_ALL_ACTIVE",
    "SELECT_ARCHIVED_SEQ",
    "SELECT_RECENT",
    "SELECT_SESSION",
    "SELECT_SUMMARY",
    "SESSIONS",
    "SESSIONS_AFTER",
    "SESSION_STATS",
    "SET_SUMMARY",
    "chunk_sizes",
    "insert_messages_sql",
]

#: Columns read back into a Message, in this order, for every query below.
MESSAGE_COLUMNS = (
    "m.seq, m.role, m.content, m.name, m.tool_call_id, m.tool_calls, m.is_error, "
    "m.metadata, m.created_at"
)

#: The largest seq a message can get: SQLite's largest integer (see history.MAX_SEQ).
MAX_SEQ = 2**63 - 1


# Takes `k` seqs for a batch of k messages inside the write transaction: the upsert creates
# the session on its first message and returns the new last_seq, so the batch's seqs are
# last_seq-k+1 .. last_seq, unique and gap-free whichever process writes.
# Past 2**63-1 SQLite's `+` silently turns into a float, which used to be committed as a
# REAL seq before Python choked on it: the CASE gives NULL instead, the
# NOT NULL constraint aborts the statement, and the store reports an exhausted session
# with nothing written. One comparison per append, no extra statement.
RESERVE_SEQS = f"""
INSERT INTO sessions(session_id, last_seq, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)
ON CONFLICT(session_id) DO UPDATE
    SET last_seq = CASE WHEN last_seq <= {MAX_SEQ} - excluded.last_seq
                    THEN last_seq + excluded.last_seq END,
        updated_at = excluded.updated_at
RETURNING pk, last_seq, archived_seq, holes
"""

# The same with history_search off: the messages go in unindexed, and the session is
# flagged so that the next open with search on finds them (INDEX_UNSEARCHABLE). The flag
# rides on the row this upsert writes anyway, so it costs no extra page.
RESERVE_SEQS_UNINDEXED = f"""
INSERT INTO sessions(session_id, unindexed, last_seq, created_at, updated_at)
VALUES (?1, 1, ?2, ?3, ?3)
ON CONFLICT(session_id) DO UPDATE
    SET last_seq = CASE WHEN last_seq <= {MAX_SEQ} - excluded.last_seq
                    THEN last_seq + excluded.last_seq END,
        updated_at = excluded.updated_at,
        unindexed = 1
RETURNING pk, last_seq, archived_seq, holes
"""

#: The columns an INSERT binds after (session, seq): every field of a message, or for a
#: plain one (text only: no name, tool call, error flag or metadata) the few that are set.
#: A plain row leaves the others to the schema's DEFAULTs ('', '', '[]', 0, '{}'), which
#: must stay exactly what encode_tool_calls([]) and encode_metadata({}) write: the two
#: shapes store identical rows (tests/unit/test_history_sqlite.py). Plain rows bind 7
#: values instead of 12: ~8% of a batched append with search off.
_FULL_ROW = (
    "role, content, name, tool_call_id, tool_calls, is_error, metadata, created_at, "
    "searchable, search_text"
)
_PLAIN_ROW = "role, content, created_at, searchable, search_text"

#: Largest multi-row INSERT: 128 rows x 12 values stays far below SQLite's variable limit.
INSERT_CHUNK_ROWS = 128
#: Batches up to this size go in one INSERT of their exact size. Beyond it, pieces of 128,
#: 64 and 32 rows and a rest of at most this size: at most 34 INSERT texts per shape, so
#: varied bulk loads do not flush apsw's statement cache (100 per connection).
EXACT_CHUNK_ROWS = 32


@cache
def insert_messages_sql(rows: int, plain: bool) -> str:
    """One INSERT of `rows` messages: FTS5 flushes per statement, so one beats many."""
    columns = _PLAIN_ROW if plain else _FULL_ROW
    row = "(" + ", ".join(["?"] * (2 + columns.count(",") + 1)) + ")"
    return f"INSERT INTO messages(session, seq, {columns}) VALUES " + ", ".join([row] * rows)


def chunk_sizes(total: int) -> list[int]:
    """How a batch of `total` messages is cut into INSERTs (see EXACT_CHUNK_ROWS).

    With search on, every statement is an FTS5 flush (~20-40 µs): a turn of 3, 5 or 7
    messages goes in one statement, not 2 or 3 of power-of-two sizes."""
    sizes = [INSERT_CHUNK_ROWS] * (total // INSERT_CHUNK_ROWS)
    rest = total % INSERT_CHUNK_ROWS
    for piece in (64, 32):
        if rest > EXACT_CHUNK_ROWS and rest >= piece:
            sizes.append(piece)
            rest -= piece
    if rest:
        sizes.append(rest)
    return sizes


#: The single-message INSERTs of `append` (the hot path: no builder call, no chunking).
INSERT_ONE_PLAIN = insert_messages_sql(1, plain=True)
INSERT_ONE_FULL = insert_messages_sql(1, plain=False)

SELECT_SESSION = "SELECT pk, last_seq, archived_seq, holes FROM sessions WHERE session_id = ?"

# The session's pk and archive boundary come from scalar subqueries, evaluated once;
# then a descending range scan of UNIQUE(session, seq) stops after n rows (no sort, no
# full scan). A join of sessions and messages looked the same on a fresh file, but once
# ANALYZE (run by `PRAGMA optimize` at close) has seen a file with one session, the
# planner scanned sessions as the outer loop and sorted every message of the session in
# a temp b-tree (tests/unit/test_hot_paths.py pins the plan after ANALYZE). It is also
# ~8 µs cheaper per call for 50 rows.
_SESSION_PK = "(SELECT pk FROM sessions WHERE session_id = ?1)"
_ARCHIVED = "(SELECT archived_seq FROM sessions WHERE session_id = ?1)"

SELECT_RECENT = f"""
SELECT {MESSAGE_COLUMNS}
FROM messages AS m
WHERE m.session = {_SESSION_PK} AND m.seq > {_ARCHIVED}
ORDER BY m.seq DESC
LIMIT ?2
"""

SELECT_ALL_ACTIVE = f"""
SELECT {MESSAGE_COLUMNS}
FROM messages AS m
WHERE m.session = {_SESSION_PK} AND m.seq > {_ARCHIVED}
ORDER BY m.seq
"""

SELECT_ALL = f"""
SELECT {MESSAGE_COLUMNS}
FROM messages AS m
WHERE m.session = {_SESSION_PK}
ORDER BY m.seq
"""

# -- the per-turn read: get_recent and get_all ----------------------------------------------
#
# An agent reads its window every turn, and most messages are text only (no name, tool
# call, error flag or metadata). Such a row reads as four values and a NULL; any other
# carries its five other fields in one JSON array, tool calls and metadata nested as
# JSON (`json()` keeps numbers' and strings' text as stored, so they read back equal).
# Measured on get_recent(50) of plain messages: ~8 µs less than MESSAGE_COLUMNS (SQLite
# fetches five columns fewer per row, Python unpacks and tests fewer), and no slower
# with metadata or tool calls on every other row (one json.loads instead of two).
# Rows are built by `rules.rows.messages_from_read_rows`.
READ_COLUMNS = (
    "m.seq, m.role, m.content, m.created_at, "
    "CASE WHEN m.metadata = '{}' AND m.tool_calls = '[]' AND m.name = '' "
    "AND m.tool_call_id = '' AND NOT m.is_error THEN NULL "
    "ELSE json_array(m.name, m.tool_call_id, json(m.tool_calls), m.is_error, json(m.metadata)) END"
)

READ_RECENT = f"""
SELECT {READ_COLUMNS}
FROM messages AS m
WHERE m.session = {_SESSION_PK} AND m.seq > {_ARCHIVED}
ORDER BY m.seq DESC
LIMIT ?2
"""

READ_ALL_ACTIVE = f"""
SELECT {READ_COLUMNS}
FROM messages AS m
WHERE m.session = {_SESSION_PK} AND m.seq > {_ARCHIVED}
ORDER BY m.seq
"""

READ_ALL = f"""
SELECT {READ_COLUMNS}
FROM messages AS m
WHERE m.session = {_SESSION_PK}
ORDER BY m.seq
"""

# Popped seqs leave holes (migrations/0005_history_pop.sql): still one row read.
COUNT = "SELECT last_seq - archived_seq - holes FROM sessions WHERE session_id = ?"

SELECT_SUMMARY = "SELECT summary FROM sessions WHERE session_id = ?"
SELECT_ARCHIVED_SEQ = "SELECT archived_seq FROM sessions WHERE session_id = ?"

SET_SUMMARY = """
INSERT INTO sessions(session_id, summary, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)
ON CONFLICT(session_id) DO UPDATE
    SET summary = excluded.summary, updated_at = excluded.updated_at
"""

# The newest message in (archived_seq, first_kept] that is not a tool result: keeping it
# and everything after keeps a tool call together with its results. Walks the index
# backwards from first_kept and stops at the first hit.
FIRST_NON_TOOL_AT_OR_BEFORE = """
SELECT seq FROM messages
WHERE session = ?1 AND seq > ?2 AND seq <= ?3 AND role != 'tool'
ORDER BY seq DESC
LIMIT 1
"""

# Moves the boundary (never backwards) and, for compact(), stores the summary with it;
# ?5 holes (popped seqs) fell behind the boundary and no longer count.
ARCHIVE = """
UPDATE sessions
SET archived_seq = max(archived_seq, ?2),
    summary = coalesce(?3, summary),
    updated_at = ?4,
    holes = holes - ?5
WHERE pk = ?1
"""

# -- after a pop (0.2): seqs may have holes, so ranges are counted, not subtracted ----------

# The oldest message a compaction keeps: the ?3-th newest active one (OFFSET ?3 - 1).
OLDEST_KEPT = """
SELECT seq FROM messages WHERE session = ?1 AND seq > ?2 ORDER BY seq DESC LIMIT 1 OFFSET ?3
"""

# Messages in (?2, ?3]: how many a boundary move archives when the session has holes.
COUNT_RANGE = "SELECT count(*) FROM messages WHERE session = ?1 AND seq > ?2 AND seq <= ?3"

# pop(): the newest active message goes (its FTS entry with it, by the delete trigger),
# returned in MESSAGE_COLUMNS' order; then its seq is counted as a hole. last_seq stays,
# so the next append takes the next number: a seq is never used twice.
POP = """
DELETE FROM messages
WHERE pk = (SELECT pk FROM messages WHERE session = ?1 AND seq > ?2 ORDER BY seq DESC LIMIT 1)
RETURNING seq, role, content, name, tool_call_id, tool_calls, is_error, metadata, created_at
"""
POPPED = "UPDATE sessions SET holes = holes + 1, updated_at = ?2 WHERE pk = ?1"

# around(): the message at ?2 and up to ?3 - 1 messages before it, then up to ?4 after
# it, archived included; two range scans of UNIQUE(session, seq), one statement (one
# snapshot), no sorter in SQL: the store orders the few rows by seq, and returns []
# unless the row at ?2 is among them.
AROUND = f"""
SELECT * FROM (
    SELECT {MESSAGE_COLUMNS} FROM messages AS m
    WHERE m.session = {_SESSION_PK} AND m.seq <= ?2 ORDER BY m.seq DESC LIMIT ?3)
UNION ALL
SELECT * FROM (
    SELECT {MESSAGE_COLUMNS} FROM messages AS m
    WHERE m.session = {_SESSION_PK} AND m.seq > ?2 ORDER BY m.seq LIMIT ?4)
"""

# -- purge (one transaction for 500,000 messages once held the writer ~20 s) ---------------
#
# A session of at most `purge.PURGE_CHUNK_ROWS` messages (last_seq bounds the count) goes
# in one transaction: its messages by ON DELETE CASCADE, the FTS delete trigger firing
# for each. A larger one is first *detached*, in one small transaction: its row gets a
# BLOB id (its pk's digits as bytes) and loses its counter, boundary and summary. No user
# can name it (session ids are bound as text, and a text never equals a blob), so every
# read by id sees an unknown session, `sessions()` and the export skip it (no messages
# counted, no summary), and a new session of the same id starts at once with a row of
# its own. Its messages then go `PURGE_CHUNK_ROWS` at a time, each chunk its own short
# write transaction, and the row last. A crash in between leaves detached rows only,
# which no read returns and the next purge or vacuum removes (`purge.finish_purges`).
PURGE = "DELETE FROM sessions WHERE pk = ?"

DETACH_SESSION = """
UPDATE sessions
SET session_id = CAST(pk AS BLOB), unindexed = 0, summary = '', last_seq = 0,
    archived_seq = 0, holes = 0, updated_at = ?2
WHERE pk = ?1
"""

# BLOB values sort after every TEXT value, so this is one seek at the end of the
# session_id index: free when nothing is pending.
DETACHED_SESSION = "SELECT pk FROM sessions WHERE session_id >= x'' LIMIT 1"

# One chunk, found through UNIQUE(session, seq) (which holds the pk): a bounded write.
DELETE_CHUNK = """
DELETE FROM messages
WHERE pk IN (SELECT pk FROM messages WHERE session = ?1 ORDER BY seq LIMIT ?2)
"""

DROP_DETACHED = """
DELETE FROM sessions WHERE pk = ?1 AND NOT EXISTS (SELECT 1 FROM messages WHERE session = ?1)
"""

#: A session `sessions()` lists: it has a summary or a message (archived ones included).
#: Active messages show in the row itself; a session whose every seq is a hole or archived
#: is probed for a message (pops).
LISTED = """(summary != '' OR (last_seq > 0 AND (last_seq - archived_seq > holes
    OR EXISTS (SELECT 1 FROM messages WHERE session = sessions.pk))))"""
SESSIONS = f"SELECT session_id FROM sessions WHERE {LISTED} ORDER BY session_id"
#: A page of them: a walk of the session_id index from `:after` ('' sorts before every
#: id), stopping after `:limit` (-1: no limit). Text compares as UTF-8 bytes: code points.
SESSIONS_AFTER = (
    f"SELECT session_id FROM sessions WHERE session_id > :after AND {LISTED}"
    " ORDER BY session_id LIMIT :limit"
)

# `sqlmem sessions`: per listed session its active and archived counts and the
# created_at of its newest message (NULL when it has only a summary).
SESSION_STATS = f"""
SELECT session_id, last_seq - archived_seq - holes,
    (SELECT count(*) FROM messages WHERE session = sessions.pk AND seq <= sessions.archived_seq),
    (SELECT created_at FROM messages WHERE session = sessions.pk ORDER BY seq DESC LIMIT 1)
FROM sessions WHERE {LISTED} ORDER BY session_id
"""

#: Search mode "any" on large histories (sqlmem.sqlite.stores.fts_any): the ranked subquery yields
#: (pk, score); rows come back in SEARCH_ALL's shape.
ANY = any_queries(
    MESSAGES_FTS,
    f"SELECT {MESSAGE_COLUMNS}, s.session_id, r.score FROM ({{ranked}}) AS r"
    " CROSS JOIN messages AS m ON m.pk = r.pk"
    " CROSS JOIN sessions AS s ON s.pk = m.session ORDER BY r.score",
)

# Exact search over every session: the FTS subquery sorts the matches by bm25() in
# SQLite's sorter and keeps the best :limit; the message and session rows are looked up
# for those only. FTS5's `ORDER BY rank` measured ~1.5x slower for OR queries on 100,000
# rows (its sorted mode prepares and runs an inner statement per query).
SEARCH_ALL = ANY.bm25

# The session filter applies before LIMIT, so the result is the best top_k of that
# session. FTS drives (CROSS JOIN): probing the index once per message of a large
# session would be far slower than filtering the matches. `LIMIT +?3`: a bare bound
# LIMIT made SQLite re-prepare the statement at every call (facts_sql.search_sql says
# why), ~7 us of a ~16 us search that matches nothing.
SEARCH_SESSION = f"""
SELECT {MESSAGE_COLUMNS}, ?2, {MESSAGES_FTS}.rank
FROM {MESSAGES_FTS} CROSS JOIN messages AS m ON m.pk = {MESSAGES_FTS}.rowid
WHERE {MESSAGES_FTS} MATCH ?1
  AND m.session = (SELECT pk FROM sessions WHERE session_id = ?2)
ORDER BY {MESSAGES_FTS}.rank
LIMIT +?3
"""

# Search while a detached session still has messages (their FTS entries go with them,
# chunk by chunk): SEARCH_ALL ranks before it joins the session, so its rows could hold
# them. The store notices (a BLOB session id in a row) and runs this instead, which
# leaves them out before LIMIT. It joins every match to its message, so it costs more;
# it runs only in that window, and only for queries that matched such a message.
SEARCH_LIVE = f"""
SELECT {MESSAGE_COLUMNS}, s.session_id, r.score
FROM (
    SELECT {MESSAGES_FTS}.rowid AS pk, bm25({MESSAGES_FTS}) AS score
    FROM {MESSAGES_FTS} CROSS JOIN messages AS live ON live.pk = {MESSAGES_FTS}.rowid
    WHERE {MESSAGES_FTS} MATCH :query
      AND live.session NOT IN (SELECT pk FROM sessions WHERE session_id >= x'')
    ORDER BY score
    LIMIT +:limit
) AS r
CROSS JOIN messages AS m ON m.pk = r.pk
CROSS JOIN sessions AS s ON s.pk = m.session
ORDER BY r.score
"""

# Run at open when history_search is on: is anything waiting for the FTS index? A scan of
# the sessions table (one row per session), so an open with nothing pending reads no
# message at all.
ANY_UNINDEXED = "SELECT 1 FROM sessions WHERE unindexed LIMIT 1"

# Then index what was stored while search was off, and clear the flags. With fresh or no
# statistics the planner visits the flagged sessions through UNIQUE(session, seq); once
# ANALYZE has seen a file whose messages sit in one session it scans them instead, which
# costs the same there. Either way it runs once, not at every open.
INDEX_UNSEARCHABLE = """
UPDATE messages SET searchable = 1
WHERE session IN (SELECT pk FROM sessions WHERE unindexed) AND searchable = 0
"""
CLEAR_UNINDEXED = "UPDATE sessions SET unindexed = 0 WHERE unindexed"
