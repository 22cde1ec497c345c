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
Past any of them: `StorageBusyError`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import psycopg_pool

from ..config import StoreConfig
from ..errors import InvalidArgumentError, SqlmemError, StorageBusyError, StoreClosedError
from .blocks import Blocks
from .errors import map_error, translate
from .migrations import apply_migrations

__all__ = ["Engine", "Pools"]

Conn = psycopg.Connection[Any]

#: Seconds a pool keeps retrying one lost connection (back-off 1 s, 2 s, ...) before it
#: gives the slot up; the next call that needs a connection then opens one at once.
_RECONNECT_S = 5.0


def _options(busy_ms: int) -> str:
    lock = max(1, busy_ms)  # 0 would mean "wait forever" to PostgreSQL
    statement = max(1000, busy_ms)
    return f"-c lock_timeout={lock} -c statement_timeout={statement} -c TimeZone=UTC"


class Pools:
    """Bounded connection pools to one database, shared by every agent resolved through it."""

    def __init__(self, dsn: str, pool_size: int) -> None:
        if not isinstance(dsn, str) or not dsn:
            raise InvalidArgumentError("dsn must be a non-empty connection string")
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 1:
            raise InvalidArgumentError(f"pool_size must be an int >= 1, got {pool_size!r}")
        self.dsn = dsn
        self.pool_size = pool_size
        self._pools: dict[int, psycopg_pool.ConnectionPool[Conn]] = {}
        self._migrated = False
        #: The latest failed attempt to connect, None once one succeeds (`_recording`).
        self.unreachable: psycopg.OperationalError | None = None
        self._connection_class = _recording(self)
        self._lock = threading.Lock()
        self.closed = False
        #: Each thread's open atomic() block, per pool: every agent of the pool uses it.
        self.blocks = Blocks()

    def pool(self, busy_ms: int) -> psycopg_pool.ConnectionPool[Conn]:
        with self._lock:
            if self.closed:
                raise StoreClosedError("PostgreSQL backend is closed")
            pool = self._pools.get(busy_ms)
            if pool is None:
                pool = psycopg_pool.ConnectionPool(
                    self.dsn,
                    min_size=1,
                    max_size=self.pool_size,
                    kwargs={"autocommit": True, "options": _options(busy_ms)},
                    connection_class=self._connection_class,
                    timeout=max(busy_ms, 1000) / 1000,
                    reconnect_timeout=_RECONNECT_S,
                    name="sqlmem",
                    open=False,
                )
                with translate("PostgreSQL"):
                    pool.open(wait=False)
                self._pools[busy_ms] = pool
            return pool

    def migrate(self, busy_ms: int) -> None:
        """Apply pending migrations once per backend (each open after that costs nothing)."""
        if self._migrated:
            return
        # A connection of its own: a wrong DSN or a server that is down then fails now with
        # the server's own words, not as a pool wait running out.
        try:
            conn = psycopg.connect(
                self.dsn, autocommit=True, options=_options(busy_ms), connect_timeout=10
            )
        except psycopg.ProgrammingError as exc:  # raised for a DSN it cannot parse
            raise InvalidArgumentError(f"dsn: {exc}") from exc
        except psycopg.Error as exc:
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


def _recording(pools: Pools) -> type[Conn]:
    """A connection class that tells `pools` whether the server could be reached."""

    class Recording(psycopg.Connection[Any]):
        @classmethod
        def connect(cls, *args: Any, **kwargs: Any) -> Any:
            try:
                conn = super().connect(*args, **kwargs)
            except psycopg.OperationalError as exc:
                pools.unreachable = exc
                raise
            pools.unreachable = None
            return conn

    return Recording


class Engine:
    """One agent's view of the database: its id, its config, and transactions on a pool."""

    def __init__(self, pools: Pools, agent_id: str, config: StoreConfig) -> None:
        self.pools = pools
        self.agent_id = agent_id
        self.config = config
        self.closed = False
        # At least a second: opening a connection (~10 ms, more under load) is not a busy
        # database, and busy_timeout_ms=0 must not make every first call fail.
        self._timeout = max(config.busy_timeout_ms, 1000) / 1000
        with translate(f"PostgreSQL agent {agent_id}"):
            pools.migrate(config.busy_timeout_ms)
            self._pool = pools.pool(config.busy_timeout_ms)

    @contextmanager
    def _connection(self) -> Iterator[Conn]:
        if self.closed:
            raise StoreClosedError(f"PostgreSQL store of agent {self.agent_id!r} is closed")
        block = self.pools.blocks.current(self._pool)
        if block is not None:  # inside atomic(): every call of this thread uses its one
            with translate(f"PostgreSQL agent {self.agent_id}"):
                yield block.conn
            return
        with translate(f"PostgreSQL agent {self.agent_id}"):
            conn = self._checked_out()
            try:
                yield conn
            finally:
                self._pool.putconn(conn)  # a broken one is discarded and replaced

    def _checked_out(self) -> Conn:
        """A pooled connection that answers. Killed idle connections (a server restart,
        pg_terminate_backend) are each tried once, discarded and skipped at once: the
        pool's own check waits 1 s, 2 s, 4 s... between broken ones, so a pool of 8 dead
        connections used to outlast the busy timeout."""
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                conn = self._pool.getconn(max(deadline - time.monotonic(), 0.001))
            except psycopg_pool.PoolTimeout:
                down = self.pools.unreachable
                if down is None:
                    raise  # a busy pool: translate() says so
                raise StorageBusyError(
                    f"PostgreSQL agent {self.agent_id}: database unreachable, no connection "
                    f"within the busy timeout (last attempt: {str(down).strip()}); "
                    "nothing was written, the store reconnects by itself"
                ) from down
            try:
                conn.execute("")
                return conn
            except psycopg.Error:
                self._pool.putconn(conn)
                if time.monotonic() >= deadline:
                    raise

    @contextmanager
    def write(self) -> Iterator[Conn]:
        """One transaction: committed when the block ends, rolled back on any exception."""
        with self._connection() as conn, conn.transaction():
            yield conn

    @contextmanager
    def write_one(self) -> Iterator[Conn]:
        """For a write that is ONE statement (its data-modifying CTEs make it whole): in
        autocommit that statement is its own transaction, so no BEGIN and COMMIT round
        trips; inside atomic() a savepoint of the block's transaction, as `write`."""
        if self.in_atomic:
            with self.write() as conn:
                yield conn
            return
        with self._connection() as conn:
            yield conn

    @contextmanager
    def read(self) -> Iterator[Conn]:
        """A connection in autocommit: each statement reads its own consistent snapshot."""
        with self._connection() as conn:
            yield conn

    @contextmanager
    def snapshot(self) -> Iterator[Conn]:
        """Several statements reading one snapshot (a read-only repeatable-read transaction;
        inside atomic(), the block's own transaction, which sees its writes)."""
        with self._connection() as conn, conn.transaction():
            if not self.in_atomic:
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
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
        """SPEC 20: one transaction on one pooled connection pinned to this thread for the
        block; the stores' calls inside run on it (their own transactions become
        savepoints, reads see the block's writes), nested blocks are savepoints. Committed
        when the outermost block ends, rolled back when it raises. This thread's calls
        to other agents of the same pool run on the block's connection too, and so join
        its transaction (`blocks.py` says why)."""
        if self.in_atomic:
            with self.write():  # a savepoint of the block's transaction
                yield
            return
        with self.write() as conn, self.pools.blocks.opened(self._pool, conn) as block:
            yield
        for work in block.after_commit:  # committed
            work()
