"""Opening one database file's connections in the order the promises about files we do
not own need.

The header is read first (a non-database fails before anything is written), then the
schema version (a newer file is refused untouched), and only then is the journal mode
switched and the schema migrated. A read-only connection (see `Engine`) is made
`query_only` before its first read and is never migrated.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import apsw

from ...config import StoreConfig
from ..apsw_errors import translate_errors
from ..stores.fts_any import vocabulary_table
from ..stores.fts_names import DOCUMENTS_FTS, FACTS_FTS, MESSAGES_FTS
from .connection import (
    WalCheckpointer,
    check_is_database,
    connect,
    install_checkpointer,
    require_fts5,
    set_wal,
)
from .migrations import apply_migrations, refuse_foreign_files
from .readonly import make_read_only, require_latest_schema

__all__ = ["open_reader", "open_writer"]

#: Created in every reader connection's temp schema before it turns query_only (and in the
#: writer's, which serves the reads of a thread inside its own write transaction): the
#: vocabularies mode "any" reads its dfs from (sqlmem.sqlite.stores.fts_any). Nothing goes in
#: the file.
READER_TEMP_TABLES = (
    vocabulary_table(FACTS_FTS),
    vocabulary_table(MESSAGES_FTS),
    vocabulary_table(DOCUMENTS_FTS),
)

#: The engine's `readers_paused(timeout)`: what the writer's last-resort checkpoint uses.
ReadersPaused = Callable[[float], AbstractContextManager[bool]]


def open_writer(
    path: Path,
    config: StoreConfig,
    readers_paused: ReadersPaused,
    *,
    create: bool,
    read_only: bool,
    keep_wal: bool,
) -> tuple[apsw.Connection, WalCheckpointer | None]:
    """The write connection, checked and (unless read-only) migrated, with its WAL
    checkpointer (None when read-only). On failure nothing stays open."""
    conn = connect(path, config, create=create, read_only=read_only)
    checkpointer = None
    try:
        if read_only:
            make_read_only(conn, path, keep_wal=keep_wal)
        else:
            checkpointer = install_checkpointer(conn, config, readers_paused, defer_passive=True)
        check_is_database(conn, path)
        refuse_foreign_files(conn, path)
        if not read_only:
            set_wal(conn, path, config)
        require_fts5(conn, path)
        if read_only:
            require_latest_schema(conn, path)
        else:
            apply_migrations(conn, path, config.tokenizer)
            # A thread inside a write transaction reads on this connection
            # (Writer.held_by_me), mode "any" included.
            _create_temp_tables(conn, path)
    except BaseException:
        close_quietly(conn)
        raise
    return conn, checkpointer


def open_reader(
    path: Path, config: StoreConfig, *, read_only: bool, keep_wal: bool
) -> apsw.Connection:
    """One reader connection: its temp tables, then query_only."""
    conn = connect(path, config, read_only=read_only)
    try:
        _create_temp_tables(conn, path)
        make_read_only(conn, path, keep_wal=keep_wal)
    except BaseException:
        conn.close()
        raise
    return conn


def close_quietly(conn: apsw.Connection) -> None:
    """Close after a failed open: the open's own error is what the caller must see, so a
    close that fails too (an I/O error rolling back) is forced and not reported over it."""
    with contextlib.suppress(apsw.Error):
        conn.close(True)


def _create_temp_tables(conn: apsw.Connection, path: Path) -> None:
    with translate_errors(str(path)):
        for statement in READER_TEMP_TABLES:
            conn.execute(statement)
