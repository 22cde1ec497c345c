"""The search blocks of the PostgreSQL document store: written, moved and counted.

`write_blocks` brings a document's blocks from its old content's to its new one's as the
SQLite store does (`sqlmem.rules.doc_blocks`: only the blocks around a change), inside
the caller's transaction, with the agent's `corpus_stats` row (corpus 3) kept exact.
`key` is the statement parameters naming the document: `{"agent": ..., "path": ...}`.
"""

from __future__ import annotations

from typing import Any

from ..rules.doc_blocks import Block, changed_lines, lines_between, split_blocks
from ..search.query import QueryCompiler, segment
from . import docs_sql as sql
from .codec import encode
from .engine import Conn
from .ranking import MAX_LEXEME, tsvector

__all__ = ["insert_blocks", "write_blocks"]

#: PostgreSQL refuses a tsvector whose lexemes and positions take more than 1 MiB - 1;
#: a margin below it.
_MAX_TSVECTOR_BYTES = 1_000_000


def write_blocks(
    conn: Conn, compiler: QueryCompiler, key: dict[str, Any], old: str, new: str
) -> None:
    """Bring the document's blocks from `old`'s to `new`'s: only the blocks around the
    change are replaced (`changed_lines`, widened to the blocks that touch it, which a
    change may merge or split), the blocks after it move by the change in line count
    (one UPDATE: the block key is checked at the statement's end). So an append or an
    edit of one passage costs about the same on a large document as on a small one."""
    change = changed_lines(old, new)
    around = {**key, "first": change.first - 1, "last": change.old_last + 1}
    gone = conn.execute(sql.DELETE_BLOCKS_AROUND, around).fetchall()
    first = min([change.first, *(start for start, _, _ in gone)])
    old_last = max([change.old_last, *(end for _, end, _ in gone)])
    delta = change.new_last - change.old_last
    if delta:
        conn.execute(sql.SHIFT_BLOCKS, {**key, "delta": delta, "after": old_last})
    region = lines_between(new, change, first, old_last + delta)
    insert_blocks(
        conn,
        compiler,
        key,
        split_blocks(region),
        first - 1,
        len(gone),
        sum(n for _, _, n in gone),
    )


def insert_blocks(
    conn: Conn,
    compiler: QueryCompiler,
    key: dict[str, Any],
    blocks: list[Block],
    offset: int,
    gone: int = 0,
    gone_tokens: int = 0,
) -> None:
    """Insert `blocks` (lines moved by `offset`) in one statement of arrays, and move the
    statistics by them minus the `gone` blocks of `gone_tokens` tokens."""
    starts, ends, texts, lens, tsvs = [], [], [], [], []
    for block in blocks:
        tokens = compiler.tokens(segment(block.text) or block.text)
        starts.append(block.start_line + offset)
        ends.append(block.end_line + offset)
        texts.append(encode(block.text))
        lens.append(len(tokens))
        tsvs.append(tsvector(_within_tsvector_limit(tokens)))
    if blocks:
        arrays = {"starts": starts, "ends": ends, "texts": texts, "lens": lens, "tsvs": tsvs}
        conn.execute(sql.INSERT_BLOCKS, {**key, **arrays})
    if len(blocks) != gone or sum(lens) != gone_tokens:
        conn.execute(
            sql.UPDATE_STATS,
            (len(blocks) - gone, sum(lens) - gone_tokens, key["agent"], sql.DOCUMENTS),
        )


def _within_tsvector_limit(tokens: tuple[str, ...]) -> tuple[str, ...]:
    """`tokens` without those that would take the block's tsvector past PostgreSQL's
    limit (each lexeme costs its UTF-8 bytes, 2-byte alignment and count, and 2 bytes
    per position, of which `ranking.tsvector` keeps 256). A document may hold any content up
    to 10 MiB, so a block of some 80,000 distinct words or more (a pasted log) is stored
    whole and found by its first words; its later new words are not searchable (its
    length, for BM25, stays whole). Facts and messages, without such a promise, refuse
    such a row instead. Positions past 16,383 are one already (`ranking`), so dropping
    tokens this far into a block moves no phrase's positions."""
    if len(tokens) * 2 + sum(map(len, tokens)) * 4 <= _MAX_TSVECTOR_BYTES // 2:
        return tokens
    positions: dict[str, int] = {}
    size = 0
    kept = []
    for token in tokens:
        lexeme = token[:MAX_LEXEME]
        count = positions.get(lexeme)
        if count is None:
            cost = len(lexeme.encode("utf-8", "surrogatepass")) + 1 + 2 + 2
        else:
            cost = 2 if count < 256 else 0
        if size + cost > _MAX_TSVECTOR_BYTES:
            continue
        size += cost
        positions[lexeme] = (count or 0) + 1
        kept.append(token)
    return tuple(kept)
