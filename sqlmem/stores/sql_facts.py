"""`SqlFactPort`: what the fact port does the same way on SQLite and PostgreSQL.

Reading a fact, the count, the tags and categories, a key's or a chain's history, and
moving a fact to another layer are each a constant statement (or two) over the live facts
and rows turned into `Fact`s: the same Python on both SQL backends. This class holds it;
each backend subclasses it with what genuinely differs (the upsert, which PostgreSQL
writes with its BM25 statistics; remember and supersede; expire and delete; search;
listings), hands it its statements (`FactStatements`, the same names in each dialect's
`facts_sql`), and says how it stores text and places a keyed fact in its chain.

Values are bound by name (`sql_port`); every read binds `agent` and `now` (the moment the
read sees: an expired fact is gone for it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from ..records import Fact
from ..rules.encoding import now_ms
from ..rules.rows import facts_from_rows
from .facts_vectors import BackendFactVectors, PortVectors
from .sql_port import SqlEngine

if TYPE_CHECKING:
    from ..protocols import Embedder
    from ..search.embedding import Embedding

__all__ = ["FactCodec", "FactStatements", "SqlFactPort"]

#: Where a stored fact row (each dialect's fact columns) holds the key.
_KEY = 16


class FactStatements(Protocol):
    """The statements of a dialect's `facts_sql` the shared port runs."""

    SELECT_ONE: str  # a fact by :id, superseded or not, unless it expired
    COUNT: str
    TAGS: str  # (tag, count) rows
    CATEGORIES: str
    HISTORY_BY_KEY: str
    CHAIN_OF: str  # (chain, layer) of the fact :id
    HISTORY_OF_CHAIN: str
    PROMOTE: str
    EXPIRE: str  # deletes the expired facts, a row returned for each
    DELETE_ONE: str  # the fact :id, a row returned when there was one
    DELETE_MANY: str  # the facts of :ids (the codec's array), a row returned for each


@dataclass(frozen=True, slots=True)
class FactCodec:
    """How a dialect stores text and reads fact rows back. `text`/`untext`: an id or a
    tag as stored and back; `rows`: stored fact rows as `facts_from_rows` reads them
    (PostgreSQL decodes its escaped text); `array`: a list of values as one bound value
    (SQLite: JSON text; PostgreSQL: an array)."""

    text: Callable[[str], str]
    untext: Callable[[str], str]
    rows: Callable[[Sequence[Any]], Sequence[Any]]
    array: Callable[[list[Any]], Any]


E = TypeVar("E", bound=SqlEngine)
VB = TypeVar("VB", bound=BackendFactVectors)


class SqlFactPort(Generic[E, VB]):
    """The fact port's operations both SQL backends share (`FactStorePort` once the
    backend adds the rest); thread-safe as its engine. `vectors`: the fact vectors,
    built by `vectors_of` when there is an embedder."""

    def __init__(
        self,
        engine: E,
        statements: FactStatements,
        agent: str | None,
        codec: FactCodec,
        embedder: Embedder | None,
        vectors_of: Callable[[Embedding], VB],
    ) -> None:
        self._engine: E = engine
        self.vectors: PortVectors[VB] = PortVectors.of(embedder, vectors_of)
        self._sql = statements
        self._agent = agent
        self._codec = codec
        self._text = codec.text

    def _facts(self, rows: Sequence[Any]) -> list[Fact]:
        return facts_from_rows(self._codec.rows(rows), ranked=False)

    def _snapshot(self) -> AbstractContextManager[Any]:
        """A read of two statements that must agree: one snapshot."""
        return self._engine.snapshot()

    def _live(self, **params: Any) -> dict[str, Any]:
        """A read's values: this agent's facts, live now."""
        params["agent"], params["now"] = self._agent, now_ms()
        return params

    def _place_keyed(self, conn: Any, facts: list[tuple[str, str]]) -> None:
        """(stored id, key) facts join their key's chain unless in one (a chain module)."""
        raise NotImplementedError

    # -- writes ---------------------------------------------------------------------------

    def promote(self, fact_id: str, layer: str) -> Fact | None:
        sql = self._sql
        with self._engine.write() as conn:
            now = now_ms()
            fact = self._text(fact_id)
            params = {"agent": self._agent, "id": fact, "layer": layer, "updated": now, "now": now}
            conn.execute(sql.PROMOTE, params)  # facts_chain_move: out of its chain
            rows = conn.execute(sql.SELECT_ONE, params).fetchall()
            if rows and rows[0][_KEY]:  # into its key's chain of the new layer
                self._place_keyed(conn, [(fact, str(rows[0][_KEY]))])
                rows = conn.execute(sql.SELECT_ONE, params).fetchall()
        return self._facts(rows)[0] if rows else None

    def _writing_facts(self, conn: Any) -> None:
        """Before a write that removes facts (PostgreSQL locks its statistics first)."""

    def _removed(self, conn: Any, gone: list[Any]) -> None:
        """After facts were removed, a row for each (PostgreSQL: their lengths, which
        leave its statistics)."""

    def expire(self) -> int:
        """Delete the expired facts; how many."""
        with self._engine.write() as conn:
            self._writing_facts(conn)
            gone: list[Any] = conn.execute(self._sql.EXPIRE, self._live()).fetchall()
            self._removed(conn, gone)
        return len(gone)

    def delete(self, ids: Sequence[str]) -> int:
        """Expired facts (stored until expire()) are deleted and counted too, as in
        memory. The ids go in sorted, so two deletes take row locks in one order."""
        sql, wanted = self._sql, sorted({self._text(i) for i in ids})
        with self._engine.write() as conn:
            self._writing_facts(conn)
            if len(wanted) == 1:
                found = conn.execute(sql.DELETE_ONE, {"agent": self._agent, "id": wanted[0]})
            else:
                ids_value = self._codec.array(wanted)
                found = conn.execute(sql.DELETE_MANY, {"agent": self._agent, "ids": ids_value})
            gone: list[Any] = found.fetchall()
            self._removed(conn, gone)
        return len(gone)

    # -- reads ----------------------------------------------------------------------------

    def get(self, fact_id: str) -> Fact | None:
        rows = _rows(self._engine, self._sql.SELECT_ONE, self._live(id=self._text(fact_id)))
        return self._facts(rows)[0] if rows else None

    def count(self) -> int:
        rows = _rows(self._engine, self._sql.COUNT, self._live())
        return int(rows[0][0]) if rows else 0

    def history_of_key(self, key: str) -> list[Fact]:
        return self._facts(_rows(self._engine, self._sql.HISTORY_BY_KEY, self._live(key=key)))

    def history_of_fact(self, fact_id: str) -> list[Fact]:
        sql = self._sql
        params = self._live(id=self._text(fact_id))
        with self._snapshot() as conn:
            found = conn.execute(sql.CHAIN_OF, params).fetchall()
            if not found:
                return []
            chain, layer = found[0]
            if chain is None:
                rows = conn.execute(sql.SELECT_ONE, params).fetchall()
            else:
                params.update(chain=chain, layer=layer)
                rows = conn.execute(sql.HISTORY_OF_CHAIN, params).fetchall()
        return self._facts(rows)

    def tags(self) -> dict[str, int]:
        """Sorted here: PostgreSQL's escaped tags do not sort in SQL."""
        untext = self._codec.untext
        return dict(
            sorted(
                (untext(tag), int(n))
                for tag, n in _rows(self._engine, self._sql.TAGS, self._live())
            )
        )

    def categories(self) -> list[str]:
        return sorted(row[0] for row in _rows(self._engine, self._sql.CATEGORIES, self._live()))


def _rows(engine: SqlEngine, statement: str, params: dict[str, Any]) -> list[Any]:
    """The rows of one statement, on a reader."""
    with engine.read() as conn:
        rows: list[Any] = conn.execute(statement, params).fetchall()
    return rows
