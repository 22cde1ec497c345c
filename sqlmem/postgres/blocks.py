"""Each thread's open `atomic()` block on PostgreSQL: its pinned connection, and the work
queued for after it commits.

Kept per connection pool, not per agent, on purpose. A block pins one pooled connection
for its whole length; when the thread inside it also called another agent of the same
backend, that call used to take a second connection from the pool. N threads doing so at
once held all N connections and each waited for one more: every call in the process then
waited out the busy timeout. Now a thread inside a block runs every agent of the same pool
on the block's connection, so a thread never holds more than one connection of a pool,
and those agents' writes join the block's transaction (they commit or roll back with it).
Agents with another busy timeout use another pool (the timeouts are connection settings),
so they take a connection of their own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

__all__ = ["Block", "Blocks"]

Conn = psycopg.Connection[Any]


class Block:
    """One thread's outermost `atomic()` block on one pool."""

    __slots__ = ("after_commit", "conn")

    def __init__(self, conn: Conn) -> None:
        self.conn = conn
        #: Run once the block committed (never if it rolled back), with no transaction
        #: of the block open: an embedding model for the facts written inside, say.
        self.after_commit: list[Callable[[], None]] = []


class Blocks:
    """The open blocks of every thread, by pool (shared by every agent of a backend)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def current(self, pool: object) -> Block | None:
        """This thread's open block on `pool`, if any."""
        blocks: dict[int, Block] | None = getattr(self._local, "by_pool", None)
        return blocks.get(id(pool)) if blocks else None

    @contextmanager
    def opened(self, pool: object, conn: Conn) -> Iterator[Block]:
        """Pin `conn` as this thread's block on `pool` for the `with` body."""
        blocks: dict[int, Block] | None = getattr(self._local, "by_pool", None)
        if blocks is None:
            blocks = self._local.by_pool = {}
        block = blocks[id(pool)] = Block(conn)
        try:
            yield block
        finally:
            del blocks[id(pool)]
