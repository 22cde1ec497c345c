"""Where a connection's timeouts live: on the connection, or in each transaction.

sqlmem turns `busy_timeout_ms` into PostgreSQL's `lock_timeout` and `statement_timeout`
(past them: `StorageBusyError`). Talking to PostgreSQL directly, they are startup options
of the connection (`-c lock_timeout=...`): set once, free on every call.

A pooler in transaction mode (PgBouncer's `pool_mode = transaction`) lends a server
connection for one transaction at a time, to whichever client comes next, so nothing set
on a session may be relied on: PgBouncer refuses the `options` startup parameter, and a
`SET` would leak into another client's transactions. There, with `transaction_pooler=True`:

- every call is a transaction whose first statement sets the timeouts with
  `set_config(..., true)` (the same as `SET LOCAL`: gone at COMMIT or ROLLBACK);
- psycopg never prepares a statement (`prepare_threshold=None`): a prepared statement
  lives on one server connection, and the next transaction may run on another.

sqlmem holds no other session state (its advisory lock is transaction-level, it uses no
temporary table and no LISTEN), so nothing else differs behind a pooler.
"""

from __future__ import annotations

from typing import Any

import psycopg

__all__ = ["ConnectionSettings", "startup_options"]

#: One statement, constant text: the call's timeouts, gone when its transaction ends.
_SET_LOCAL = (
    "SELECT set_config('lock_timeout', %s, true), set_config('statement_timeout', %s, true),"
    " set_config('TimeZone', 'UTC', true)"
)


def _timeouts(busy_ms: int) -> tuple[int, int]:
    lock = max(1, busy_ms)  # 0 would mean "wait forever" to PostgreSQL
    statement = max(1000, busy_ms)  # a statement holding no lock still needs time to run
    return lock, statement


def startup_options(busy_ms: int) -> str:
    """The `options` connection parameter that sets the timeouts for a whole session."""
    lock, statement = _timeouts(busy_ms)
    return f"-c lock_timeout={lock} -c statement_timeout={statement} -c TimeZone=UTC"


class ConnectionSettings:
    """How connections of one busy timeout get their timeouts (see the module's text)."""

    def __init__(self, busy_ms: int, transaction_pooler: bool) -> None:
        self.busy_ms = busy_ms
        self.transaction_pooler = transaction_pooler
        lock, statement = _timeouts(busy_ms)
        self._local = (f"{lock}ms", f"{statement}ms")

    def connect_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of every connection opened for these settings."""
        if self.transaction_pooler:
            return {"autocommit": True, "prepare_threshold": None}
        return {"autocommit": True, "options": startup_options(self.busy_ms)}

    @property
    def per_transaction(self) -> bool:
        """True when every call must be a transaction that starts with `begin()`."""
        return self.transaction_pooler

    def begin(self, conn: psycopg.Connection[Any]) -> None:
        """Inside a transaction just opened: set its timeouts when the session cannot
        carry them (a no-op talking to PostgreSQL directly)."""
        if self.transaction_pooler:
            conn.execute(_SET_LOCAL, self._local)
