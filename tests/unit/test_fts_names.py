"""The FTS table names are written once (sqlmem.sqlite.stores.fts_names) and must name what the
migrations create: a renamed table in a new migration must fail here, not at a user's
first search."""

from __future__ import annotations

import sqlmem
from sqlmem.sqlite.core import file_open
from sqlmem.sqlite.stores import facts_sql, history_sql
from sqlmem.sqlite.stores.fts_names import DOCUMENTS_FTS, FACTS_FTS, FTS_TABLES, MESSAGES_FTS


def test_the_names_are_the_migrated_fts5_tables(db: sqlmem.MemoryDB) -> None:
    with db._engine.read() as conn:
        rows = conn.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND sql LIKE '%USING fts5%'"
        ).fetchall()
    assert {name for (name,) in rows} == set(FTS_TABLES) == {FACTS_FTS, MESSAGES_FTS, DOCUMENTS_FTS}


def test_every_reader_has_a_vocabulary_per_fts_table(db: sqlmem.MemoryDB) -> None:
    assert len(file_open.READER_TEMP_TABLES) == len(FTS_TABLES)
    with db._engine.read() as conn:
        for table in FTS_TABLES:
            conn.execute(f"SELECT count(*) FROM temp.{table}_vocab").fetchall()


def test_the_statements_name_their_own_table() -> None:
    assert FACTS_FTS in facts_sql.ANY.bm25 and MESSAGES_FTS not in facts_sql.ANY.bm25
    for text in (history_sql.ANY.bm25, history_sql.SEARCH_SESSION, history_sql.SEARCH_LIVE):
        assert MESSAGES_FTS in text and FACTS_FTS not in text
