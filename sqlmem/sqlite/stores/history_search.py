"""History search by words (mode "any", `search_words`), and within one session on a large
file (0.2) at about the cost of searching that session alone.

Why not one SQL statement: FTS5 cannot filter by session before it ranks. The session is
not in the index (an UNINDEXED column would be read per match, after matching), its
messages are not contiguous in rowid (sessions interleave), and `rowid IN (...)` makes
FTS5 re-run the whole MATCH per rowid. The exact statement (`history_sql.SEARCH_SESSION`)
therefore scores every match in the file and keeps the session's: measured on 100,000
messages in 200 sessions, 66-85x the cost of the same search in a file holding only a
50-message session, 5-9x for a 20,000-message one.

So the plan depends on the session's size (one row of `sessions`, no count). Measured
on that file: a 50-message session 2.5-3.7x its cost alone.

* Small session (at most `SMALL_SESSION` messages): filter, then rank. Read the session's
  indexed texts by the (session, seq) index, tokenize them as FTS5 does (tokens are kept
  per text in the process: a session is searched again as it grows, and its old
  messages never change), and score the ones holding a query word with FTS5's BM25
  (`search.bm25.weigh`) and the file's statistics: N and the mean length from FTS5's
  averages record, each word's document count from the store's vocabulary (`fts_any`;
  exact counts for rare words, which are cheap to count; a common word's count may be
  stale by up to a tenth of the rows, as the "any" shortcut already allows on large
  histories). Counting a common word exactly
  would scan its posting list (~2-5 ms for "the" in 100,000 messages): the very cost
  this avoids.
* Large session: the exact statement. Ranking the whole file first (the unfiltered
  search's best `depth`, `depth` scaled by the session's share, then the session's among
  them) was tried and measured worse on the file above (8-12x instead of 5-9x for the
  20,000-message session): the "any" shortcut's rare-word candidates rarely reach such a
  depth, so the exact OR ranking of the whole file ran after it, or the AND of the common
  words scored many rows. What would help is left open.

Files under `PLAN_BELOW` indexed messages (the in-memory twin's agreement tests live
there) always take the exact statement: there it is cheap anyway.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import apsw

from ...records import Message
from ...rules.rows import messages_from_rows
from ...search.query import MAX_QUERY_TERMS, QueryCompiler, Term, compiler_for, phrases
from ..core.engine import Engine
from . import history_sql as sql
from .fts_any import EXACT_BELOW, RARE_SHARE, AnyShortcut, capped_terms, varint

__all__ = ["PLAN_BELOW", "SMALL_SESSION", "search_session", "search_words"]

#: Files with fewer indexed messages search a session with the exact statement alone.
PLAN_BELOW = EXACT_BELOW
#: Sessions of at most this many messages are filtered first. Tokenizing costs ~2 µs a
#: chat message, so 1,000 messages cost about one unfiltered search of 100,000.
SMALL_SESSION = 1_000

#: Tokenized message texts kept in the process (text -> tokens), and the longest kept:
#: ~1-2 MB of tokens for chat messages, plus the texts themselves.
CACHED_TEXTS = 8_192
CACHED_LENGTH = 2_000
_CACHE: dict[tuple[QueryCompiler, str], Sequence[str]] = {}
_CACHE_LOCK = threading.Lock()

#: FTS5's averages record of messages_fts, and the rows holding one phrase (fts_any's SQL).
AVERAGES = sql.ANY.averages
PHRASE_DOCS = sql.ANY.phrase_docs
#: (pk, messages ever stored minus popped ones) of the session: its size, no count.
SESSION_SIZE = "SELECT pk, last_seq - holes FROM sessions WHERE session_id = ?"
#: The session's indexed texts (as messages_fts_source defines them), in storage order.
SESSION_TEXTS = (
    "SELECT pk, coalesce(search_text, content) FROM messages"
    " WHERE session = ? AND searchable ORDER BY pk"
)
#: The rows of the best messages, in SEARCH_SESSION's shape but for the score.
ROWS_BY_PK = (
    f"SELECT m.pk, {sql.MESSAGE_COLUMNS} FROM messages AS m"
    " WHERE m.pk IN (SELECT value FROM json_each(?))"
)


def search_words(
    engine: Engine, shortcut: AnyShortcut, query: str, session_id: str | None, limit: int
) -> list[Message]:
    """`SQLiteHistoryStore.search` in mode "any" (its docstring says what it promises):
    the best `limit` messages, of `session_id` when given, in one read snapshot."""
    compiler = compiler_for(engine.tokenizer)
    terms = compiler.terms(query)
    if not terms:
        return []
    # A long query is cut to its rarest terms (as fact search does), in the snapshot.
    match = compiler.match(query, "any") if len(terms) <= MAX_QUERY_TERMS else None
    with engine.read() as conn:
        if match is None:
            terms = capped_terms(conn, sql.ANY, terms, "any")
            match = phrases(terms, " OR ")
            if match is None:  # no kept word is in any message
                return []
        if session_id is not None:  # a filter: planned by the session's size
            rows = search_session(conn, shortcut, compiler, terms, session_id, limit)
            if rows is None:  # a small file, or a large session: exact
                rows = conn.execute(sql.SEARCH_SESSION, (match, session_id, limit)).fetchall()
        else:
            found = shortcut.rows(conn, terms, limit)
            if found is None:  # a small history, or a query without common words
                found = conn.execute(sql.SEARCH_ALL, {"query": match, "limit": limit}).fetchall()
            if any(isinstance(row[9], bytes) for row in found):  # a purge under way
                found = conn.execute(sql.SEARCH_LIVE, {"query": match, "limit": limit}).fetchall()
            rows = found
    return _hits(rows)


def _hits(rows: Sequence[Sequence[Any]]) -> list[Message]:
    """Search rows: MESSAGE_COLUMNS, then session_id and the bm25 score (lower is better)."""
    hits = []
    for row in rows:
        hits.extend(messages_from_rows([row[:9]], row[9], [-row[10]]))
    return hits


def search_session(
    conn: apsw.Connection,
    shortcut: AnyShortcut,
    compiler: QueryCompiler,
    terms: Sequence[Term],
    session_id: str,
    limit: int,
) -> list[Any] | None:
    """Result rows (MESSAGE_COLUMNS, session_id, bm25) of a search within `session_id`,
    best first, or None: run the exact statement (a small file, or a large session)."""
    rows, tokens = _averages(conn)
    if rows < max(PLAN_BELOW, 1):
        return None
    found: list[Any] = conn.execute(SESSION_SIZE, (session_id,)).fetchall()
    if not found:
        return []
    session_pk, size = found[0]
    if size > SMALL_SESSION:
        return None
    stats = (rows, tokens / rows)
    return _filter_first(conn, shortcut, compiler, terms, session_pk, session_id, limit, stats)


def _averages(conn: apsw.Connection) -> tuple[int, int]:
    """(indexed rows, their tokens) from FTS5's averages record, as bm25() reads them."""
    found: list[Any] = conn.execute(AVERAGES).fetchall()
    if not found or not isinstance(found[0][0], bytes) or not found[0][0]:
        return 0, 0
    try:
        rows, pos = varint(found[0][0], 0)
        tokens, _ = varint(found[0][0], pos)
    except IndexError:  # a record we cannot read: take the exact statement
        return 0, 0
    return rows, tokens


def _filter_first(
    conn: apsw.Connection,
    shortcut: AnyShortcut,
    compiler: QueryCompiler,
    terms: Sequence[Term],
    session_pk: int,
    session_id: str,
    limit: int,
    stats: tuple[int, float],
) -> list[Any]:
    from ...search.bm25 import occurrences, weigh  # numpy: only on large files

    texts: list[Any] = conn.execute(SESSION_TEXTS, (session_pk,)).fetchall()
    if not texts:
        return []
    firsts = {term.tokens[0] for term in terms}
    phrases = [term.tokens for term in terms]
    hits: list[int] = []
    freqs: list[list[int]] = []
    lengths: list[int] = []
    for (pk, _), tokens in zip(texts, _tokens(compiler, [t for _, t in texts]), strict=True):
        if firsts.isdisjoint(tokens):
            continue
        kept = tuple(tokens)
        row = [kept.count(p[0]) if len(p) == 1 else occurrences(kept, p) for p in phrases]
        if any(row):  # a phrase's first token alone is no match
            hits.append(pk)
            freqs.append(row)
            lengths.append(len(kept))
    if not hits:
        return []
    n_docs, avgdl = stats
    scores = weigh(freqs, lengths, _doc_freqs(conn, shortcut, terms, n_docs), n_docs, avgdl)
    # Best first; equal scores in storage order, as the in-memory twin ranks them.
    best = sorted(range(len(hits)), key=lambda i: (-scores[i], hits[i]))[:limit]
    wanted = [hits[i] for i in best]
    rows: list[Any] = conn.execute(ROWS_BY_PK, (_json_ints(wanted),)).fetchall()
    by_pk = {row[0]: row[1:] for row in rows}
    return [(*by_pk[hits[i]], session_id, -scores[i]) for i in best]


def _tokens(compiler: QueryCompiler, texts: list[str]) -> list[Sequence[str]]:
    """Each text's tokens, from the cache when it was tokenized before (a session is
    searched again and again as it grows: its old messages never change), the rest in
    one batch."""
    out: list[Sequence[str] | None] = []
    missing: list[int] = []
    with _CACHE_LOCK:
        for i, text in enumerate(texts):
            found = _CACHE.get((compiler, text))
            out.append(found)
            if found is None:
                missing.append(i)
    if missing:
        fresh = compiler.document_tokens([texts[i] for i in missing])
        with _CACHE_LOCK:
            if len(_CACHE) + len(missing) > CACHED_TEXTS:
                _CACHE.clear()  # wholesale: cheaper than LRU bookkeeping on every hit
            for i, tokens in zip(missing, fresh, strict=True):
                out[i] = tokens
                if len(texts[i]) <= CACHED_LENGTH:
                    _CACHE[(compiler, texts[i])] = tokens
    return [tokens or () for tokens in out]


def _doc_freqs(
    conn: apsw.Connection, shortcut: AnyShortcut, terms: Sequence[Term], n_docs: int
) -> list[int]:
    """Each term's document count: the vocabulary's for common words, counted now for the
    rest (a rare word's posting list is short; a word new since the vocabulary's scan
    counts as rare there)."""
    dfs = shortcut.doc_freqs(conn, terms, n_docs)
    cutoff = n_docs * RARE_SHARE
    for j, term in enumerate(terms):
        if dfs[j] <= cutoff:
            found: list[Any] = conn.execute(PHRASE_DOCS, (f'"{term.phrase}"',)).fetchall()
            dfs[j] = int(found[0][0])
    return dfs


def _json_ints(values: list[int]) -> str:
    return "[" + ",".join(map(str, values)) + "]"
