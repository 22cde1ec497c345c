"""`MemoryFactory`: one memory database per agent, opened lazily, bounded in number.

A multi-agent program asks the factory for an agent's memory on every turn, from many
threads, and may run thousands of agents in one process. So:

- Nothing is opened until an agent is first resolved; later resolves return the same
  `Database` (a `MemoryDB` for files, the backend's database with a backend). An agent
  with memory disabled, unknown to `agents`, or with no folder to live in resolves to
  None and nothing is created on disk.
- The factory-wide lock only guards the bookkeeping dictionaries, never disk work. Each
  agent has a slot with its own lock, held while that agent's file is opened and migrated,
  so a slow open of one agent (a big migration, a busy file) never delays another.
- A failed open raises and leaves no slot behind: the next resolve tries again.
- At most `max_open` databases hold connections (each costs several file descriptors:
  the database file, its WAL and shared memory, per connection). After every open or
  reopen the least recently used idle databases are suspended. Their `MemoryDB` handles
  stay valid: the engine reopens on next use and tells us through `Engine.on_reopen`, and
  we enforce the bound again. A database in use by another thread is never suspended, so
  the bound can be exceeded while more than `max_open` databases are busy at once.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from ..agent_ids import validate_agent_id
from ..config import StoreConfig
from ..errors import (
    InvalidArgumentError,
    SqlmemError,
    StoreClosedError,
)
from ..protocols import Database, Embedder, FactStore, HistoryStore, is_closed
from ..rules.embedder import check_embedder
from ..sqlite.core.engine import Engine
from ..sqlite.db import MemoryDB
from .agent_config import (
    AGENTS_FOLDER,
    DB_FILE_NAME,
    SCOPES_FOLDER,
    AgentMemoryConfig,
    absolute_folder,
    check_agents,
)
from .agent_files import open_error, refuse_links_below

__all__ = ["MemoryFactory"]

_log = logging.getLogger("sqlmem")

#: Slots of scopes are keyed "scope:<id>": an agent id never contains ':', so the two kinds
#: of key never meet, and scopes share the slots' laziness, bound and life cycle.
_SCOPE_KEY = "scope:"


class Backend(Protocol):
    """Where agents live when not in files of their own: `sqlmem.postgres.PostgresBackend`,
    whose databases are an agent's rows of one shared database."""

    def open(self, agent_id: str, config: StoreConfig) -> Database: ...

    def open_scope(self, scope_id: str, config: StoreConfig) -> Database: ...


def _open_db(path: Path, config: StoreConfig, **options: Any) -> MemoryDB:
    """Open one agent's database; a seam for tests that need a slow or failing open."""
    return MemoryDB(path, config, **options)


class _Slot:
    """One agent's place in the factory: its settings, and its database once opened.

    `lock` is held by the thread opening the database; `db` is written under the factory
    lock and only read under it (or after taking `lock`, which orders it after the write).
    `engine`: the SQLite engine of a file's database (what the `max_open` bound suspends);
    None for a backend's.
    """

    __slots__ = ("config", "db", "engine", "lock", "path")

    def __init__(self, config: AgentMemoryConfig, path: Path) -> None:
        self.config = config
        self.path = path
        self.lock = threading.Lock()
        self.db: Database | None = None
        self.engine: Engine | None = None


class MemoryFactory:
    """Hands out one `Database` per agent id (a `MemoryDB`, or with a `backend` its
    database); thread-safe; close it when done.

    `data_dir` (str, path or None) holds `agents/<agent_id>/memory.db` for agents without
    a folder of their own. `agents`, when given, is the complete list of agents with memory
    (others resolve to None); without it every valid id gets `default`. `max_open` bounds
    the databases holding connections. Paths are made absolute now, so a later `chdir`
    does not move anyone's memory; nothing is created before the first resolve.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None,
        *,
        agents: Mapping[str, AgentMemoryConfig] | None = None,
        default: AgentMemoryConfig | None = None,
        max_open: int = 128,
        embedder: Embedder | None = None,
        backend: Backend | None = None,
    ) -> None:
        """`embedder`: one embedder for every agent's and scope's facts and messages."""
        self._embedder = check_embedder(embedder)
        if embedder is not None and backend is not None:
            raise InvalidArgumentError(
                "give the embedder to the backend (PostgresBackend(dsn, embedder=...)), "
                "which opens the agents' databases, not to the factory"
            )
        if isinstance(max_open, bool) or not isinstance(max_open, int) or max_open < 1:
            raise InvalidArgumentError(f"max_open must be an int >= 1, got {max_open!r}")
        if default is None:
            default = AgentMemoryConfig()
        elif not isinstance(default, AgentMemoryConfig):
            raise InvalidArgumentError("default must be an AgentMemoryConfig")
        self._data_dir = absolute_folder(data_dir, "data_dir")
        self._default = default
        self._agents = check_agents(agents)
        self._max_open = max_open
        # With a backend, agents resolve to its databases: no folder, no file, no LRU bound
        # (its connections are pooled and bounded by the backend itself).
        self._backend = backend
        self._lock = threading.Lock()  # guards _slots, _paths, _agents, _live, _closed
        self._evicting = threading.Lock()  # one eviction pass at a time
        self._slots: dict[str, _Slot] = {}
        self._paths: dict[Path, str] = {}  # database file -> agent id, to refuse sharing
        self._live: set[Engine] = set()  # engines that may hold connections
        self._closed = False

    # -- resolving ----------------------------------------------------------------------

    def resolve(self, agent_id: str) -> Database | None:
        """The agent's database, opened (and migrated) on first use; None if it has none."""
        return self._resolve(validate_agent_id(agent_id))

    def resolve_scope(self, scope_id: str) -> Database:
        """The database of a scope: memory that several agents share (one user's profile
        and preferences, a team's procedures), at `{data_dir}/scopes/{scope_id}/memory.db`.

        Same rules as agents: the id is checked like an agent id before anything touches
        the disk, the file is opened on first use and the same object comes back, it counts
        towards `max_open`, and `close()` closes it. It uses the `default` config's store
        settings (scopes are not named in `agents`). Needs the factory's `data_dir`
        (InvalidArgumentError without one), or a backend: there a scope is rows of the
        shared database of its own (`PostgresBackend.open_scope`), never an agent's.
        """
        validate_agent_id(scope_id, "scope_id")
        if self._data_dir is None and self._backend is None:
            raise InvalidArgumentError("resolve_scope needs the factory's data_dir")
        db = self._resolve(_SCOPE_KEY + scope_id)
        assert db is not None  # a scope always has a file when there is a data_dir
        return db

    def _resolve(self, agent_id: str) -> Database | None:
        """`resolve` for an agent id or a scope key (see `_SCOPE_KEY`)."""
        while True:
            with self._lock:
                if self._closed:
                    raise StoreClosedError("MemoryFactory is closed")
                slot = self._slots.get(agent_id)
                if slot is not None and slot.db is not None:
                    if not is_closed(slot.db):
                        return slot.db
                    # Closed by its user behind our back: forget it and open afresh.
                    self._forget(agent_id, slot)
                    slot = None
                if slot is None:
                    slot = self._new_slot(agent_id)
                    if slot is None:
                        return None
            db = self._open_slot(agent_id, slot)
            if db is not None:
                if slot.engine is not None:
                    self._enforce_bound(keep=slot.engine)
                return db
            # Another thread opened it, or reload()/close() replaced the slot: look again.

    def resolve_history(self, agent_id: str) -> HistoryStore | None:
        db = self.resolve(agent_id)
        return None if db is None else db.history

    def resolve_facts(self, agent_id: str) -> FactStore | None:
        db = self.resolve(agent_id)
        return None if db is None else db.facts

    def _new_slot(self, agent_id: str) -> _Slot | None:
        """Register a slot for an agent that should have memory (factory lock held)."""
        settings = self._settings(agent_id)
        if settings is None:
            return None
        config, path = settings
        other_id = self._paths.get(path)
        if other_id is not None:
            # Two writers of one file in one process, and two agents' memories mixed.
            raise InvalidArgumentError(
                f"agents {other_id!r} and {agent_id!r} would share one database file "
                f"({path}); give each agent its own data_dir"
            )
        slot = self._slots[agent_id] = _Slot(config, path)
        self._paths[path] = agent_id
        return slot

    def _open_slot(self, agent_id: str, slot: _Slot) -> Database | None:
        """Open the slot's database unless another thread did; None means "look again"."""
        with slot.lock:
            with self._lock:
                if slot.db is not None or self._slots.get(agent_id) is not slot:
                    return None
            try:
                if self._backend is not None:
                    if agent_id.startswith(_SCOPE_KEY):
                        scope_id = agent_id[len(_SCOPE_KEY) :]
                        db = self._backend.open_scope(scope_id, slot.config.store)
                    else:
                        db = self._backend.open(agent_id, slot.config.store)
                    return self._keep_backend_db(agent_id, slot, db)
                if slot.config.data_dir is None and self._data_dir is not None:
                    refuse_links_below(self._data_dir, slot.path)
                options = {} if self._embedder is None else {"embedder": self._embedder}
                db = _open_db(slot.path, slot.config.store, **options)
            except BaseException as exc:
                with self._lock:
                    self._forget(agent_id, slot)
                error = open_error(agent_id, slot.path, exc)
                if error is exc:
                    raise
                raise error from exc
            engine = db.engine
            engine.on_reopen = self._on_reopen
            engine.on_idle = self._on_idle
            with self._lock:
                current = not self._closed and self._slots.get(agent_id) is slot
                if current:
                    slot.db, slot.engine = db, engine
                    self._live.add(engine)
            if not current:  # closed or reloaded while we were opening
                db.close()
                return None
            return db

    def _keep_backend_db(self, agent_id: str, slot: _Slot, db: Database) -> Database | None:
        """`_open_slot`'s ending for a backend's database (slot lock held): no engine of
        ours to bound, its connections are the backend's pool."""
        with self._lock:
            current = not self._closed and self._slots.get(agent_id) is slot
            if current:
                slot.db = db
        if not current:  # closed or reloaded while we were opening
            db.close()
            return None
        return db

    def _forget(self, agent_id: str, slot: _Slot) -> None:
        """Drop a slot if it is still the agent's (factory lock held)."""
        if self._slots.get(agent_id) is slot:
            del self._slots[agent_id]
            del self._paths[slot.path]
        if slot.engine is not None:
            self._live.discard(slot.engine)

    # -- configuration ------------------------------------------------------------------

    def _settings(self, agent_id: str) -> tuple[AgentMemoryConfig, Path] | None:
        """The agent's config and file, or None when it gets no memory (factory lock held)."""
        if agent_id.startswith(_SCOPE_KEY):
            scope = AgentMemoryConfig(store=self._default.store)
            if self._backend is not None:  # rows of the shared database, never a file
                return scope, Path("<backend>", agent_id)
            if self._data_dir is None:
                return None
            scope_folder = self._data_dir / SCOPES_FOLDER / agent_id[len(_SCOPE_KEY) :]
            return scope, scope_folder / DB_FILE_NAME
        if self._agents is None:
            config = self._default
        else:
            found = self._agents.get(agent_id)
            if found is None:
                return None
            config = found
        if not config.enabled:
            return None
        if self._backend is not None:  # a name in the bookkeeping, never a file
            return config, Path("<backend>", agent_id)
        if config.data_dir is not None:
            folder = absolute_folder(config.data_dir, "data_dir")
        elif self._data_dir is not None:
            folder = self._data_dir / AGENTS_FOLDER / agent_id
        else:
            return None
        assert folder is not None
        return config, folder / DB_FILE_NAME

    def reload(self, agents: Mapping[str, AgentMemoryConfig] | None) -> None:
        """Apply new agent settings: changed or removed agents are closed and forgotten.

        Agents whose config and file are unchanged keep their open database (the same
        object), so a config reload does not interrupt agents it does not concern.
        `agents=None` gives every agent the factory's `default`, which does not change.
        """
        checked = check_agents(agents)
        with self._lock:
            if self._closed:
                raise StoreClosedError("MemoryFactory is closed")
            self._agents = checked
            stale = []
            for agent_id, slot in list(self._slots.items()):
                if self._settings(agent_id) != (slot.config, slot.path):
                    self._forget(agent_id, slot)
                    stale.append(slot)
        # An open still in flight for a stale slot notices it was replaced and closes its
        # own database, so only finished ones need closing here.
        for slot in stale:
            if slot.db is not None:
                slot.db.close()

    # -- bounding open databases --------------------------------------------------------

    def _on_reopen(self, engine: Engine) -> None:
        """Engine hook: a suspended database reopened on use; suspend another if needed."""
        try:
            with self._lock:
                if self._closed:
                    return
                self._live.add(engine)
            self._enforce_bound(keep=engine)
        except Exception:  # the hook must not fail the caller's read or write
            _log.exception("%s: could not enforce max_open after reopen", engine.path)

    def _on_idle(self, engine: Engine) -> None:
        """Engine hook, after every call: suspend idle databases while over the bound.

        An open or reopen can only suspend databases idle at that moment; those busy in
        other threads stayed open once they finished (16 threads, max_open=1: 7-8 open).
        So the bound is enforced again when a call ends. Under the bound (the usual case)
        this is one unlocked length check: no lock on the hot path.
        """
        if len(self._live) <= self._max_open:
            return
        try:
            self._enforce_bound(keep=None)
        except Exception:  # the hook must not fail the caller's read or write
            _log.exception("%s: could not enforce max_open after a call", engine.path)

    def _enforce_bound(self, keep: Engine | None) -> None:
        """Suspend least recently used idle databases until at most `max_open` are open."""
        with self._evicting:
            with self._lock:
                if self._closed:
                    return
                live = [e for e in self._live if e.is_open and not e.closed]
                self._live = set(live)
            excess = len(live) - self._max_open
            if excess <= 0:
                return
            live.sort(key=lambda e: e.last_used)
            suspended = []
            for engine in live:
                if excess <= 0:
                    break
                if engine is keep:
                    continue
                try:
                    ok = engine.suspend()
                except SqlmemError:  # closing failed; its connections are gone anyway
                    _log.exception("%s: suspend failed", engine.path)
                    ok = not engine.is_open
                if ok:
                    suspended.append(engine)
                    excess -= 1
            with self._lock:
                self._live.difference_update(suspended)

    @property
    def open_count(self) -> int:
        """How many databases hold connections right now (for monitoring and tests)."""
        with self._lock:
            return sum(1 for e in self._live if e.is_open)

    # -- life cycle ---------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Close every database; idempotent. Later resolves raise StoreClosedError.

        Waits for opens in flight, so no connection of this factory outlives the call.
        """
        with self._lock:
            self._closed = True
            slots = list(self._slots.values())
            self._slots.clear()
            self._paths.clear()
            self._live.clear()
        for slot in slots:
            with slot.lock:  # an opener that finishes now sees _closed and closes its db
                db = slot.db
            if db is not None:
                db.close()

    def __enter__(self) -> MemoryFactory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._slots)} agents"
        return f"<MemoryFactory {str(self._data_dir)!r} {state}>"
