"""`async with adb.atomic()`: the sync database's `atomic()`, held by one thread.

Why one thread: every backend's `atomic()` belongs to the thread that entered it (SQLite's
write connection in BEGIN IMMEDIATE, PostgreSQL's pinned connection, the twins' lock).
So a block gets a thread of its own that enters the sync `atomic()` and then runs, one at
a time and in the order they were awaited, the calls made inside the block (a context
variable routes them: `Runner.run` sends a call there when the caller's context is in a
block of its database). Tasks started inside the block copy that context and share the
block; nested blocks are savepoints on the same thread, one at a time.

Cancellation never commits half a block:
- a call cancelled before it started never runs; a call already running finishes, then
  the block decides;
- a block that ends with an exception (CancelledError included) rolls back;
- a block whose task is cancelled while its commit waits to start rolls back instead;
  once the commit has started it completes whole, and the task still sees
  CancelledError (as a running write in `runner` does);
- a block cancelled while it waits to begin (another writer holds the lock) is undone as
  soon as it begins.
The thread is a daemon: a program that abandons its loop mid-block does not hang at exit.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import SqlmemError, StoreClosedError

if TYPE_CHECKING:
    from ..protocols import Database

__all__ = ["AsyncAtomic", "current_block"]

R = TypeVar("R")

#: The innermost block of the running task, if any (for `Runner.run`'s routing).
_current: contextvars.ContextVar[_Block | None] = contextvars.ContextVar(
    "sqlmem_aio_block", default=None
)


class _Call:
    __slots__ = ("call", "future")

    def __init__(self, call: Callable[[], Any]) -> None:
        self.call = call
        self.future: Future[Any] = Future()


class _Enter:
    """Open a nested block (a savepoint) on the block's thread."""

    __slots__ = ("future",)

    def __init__(self) -> None:
        self.future: Future[None] = Future()


class _Exit:
    """End the block level `level` began: commit, or roll back. `rollback` may still be
    set by the awaiting side until the thread has `taken` the item. An exit for a level
    that never began (its entry failed) is answered and ignored."""

    __slots__ = ("future", "level", "lock", "rollback", "taken")

    def __init__(self, level: _Enter, rollback: bool) -> None:
        self.level = level
        self.future: Future[None] = Future()
        self.lock = threading.Lock()
        self.rollback = rollback
        self.taken = False

    def take(self) -> bool:
        """Called by the thread: whether to roll back (fixed from now on)."""
        with self.lock:
            self.taken = True
            return self.rollback

    def cancel_commit(self) -> bool:
        """Called on cancellation: roll back if the thread has not taken the item yet;
        returns whether that worked."""
        with self.lock:
            if not self.taken:
                self.rollback = True
            return self.rollback


class _Rollback(Exception):
    """Raised inside the sync `atomic()` to undo it."""


class _Worker:
    """The thread of an outermost block, and the queue its calls come in by."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.queue: queue.SimpleQueue[_Call | _Enter | _Exit] = queue.SimpleQueue()
        self.first = _Enter()
        self.finished = False
        self._thread = threading.Thread(target=self._serve, name="sqlmem-aio-atomic", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def abandon(self) -> None:
        """Roll back whatever is still open (the database is closing) and wait until
        the thread has ended (a call it is running finishes first), so the database
        closes after the rollback, never under it."""
        if not self.finished:
            self.queue.put(_Exit(self.first, rollback=True))
        if self._thread.is_alive():
            self._thread.join()

    def _serve(self) -> None:
        try:
            self._level(self.first)
        finally:
            self.finished = True
            self.drain()

    def drain(self) -> None:
        """Answer what is left in the queue once the thread is done: a call made after
        its block ended (the database closed under it) fails, never waits forever."""
        while True:
            try:
                item = self.queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, _Call):
                if item.future.set_running_or_notify_cancel():
                    item.future.set_exception(StoreClosedError("the atomic() block was closed"))
            elif not item.future.done():
                if isinstance(item, _Exit):
                    item.future.set_result(None)
                else:
                    item.future.set_exception(StoreClosedError("the atomic() block was closed"))

    def _level(self, enter: _Enter) -> None:
        """One block level: enter the sync atomic(), serve calls until its exit."""
        done: _Exit | None = None
        try:
            with self.db.atomic():
                enter.future.set_result(None)
                done = self._serve_calls(enter)
                if done.take():
                    raise _Rollback
        except _Rollback:
            assert done is not None
            done.future.set_result(None)
            return
        except BaseException as exc:  # entering, or the commit, failed
            if not enter.future.done():
                enter.future.set_exception(exc)
            elif done is not None:
                done.future.set_exception(exc)
            else:  # a call cannot raise here (its error goes to its future): a bug
                raise
            return
        assert done is not None
        done.future.set_result(None)

    def _serve_calls(self, level: _Enter) -> _Exit:
        while True:
            item = self.queue.get()
            if isinstance(item, _Exit):
                if item.level is level:
                    return item
                if item.level is self.first:  # the database closes: end every level
                    self.queue.put(_Exit(level, rollback=True))
                    self.queue.put(item)
                    continue
                item.future.set_result(None)  # a level that never began
                continue
            if isinstance(item, _Enter):
                self._level(item)
                continue
            if not item.future.set_running_or_notify_cancel():
                continue  # cancelled before it started: it never runs
            try:
                result = item.call()
            except BaseException as exc:
                item.future.set_exception(exc)
            else:
                item.future.set_result(result)


class _Block:
    """One open block level of one database (what the context variable holds)."""

    def __init__(self, owner: object, worker: _Worker, parent: _Block | None) -> None:
        self.owner = owner  # the runner whose calls this block takes
        self.worker = worker
        self.parent = parent
        self.ended = False
        self.nesting = asyncio.Lock()  # nested blocks of this one: one at a time

    async def run(self, call: Callable[[], R]) -> R:
        if self.ended:
            raise SqlmemError(
                "this call comes from a task started inside an atomic() block that has "
                "ended; await such tasks inside the block"
            )
        item = _Call(call)
        self.worker.queue.put(item)
        if self.worker.finished:  # the database closed the block: answer, never hang
            self.worker.drain()
        result: R = await asyncio.wrap_future(item.future)
        return result


def current_block(owner: object) -> _Block | None:
    """The caller's innermost open block of `owner`'s database, if any."""
    block = _current.get()
    while block is not None and block.owner is not owner:
        block = block.parent
    return block


class AsyncAtomic:
    """`async with adb.atomic():` (see the module docstring). Single use."""

    def __init__(self, db: Database, owner: object, on_open: Callable[[_Worker], None]) -> None:
        self._db = db
        self._owner = owner
        self._on_open = on_open  # the database tracks open workers to end them at close
        self._block: _Block | None = None
        self._level: _Enter | None = None
        self._token: contextvars.Token[_Block | None] | None = None
        self._nest_held: asyncio.Lock | None = None

    async def __aenter__(self) -> None:
        if self._block is not None:
            raise SqlmemError("an atomic() block object is used once: call atomic() again")
        parent = current_block(self._owner)
        if parent is None:
            worker = _Worker(self._db)
            self._on_open(worker)
            level = worker.first
            worker.start()
        else:
            worker = parent.worker
            await parent.nesting.acquire()
            self._nest_held = parent.nesting
            level = _Enter()
            worker.queue.put(level)
            if worker.finished:
                worker.drain()
        self._level = level
        try:
            await asyncio.shield(asyncio.wrap_future(level.future))
        except BaseException:
            # Cancelled while waiting to begin (or beginning failed): undo it once begun.
            worker.queue.put(_Exit(level, rollback=True))
            self._release_nesting()
            raise
        self._block = _Block(self._owner, worker, parent)
        self._token = _current.set(self._block)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        block = self._block
        assert block is not None and self._token is not None
        try:
            _current.reset(self._token)
        except ValueError:  # exited from another context than entered: restore by hand
            _current.set(block.parent)
        block.ended = True
        assert self._level is not None
        done = _Exit(self._level, rollback=exc_type is not None)
        block.worker.queue.put(done)
        if block.worker.finished:  # the database closed the block meanwhile: answered now
            block.worker.drain()
        try:
            await _settle(done)
        finally:
            self._release_nesting()

    def _release_nesting(self) -> None:
        if self._nest_held is not None:
            self._nest_held.release()
            self._nest_held = None


async def _settle(done: _Exit) -> None:
    """Waits for the block's end; on cancellation, turns a commit not yet started into a
    rollback (and waits for a commit already started to finish whole)."""
    waiting = asyncio.wrap_future(done.future)
    waiting.add_done_callback(_retrieved)
    try:
        await asyncio.shield(waiting)
    except asyncio.CancelledError:
        if not done.cancel_commit():  # the commit had started: let it finish
            while not waiting.done():
                try:
                    await asyncio.shield(waiting)
                except asyncio.CancelledError:
                    continue
        raise


def _retrieved(future: asyncio.Future[None]) -> None:
    """Marks an end's outcome seen when its waiter left early (no "never retrieved" log);
    the waiter that stayed got it already."""
    if not future.cancelled():
        future.exception()
