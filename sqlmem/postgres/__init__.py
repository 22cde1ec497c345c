"""sqlmem on PostgreSQL: the same stores for agents shared by many servers.

    import sqlmem.postgres
    with sqlmem.postgres.open("postgresql://app@db/sqlmem", "support-bot") as db:
        db.history.append("chat:1", sqlmem.Message(role="user", content="hello"))

    factory = MemoryFactory(None, backend=PostgresBackend("postgresql://...", pool_size=10))

Every agent is rows of one shared database, every table keyed by `agent_id` first, every
statement naming one agent (Citus-ready: distribute by agent_id). Needs the `postgres`
extra (psycopg 3, psycopg-pool); `import sqlmem` never imports this package.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from ..agent_ids import validate_agent_id
from ..config import StoreConfig
from ..errors import InvalidArgumentError, StoreClosedError
from ..extras import needs_extra
from ..rules.embedder import check_embedder
from ..rules.forget import ForgetReport

with needs_extra("postgres", __name__):
    from .checkpoints import PostgresCheckpointStore
    from .docs import PostgresDocumentStore
    from .engine import Engine, Pools
    from .facts import PostgresFactStore
    from .history import PostgresHistoryStore
    from .kv import PostgresKeyValueStore, PostgresKVSearch
    from .maintenance import CheckReport
    from .run_leases import PostgresRunLeases

__all__ = [
    "CheckReport",
    "PostgresBackend",
    "PostgresDB",
    "PostgresDocumentStore",
    "PostgresFactStore",
    "PostgresHistoryStore",
    "open",
]


#: The row key of a scope is this prefix and its id (`PostgresBackend.open_scope`).
SCOPE_PREFIX = "scope:"


class PostgresBackend:
    """One PostgreSQL database shared by every agent of a `MemoryFactory`.

    `pool_size` bounds the connections this process holds (per distinct busy timeout).
    Nothing connects before the first agent is opened; migrations run then, once.
    `embedder`: one embedder for every agent's facts and messages (vectors, search modes
    "vector" and "hybrid").

    A cluster: `dsn` may name several hosts
    (`postgresql://h1,h2/db?target_session_attrs=read-write`); writes then go to whichever
    is the primary, and after a failover the pools reconnect to the new one by themselves.
    `read_dsn` (optional): reads and searches outside `atomic()` go there (a standby):
    they may miss the latest writes, by the standby's replay lag. `transaction_pooler`:
    `dsn` leads to PgBouncer (or another pooler) in transaction mode; no session state is
    then kept between transactions.
    """

    def __init__(
        self,
        dsn: str,
        pool_size: int = 10,
        *,
        embedder: Any = None,
        read_dsn: str | None = None,
        transaction_pooler: bool = False,
    ) -> None:
        self._embedder = check_embedder(embedder)
        self._pools = Pools(
            dsn, pool_size, read_dsn=read_dsn, transaction_pooler=transaction_pooler
        )

    def __repr__(self) -> str:
        return f"<PostgresBackend pool_size={self._pools.pool_size}>"

    def open(self, agent_id: str, config: StoreConfig | None = None) -> PostgresDB:
        """The agent's database (rows of the shared one); close() releases nothing shared."""
        return PostgresDB(self._pools, agent_id, config, owns_pools=False, embedder=self._embedder)

    def open_scope(self, scope_id: str, config: StoreConfig | None = None) -> PostgresDB:
        """A scope's database (memory several agents share), for
        `MemoryFactory.resolve_scope`. Its rows are keyed `scope:{scope_id}`, which no
        agent id can be (':' is not allowed in one): an agent and a scope of the same
        name never see each other's rows."""
        return PostgresDB(
            self._pools, scope_id, config, owns_pools=False, embedder=self._embedder, scope=True
        )

    @property
    def closed(self) -> bool:
        return self._pools.closed

    def close(self) -> None:
        """Close the pools: every database opened through this backend stops working."""
        self._pools.close()

    def __enter__(self) -> PostgresBackend:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class PostgresDB:
    """One agent's memory on PostgreSQL: `.history`, `.facts`, `.docs`, `.config`, `close()`.

    `agent_id` is the key of its rows: the agent id, or `scope:{scope_id}` for a scope.
    """

    def __init__(
        self,
        pools: Pools,
        agent_id: str,
        config: StoreConfig | None,
        *,
        owns_pools: bool,
        embedder: Any = None,
        scope: bool = False,
    ) -> None:
        if scope:  # rows keyed apart from every agent's
            agent_id = SCOPE_PREFIX + validate_agent_id(agent_id, "scope_id")
        else:
            validate_agent_id(agent_id)
        if config is None:
            config = StoreConfig()
        elif not isinstance(config, StoreConfig):
            raise InvalidArgumentError("config must be a StoreConfig")
        self.agent_id = agent_id
        self.config = config
        self._pools = pools
        self._owns_pools = owns_pools
        self._engine = Engine(pools, agent_id, config)
        self.history = PostgresHistoryStore(self._engine, embedder)
        self.facts = PostgresFactStore(self._engine, embedder)
        self.docs = PostgresDocumentStore(self._engine)
        #: The agent's one-run-at-a-time and cooldown state (the workspace extractor's).
        self.run_leases = PostgresRunLeases(self._engine)
        #: The frameworks' records of the agent (`sqlmem.adapters.ports`): key-value
        #: items, their vectors, LangGraph checkpoints.
        self.kv = PostgresKeyValueStore(self._engine)
        self.kv_search = PostgresKVSearch(self.kv, self._engine)
        self.checkpoints = PostgresCheckpointStore(self._engine)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<PostgresDB agent={self.agent_id!r}{' closed' if self.closed else ''}>"

    @property
    def closed(self) -> bool:
        return self._engine.closed or self._pools.closed

    def close(self) -> None:
        """Idempotent; later calls on this database or its stores raise StoreClosedError."""
        with self._lock:
            self._engine.closed = True
            if self._owns_pools:
                self._pools.close()

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """Every write this thread makes through this database's stores inside
        the block commits together when it ends, or not at all when it raises (the
        exception propagates). Nested blocks are savepoints; reads inside see the block's
        writes.

        One pooled connection is pinned to the thread for the block and holds one
        PostgreSQL transaction. Other clients' writes wait, under their busy timeout, for
        the rows the block wrote (an agent's facts, messages and documents each have one
        writer row, `corpus_stats`), not for the whole agent: a block that writes only
        documents does not hold up fact writers elsewhere. Two blocks that take those rows
        in opposite orders can deadlock; PostgreSQL then fails one of them
        (`StorageBusyError`, nothing of it kept). Keep the block short and free of model
        or network calls."""
        with self._engine.atomic():
            yield

    def forget(self, source: str) -> ForgetReport:
        """As `MemoryDB.forget`: the source (a session id, `"msg:{session}#{seq}"`,
        `"doc:{path}"` or a path ending in `.md`) and every fact derived only from it, in
        one transaction (`sqlmem.postgres.forget`)."""
        from .forget import forget

        return forget(self, source)

    # -- maintenance (what differs from MemoryDB's: sqlmem.postgres.maintenance) --------

    def stats(self) -> dict[str, Any]:
        """The agent's counts, the schema version and the database's size."""
        from .maintenance import stats

        return stats(self._engine, self.facts.embedder.model if self.facts.embedder else None)

    def check(self) -> CheckReport:
        """The agent's search statistics, session counters and document blocks against
        the rows they derive from; raises nothing for healthy rows."""
        from .maintenance import check

        return check(self._engine)

    def vacuum(self) -> None:
        """Delete expired facts, then VACUUM (ANALYZE) sqlmem's tables (not VACUUM FULL:
        see `sqlmem.postgres.maintenance`)."""
        from .maintenance import refuse_in_atomic, vacuum

        refuse_in_atomic(self._engine, "vacuum()")  # before anything is written
        self.facts.expire()
        vacuum(self._engine)

    def maintain(self) -> dict[str, Any]:
        """Periodic care: delete the expired facts. Returns what it did."""
        return {"expired_facts": self.facts.expire()}

    def __enter__(self) -> PostgresDB:
        if self.closed:
            raise StoreClosedError(f"PostgreSQL database of agent {self.agent_id!r} is closed")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def open(
    dsn: str,
    agent_id: str,
    config: StoreConfig | None = None,
    *,
    embedder: Any = None,
    pool_size: int = 4,
    read_dsn: str | None = None,
    transaction_pooler: bool = False,
) -> PostgresDB:
    """Open `agent_id`'s memory in the PostgreSQL database at `dsn` (migrating it if needed).

    The database gets its own small pool (`pool_size`); for many agents in one
    process, share one `PostgresBackend` instead. `embedder`: vectors of every fact and
    message written, and search modes "vector" and "hybrid". `dsn` may name several hosts,
    `read_dsn` a standby for reads, `transaction_pooler` a PgBouncer in transaction mode
    (as for `PostgresBackend`).
    """
    validate_agent_id(agent_id)
    check_embedder(embedder)  # refused before anything connects
    pools = Pools(dsn, pool_size, read_dsn=read_dsn, transaction_pooler=transaction_pooler)
    try:
        return PostgresDB(pools, agent_id, config, owns_pools=True, embedder=embedder)
    except BaseException:
        pools.close()
        raise
