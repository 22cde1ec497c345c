"""Fork safety: no SQLite connection, transaction or lock crosses `os.fork()`.

SQLite forbids using a connection in a child process, and two real failures showed why
"close the inherited connections in the child" is not enough:
- closing a connection that another parent thread had inside a write transaction rolls it
  back, and in WAL mode that rollback clears, in the shared -shm, the index entries of the
  frames the parent's transaction had already spilled: the parent's commit then succeeded
  and its rows were gone (2,000 acknowledged messages, a file failing `check()`);
- a thread that was inside SQLite at the moment of the fork may hold one of SQLite's
  mutexes (its memory allocator's, say); the child inherits it locked, and its first call
  into SQLite (closing or opening a connection) hangs for ever.

So the fork itself waits: before it, every engine of this process stops taking new calls,
waits for the calls in flight to end, and closes its connections (`Engine.pause_for_fork`);
the child then inherits no connection, no transaction and no SQLite state in use, and opens
its own on first use, like the parent does after the fork. The wait is bounded
(`FORK_WAIT_SECONDS` for all engines together, e.g. a `vacuum()` running in another
thread): past it, the engines still busy keep their connections, the child abandons them
without ever calling into SQLite for them (they stay referenced for ever, so not even
interpreter shutdown closes them), and a warning is logged.

The same holds for SQLite used outside any engine call: tokenizing a query on a private
in-memory connection (sqlmem.search.query) runs inside `sqlite_outside_engines()`, which a fork
waits for too. SQLite used by other code of the program (apsw or the stdlib's sqlite3 in
another thread) is beyond our reach.

`subprocess` runs these hooks only when given a `preexec_fn` (otherwise it forks and execs
in C), so it usually costs nothing here.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Iterable
from typing import Protocol

__all__ = ["FORK_WAIT_SECONDS", "Forkable", "abandon", "register", "sqlite_outside_engines"]

_log = logging.getLogger("sqlmem")

#: The longest a fork waits, in all, for calls in flight in other threads to end.
FORK_WAIT_SECONDS = 10.0


class Forkable(Protocol):
    def pause_for_fork(self, timeout: float) -> None: ...
    def resume_after_fork(self) -> None: ...
    def forget_after_fork(self) -> None: ...


#: Held from just before a fork until just after it, so no engine is created meanwhile.
_registry_lock = threading.Lock()
_live: weakref.WeakSet[Forkable] = weakref.WeakSet()


class _OutsideEngines:
    """Counts the threads inside SQLite outside any engine call; a fork waits for them."""

    def __init__(self) -> None:
        self._state = threading.Condition(threading.Lock())
        self._inside = 0
        self._fork_pending = False

    def __enter__(self) -> None:
        with self._state:
            while self._fork_pending:
                self._state.wait()
            self._inside += 1

    def __exit__(self, *exc_info: object) -> None:
        with self._state:
            self._inside -= 1
            if self._fork_pending:
                self._state.notify_all()

    def pause(self, timeout: float) -> None:
        with self._state:
            self._fork_pending = True
            if not self._state.wait_for(lambda: not self._inside, timeout):
                _log.warning("forking while another thread is inside SQLite (tokenizing)")

    def resume(self) -> None:
        with self._state:
            self._fork_pending = False
            self._state.notify_all()


_outside = _OutsideEngines()


def sqlite_outside_engines() -> _OutsideEngines:
    """`with sqlite_outside_engines():` around SQLite calls made outside any engine call."""
    return _outside


def register(engine: Forkable) -> None:
    """Track `engine` for forks (waits while a fork is under way)."""
    with _registry_lock:
        _live.add(engine)


def abandon(objects: Iterable[object]) -> None:
    """Keep objects alive for ever: a connection inherited from the parent must never be
    closed by the child, not even by garbage collection at interpreter shutdown."""
    import ctypes  # only in a child whose fork could not wait for every call

    for obj in objects:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))


def _before_fork() -> None:
    _registry_lock.acquire()
    try:
        deadline = time.monotonic() + FORK_WAIT_SECONDS
        for engine in list(_live):
            engine.pause_for_fork(max(0.0, deadline - time.monotonic()))
        _outside.pause(max(0.0, deadline - time.monotonic()))
    except BaseException:  # a fork hook must never raise; the child copes (see above)
        _log.exception("sqlmem: preparing for fork failed")


def _after_fork_in_parent() -> None:
    try:
        _outside.resume()
        for engine in list(_live):
            engine.resume_after_fork()
    finally:
        _registry_lock.release()


def _after_fork_in_child() -> None:
    global _registry_lock, _outside
    _registry_lock = threading.Lock()
    _outside = _OutsideEngines()
    for engine in list(_live):
        engine.forget_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_before_fork,
        after_in_parent=_after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )
