"""Connections to PostgreSQL: a bounded pool per backend, transactions, timeouts.

`Pools` (one per `PostgresBackend` or per `sqlmem.postgres.open`) holds a bounded
psycopg-pool per busy timeout: the timeouts are connection settings, so agents with
different `busy_timeout_ms` never share a connection. Connections are in autocommit; a
write is one explicit transaction (`Engine.write`), rolled back on any exception, or one
statement that is its own transaction (`Engine.write_one`: no BEGIN/COMMIT), and the
pool discards a connection that broke (killed by the server, a restart), and each one is
tried before it is lent (`Engine._checked_out`), so a server that came back is used again
without a restart of ours. A server that is down is retried every second or two (the
pool gives up a connection slot after `_RECONNECT_S` and the next call opens a fresh one, so
its back-off never grows to half a minute), and a call that finds no connection says why:
the last connection error, not only "timeout".

`busy_timeout_ms` becomes `lock_timeout` (waiting for another writer's row lock) and
`statement_timeout` (at least one second: a statement holding no lock still needs time to
run); the wait for a pooled connection uses the same timeout, also at least one second.
Past any of them: `StorageBusyError`. Where those settings live (on the connection, or in
each transaction behind a transaction pooler) is `sessions.ConnectionSettings`' concern.

Clusters: the DSN may name several hosts (`target_session_attrs=read-write`); a failover
is one more server that went away (its connections are dropped and reopened through the
DSN, which finds the new primary), and a connection to a primary demoted under it is
dropped on its first refused write. A connection lost while a write was committing is
`CommitUnknownError`, never a plain busy error: the write may be stored. With a read DSN,
`read()` and `snapshot()` outside atomic() use pools of their own to it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import psycopg_pool
from psycopg import errors as pg

from ..config import StoreConfig
from ..errors import InvalidArgumentError, SqlmemError, StorageBusyError, StoreClosedError
from .blocks import Blocks
from .errors import commit_unknown, map_error, translate
from .migrations import apply_migrations
from .sessions import ConnectionSettings

__all__ = ["Engine", "Pools"]

Conn = psycopg.Connection[Any]
Pool = psycopg_pool.ConnectionPool[Conn]

#: Seconds a pool keeps retrying one lost connection (back-off 1 s, 2 s, ...) before it
#: gives the slot up; the next call that needs a connection then opens one at once.
_RECONNECT_S = 5.0


class Pools:
    """Bounded connection pools to one database, shared by every agent resolved through it.

    `read_dsn` (optional): a standby (or several hosts) that reads and searches go to,
    with pools of their own. `transaction_pooler`: the DSNs lead to a pooler in
    transaction mode (`sqlmem.postgres.sessions`).
    """

    def __init__(
        self,
        dsn: str,
        pool_size: int,
        *,
        read_dsn: str | None = None,
        transaction_pooler: bool = False,
    ) -> None:
        for name, value in (("dsn", dsn), ("read_dsn", read_dsn)):
            if (value is not None or name == "dsn") and (not isinstance(value, str) or not value):
                raise InvalidArgumentError(f"{name} must be a non-empty connection string")
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 1:
            raise InvalidArgumentError(f"pool_size must be an int >= 1, got {pool_size!r}")
        if not isinstance(transaction_pooler, bool):
            raise InvalidArgumentError("transaction_pooler must be True or False")
        self.dsn = dsn
        self.read_dsn = read_dsn
        self.pool_size = pool_size
        self.transaction_pooler = transaction_pooler
        self._pools: dict[tuple[int, bool], Pool] = {}
        self._migrated = False
        #: The latest failed attempt to connect (to the primary, to the read DSN), None
        #: once one succeeds (`_recording`).
        self.unreachable: psycopg.OperationalError | None = None
        self.replica_unreachable: psycopg.OperationalError | None = None
        self._lock = threading.Lock()
        self.closed = False
        #: Each thread's open atomic() block, per pool: every agent of the pool uses it.
        self.blocks = Blocks()

    def settings(self, busy_ms: int) -> ConnectionSettings:
        return ConnectionSettings(busy_ms, self.transaction_pooler)

    def pool(self, busy_ms: int, *, replica: bool = False) -> Pool:
        """The pool of connections with this busy timeout, to the primary or (`replica`)
        to the read DSN."""
        with self._lock:
            if self.closed:
                raise StoreClosedError("PostgreSQL backend is closed")
            pool = self._pools.get((busy_ms, replica))
            if pool is None:
                pool = psycopg_pool.ConnectionPool(
                    (self.read_dsn or self.dsn) if replica else self.dsn,
                    min_size=1,
                    max_size=self.pool_size,
                    kwargs=self.settings(busy_ms).connect_kwargs(),
                    connection_class=_recording(self, replica),
                    timeout=max(busy_ms, 1000) / 1000,
                    reconnect_timeout=_RECONNECT_S,
                    name="sqlmem-read" if replica else "sqlmem",
                    open=False,
                )
                with translate("PostgreSQL"):
                    pool.open(wait=False)
                self._pools[(busy_ms, replica)] = pool
            return pool

    def migrate(self, busy_ms: int) -> None:
        """Apply pending migrations once per backend (each open after that costs nothing)."""
        if self._migrated:
            return
        # A connection of its own: a wrong DSN or a server that is down then fails now with
        # the server's own words, not as a pool wait running out.
        settings = self.settings(busy_ms)
        try:
            conn = psycopg.connect(self.dsn, connect_timeout=10, **settings.connect_kwargs())
        except psycopg.ProgrammingError as exc:  # raised for a DSN it cannot parse
            raise InvalidArgumentError(f"dsn: {exc}") from exc
        except psycopg.Error as exc:
            if "unsupported startup parameter" in str(exc):  # PgBouncer refuses `options`
                raise InvalidArgumentError(
                    f"dsn: {str(exc).strip()}; behind a pooler in transaction mode (PgBouncer) "
                    "pass transaction_pooler=True"
                ) from exc
            raise map_error(exc, "PostgreSQL") from exc
        with translate("PostgreSQL"), conn:
            apply_migrations(conn, "PostgreSQL")
        self._migrated = True

    def close(self) -> None:
        with self._lock:
            self.closed = True
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.close()


def _recording(pools: Pools, replica: bool) -> type[Conn]:
    """A connection class that tells `pools` whether the server could be reached."""
    attribute = "replica_unreachable" if replica else "unreachable"

    class Recording(psycopg.Connection[Any]):
        @classmethod
        def connect(cls, *args: Any, **kwargs: Any) -> Any:
            try:
                conn = super().connect(*args, **kwargs)
            except psycopg.OperationalError as exc:
                setattr(pools, attribute, exc)
                raise
            setattr(pools, attribute, None)
            return conn

    return Recording


class Engine:
    """One agent's view of the database: its id, its config, and transactions on a pool."""

    def __init__(self, pools: Pools, agent_id: str, config: StoreConfig) -> None:
        self.pools = pools
        self.agent_id = agent_id
        self.config = config
        self.closed = False
        self._context = f"PostgreSQL agent {agent_id}"
        # At least a second: opening a connection (~10 ms, more under load) is not a busy
        # database, and busy_timeout_ms=0 must not make every first call fail.
        self._timeout = max(config.busy_timeout_ms, 1000) / 1000
        self._settings = pools.settings(config.busy_timeout_ms)
        with translate(self._context):
            pools.migrate(config.busy_timeout_ms)
            self._pool = pools.pool(config.busy_timeout_ms)
            self._read_pool = (
                pools.pool(config.busy_timeout_ms, replica=True) if pools.read_dsn else None
            )

    @contextmanager
    def _connection(self, *, replica: bool = False) -> Iterator[Conn]:
        if self.closed:
            raise StoreClosedError(f"PostgreSQL store of agent {self.agent_id!r} is closed")
        block = self.pools.blocks.current(self._pool)
        if block is not None:  # inside atomic(): every call of this thread uses its one
            with translate(self._context):
                yield block.conn
            return
        pool = self._read_pool if replica and self._read_pool is not None else self._pool
        with translate(self._context):
            conn = self._checked_out(pool, replica=pool is self._read_pool)
            try:
                yield conn
            except pg.ReadOnlySqlTransaction:
                # A primary demoted under us: drop the connection, so the next one is
                # opened where the DSN now finds the primary.
                conn.close()
                raise
            finally:
                pool.putconn(conn)  # a broken one is discarded and replaced

    def _checked_out(self, pool: Pool, *, replica: bool) -> Conn:
        """A pooled connection that answers. Killed idle connections (a server restart,
        pg_terminate_backend, a failover) are each tried once, discarded and skipped at
        once: the pool's own check waits 1 s, 2 s, 4 s... between broken ones, so a pool
        of 8 dead connections used to outlast the busy timeout."""
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                conn = pool.getconn(max(deadline - time.monotonic(), 0.001))
            except psycopg_pool.PoolTimeout:
                down = self.pools.replica_unreachable if replica else self.pools.unreachable
                if down is None:
                    raise  # a busy pool: translate() says so
                raise StorageBusyError(
                    f"{self._context}: database unreachable, no connection "
                    f"within the busy timeout (last attempt: {str(down).strip()}); "
                    "nothing was written, the store reconnects by itself"
                ) from down
            try:
                conn.execute("")
                return conn
            except psycopg.Error:
                pool.putconn(conn)
                if time.monotonic() >= deadline:
                    raise

    @contextmanager
    def write(self) -> Iterator[Conn]:
        """One transaction: committed when the block ends, rolled back on any exception.

        Losing the connection while the body runs leaves nothing written (the server rolls
        back a transaction whose client is gone): `StorageBusyError`. Losing it during
        COMMIT leaves the outcome unknown: `CommitUnknownError`, never a silent retry."""
        if self.in_atomic:  # a savepoint of the block's transaction
            with self._connection() as conn, conn.transaction():
                yield conn
            return
        with self._connection() as conn:
            committing = False
            try:
                with conn.transaction():
                    self._settings.begin(conn)
                    yield conn
                    committing = True
            except psycopg.Error as exc:
                if committing and conn.closed:
                    raise commit_unknown(exc, self._context) from exc
                raise

    @contextmanager
    def write_one(self) -> Iterator[Conn]:
        """For a write that is ONE statement (its data-modifying CTEs make it whole): in
        autocommit that statement is its own transaction, so no BEGIN and COMMIT round
        trips; inside atomic() a savepoint of the block's transaction, as `write`; behind
        a transaction pooler a transaction of its own, as `write` (its timeouts are set in
        it).

        The connection dropped without a word from the server (killed, a network
        failure) while the statement ran: its commit may have happened, so
        `CommitUnknownError`. A server that ends the session with an error instead (a
        fast shutdown, a terminated backend) has rolled the statement back: that error
        arrives in place of the statement's completion, as a plain `StorageBusyError`."""
        if self.in_atomic or self._settings.per_transaction:
            with self.write() as conn:
                yield conn
            return
        with self._connection() as conn:
            try:
                yield conn
            except psycopg.Error as exc:
                if conn.closed and exc.sqlstate is None:
                    raise commit_unknown(exc, self._context) from exc
                raise

    @contextmanager
    def read(self) -> Iterator[Conn]:
        """A connection in autocommit: each statement reads its own consistent snapshot.
        With a read DSN (outside atomic()), a connection to it: what it returns may lag
        the primary by the standby's replay delay. Behind a transaction pooler, a
        read-committed transaction (each statement still reads its own snapshot)."""
        if self._settings.per_transaction and not self.in_atomic:
            with self._connection(replica=True) as conn, conn.transaction():
                self._settings.begin(conn)
                yield conn
            return
        with self._connection(replica=True) as conn:
            yield conn

    @contextmanager
    def snapshot(self) -> Iterator[Conn]:
        """Several statements reading one snapshot (a read-only repeatable-read transaction;
        inside atomic(), the block's own transaction, which sees its writes)."""
        with self._connection(replica=True) as conn, conn.transaction():
            if not self.in_atomic:
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                self._settings.begin(conn)
            yield conn

    @property
    def in_atomic(self) -> bool:
        """True inside this thread's atomic() block."""
        return self.pools.blocks.current(self._pool) is not None

    def after_commit(self, work: Callable[[], None]) -> None:
        """Run `work` once this thread's atomic() block has committed (never if it rolls
        back), with no transaction of it open. Only inside a block."""
        block = self.pools.blocks.current(self._pool)
        if block is None:
            raise SqlmemError("after_commit outside an atomic() block")
        block.after_commit.append(work)

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """One transaction on one pooled connection pinned to this thread for the block;
        the stores' calls inside run on it (their own transactions become savepoints,
        reads see the block's writes, and go to the primary even with a read DSN), nested
        blocks are savepoints. Committed when the outermost block ends, rolled back when
        it raises. This thread's calls to other agents of the same pool run on the
        block's connection too, and so join its transaction (`blocks.py` says why)."""
        if self.in_atomic:
            with self.write():  # a savepoint of the block's transaction
                yield
            return
        with self.write() as conn, self.pools.blocks.opened(self._pool, conn) as block:
            yield
        for work in block.after_commit:  # committed
            work()
