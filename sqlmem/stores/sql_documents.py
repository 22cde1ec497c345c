"""`SqlDocumentPort`: what the document port does the same way on SQLite and PostgreSQL.

Reading a document, listing them, the contents a prompt or an export reads, and the two
flag writes are each one constant statement and rows handed on (their content decoded
where the dialect escapes it): the same Python on both SQL backends. This class holds
it; each backend subclasses it with what genuinely differs (a change of content, which
SQLite cuts into blocks before its write lock and PostgreSQL under its corpus lock;
delete; revisions; search), handing it its statements (`DocumentStatements`, the same
names in each dialect's `docs_sql`) and how it stores text. Values are bound by name
(`sql_port`).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any, Protocol

from .sql_port import SqlEngine

__all__ = ["DocumentStatements", "SqlDocumentPort", "changed"]


class DocumentStatements(Protocol):
    """The statements of a dialect's `docs_sql` the shared port runs."""

    READ: str  # path, content, enabled, sort_order, revision, created_at, updated_at, size
    LIST: str  # the documents under :prefix
    SET_ENABLED: str  # a row returned when the document is there
    SET_SORT_ORDER: str  # likewise
    ENABLED_CONTENTS: str  # (path, content) rows
    MEMORY_CONTEXT: str
    READ_CONTENTS: str


class SqlDocumentPort:
    """The document port's operations both SQL backends share (`DocumentPort` once the
    backend adds the rest); thread-safe as its engine."""

    def __init__(
        self,
        engine: SqlEngine,
        statements: DocumentStatements,
        agent: str | None,
        untext: Callable[[str], str],
    ) -> None:
        """`untext`: a content as stored, back (PostgreSQL escapes NUL)."""
        self._engine = engine
        self._sql = statements
        self._agent = agent
        self._untext = untext

    @property
    def revisions_kept(self) -> int:
        return self._engine.config.doc_revisions

    def _key(self, path: str, **more: Any) -> dict[str, Any]:
        more["agent"], more["path"] = self._agent, path
        return more

    # -- writes ---------------------------------------------------------------------------

    def set_enabled(self, path: str, enabled: bool) -> bool:
        return changed(self._engine, self._sql.SET_ENABLED, self._key(path, enabled=enabled))

    def set_sort_order(self, path: str, order: int) -> bool:
        return changed(self._engine, self._sql.SET_SORT_ORDER, self._key(path, order=order))

    # -- reads ----------------------------------------------------------------------------

    def read(self, path: str) -> tuple[Any, ...] | None:
        rows = _rows(self._engine, self._sql.READ, self._key(path))
        if not rows:
            return None
        row = rows[0]
        return (row[0], self._untext(row[1]), *row[2:])

    def infos(self, prefix: str) -> builtins.list[tuple[Any, ...]]:
        return _rows(self._engine, self._sql.LIST, {"agent": self._agent, "prefix": prefix})

    def enabled_contents(self) -> builtins.list[tuple[str, str]]:
        params = {"agent": self._agent}
        return self._contents(_rows(self._engine, self._sql.ENABLED_CONTENTS, params))

    def memory_contents(self, first: str, last: str) -> builtins.list[tuple[str, str]]:
        params = {"agent": self._agent, "first": first, "last": last}
        return self._contents(_rows(self._engine, self._sql.MEMORY_CONTEXT, params))

    def all_contents(self) -> builtins.list[tuple[str, str]]:
        """One statement: the files agree with each other."""
        params = {"agent": self._agent, "prefix": ""}
        return self._contents(_rows(self._engine, self._sql.READ_CONTENTS, params))

    def _contents(self, rows: builtins.list[Any]) -> builtins.list[tuple[str, str]]:
        untext = self._untext
        return [(path, untext(content)) for path, content in rows]


def changed(engine: SqlEngine, statement: str, params: dict[str, Any]) -> bool:
    """Run one write statement returning a row per row it changed; whether it changed one
    (False: no document there)."""
    with engine.write() as conn:
        return bool(conn.execute(statement, params).fetchall())


def _rows(engine: SqlEngine, statement: str, params: dict[str, Any]) -> list[Any]:
    with engine.read() as conn:
        rows: list[Any] = conn.execute(statement, params).fetchall()
    return rows
