"""sqlmem behind LangGraph's checkpointer: `SqlmemSaver` and `AsyncSqlmemSaver`, a
`BaseCheckpointSaver` in the agent's memory file. Import them from
`sqlmem.adapters.langgraph`.

    from sqlmem.adapters.langgraph import SqlmemSaver
    saver = SqlmemSaver("memory.db")          # instead of SqliteSaver / InMemorySaver
    graph = builder.compile(checkpointer=saver)

Storage: `sqlmem.sqlite.frameworks.checkpoints` (migration checkpoints). Checkpoints, metadata and
pending writes are stored as LangGraph's serde writes them (`dumps_typed`: a type tag and
bytes), so any serde (encrypted ones too) works and every value LangGraph can checkpoint
round-trips. Every put is one transaction. `list` filters on metadata in Python after the
thread / namespace / `before` conditions narrowed the rows in SQL (metadata is the
serde's bytes, opaque to SQL); it reads newest first, page by page, and stops at `limit`.

`SqlmemSaver` answers the sync and the async methods (the async ones on a private thread,
never blocking the loop); `AsyncSqlmemSaver` is the async-first twin that, like
LangGraph's `AsyncSqliteSaver`, refuses sync calls made from inside its running event
loop (`SyncCallInEventLoopError`).
"""

from __future__ import annotations

import asyncio
import functools
import random
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from itertools import islice
from types import TracebackType
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from ..errors import InvalidArgumentError
from ..protocols import Database
from ._backend import Backend, DbOrPath
from .ports import CheckpointPort, CheckpointRow

__all__ = ["AsyncSqlmemSaver", "SqlmemSaver"]

#: Checkpoints `alist` pulls per hop to the runner thread.
_ALIST_BATCH = 64


class SqlmemSaver(BaseCheckpointSaver[str]):
    """LangGraph checkpoints and pending writes in a sqlmem memory file.

    `db_or_path`: any sqlmem database or an `AsyncMemoryDB` to share (never closed here) or a path
    (opened here, closed by `close()`). `serde`: LangGraph's serializer (default: its
    JsonPlusSerializer)."""

    def __init__(self, db_or_path: DbOrPath, *, serde: SerializerProtocol | None = None) -> None:
        super().__init__(serde=serde)
        self._backend = Backend(db_or_path, type(self).__name__)

    @functools.cached_property
    def _store(self) -> CheckpointPort:
        """Built on first use, on the thread that makes it: a path opens only then."""
        return self._backend.storage.checkpoints

    @property
    def db(self) -> Database:
        return self._backend.db

    def close(self) -> None:
        """Waits for async calls in flight; closes the database if this saver opened it."""
        self._backend.close()

    def __enter__(self) -> SqlmemSaver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> SqlmemSaver:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.close)

    def get_next_version(self, current: str | None, channel: None = None) -> str:
        """As SqliteSaver: a zero-padded counter (string order is version order) and a
        random fraction, so concurrent branches never mint equal versions."""
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(str(current).split(".")[0])
        return f"{number + 1:032}.{random.random():016}"

    # -- sync API ---------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._get_tuple(config)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        return self._list(config, filter, before, limit)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self._put(config, checkpoint, metadata)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self._put_writes(config, writes, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        self._store.delete_thread(str(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._store.delete_for_runs(run_ids)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._store.copy_thread(str(source_thread_id), str(target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._store.prune([str(t) for t in _sequence(thread_ids)], strategy)

    # -- async API: the same work on the runner's thread ------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._backend.run(self._get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = await self._backend.run(self._list, config, filter, before, limit)
        while batch := await self._backend.run(_take, found, _ALIST_BATCH):
            for item in batch:
                yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await self._backend.write(self._put, config, checkpoint, metadata)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await self._backend.write(self._put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await self._backend.write(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self._backend.write(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self._backend.write(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self._backend.write(self.prune, thread_ids, strategy=strategy)

    # -- the work ---------------------------------------------------------------------------

    def _get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        configurable = _configurable(config)
        row = self._store.get(
            _thread_id(configurable),
            configurable.get("checkpoint_ns", ""),
            get_checkpoint_id(config),
        )
        return None if row is None else self._tuple(row)

    def _list(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> Iterator[CheckpointTuple]:
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise InvalidArgumentError(f"limit must be None or an int, got {limit!r}")
        if filter is not None and not isinstance(filter, dict):
            raise InvalidArgumentError("filter must be None or a dict of metadata values")
        configurable = _configurable(config) if config is not None else {}
        thread_id = configurable.get("thread_id")
        rows = self._store.search(
            None if thread_id is None else str(thread_id),
            configurable.get("checkpoint_ns"),
            configurable.get("checkpoint_id"),
            get_checkpoint_id(before) if before is not None else None,
        )
        found = (self._tuple(row) for row in rows)
        if filter:
            for key in filter:
                _check_filter_key(key)
            wanted = list(filter.items())
            found = (t for t in found if all(_has(t.metadata, k, v) for k, v in wanted))
        return found if limit is None else islice(found, max(limit, 0))

    def _put(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata
    ) -> RunnableConfig:
        configurable = _configurable(config)
        thread_id = _thread_id(configurable)
        ns = configurable.get("checkpoint_ns", "")
        # As SqliteSaver and InMemorySaver: the metadata whole, its "writes" included.
        stored = get_checkpoint_metadata(config, metadata)
        run_id = stored.get("run_id")
        self._store.put(
            (thread_id, ns, checkpoint["id"]),
            configurable.get("checkpoint_id"),
            self.serde.dumps_typed(checkpoint),
            self.serde.dumps_typed(stored),
            None if run_id is None else str(run_id),
        )
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint["id"],
            }
        }

    def _put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> None:
        configurable = _configurable(config)
        key = (
            _thread_id(configurable),
            configurable.get("checkpoint_ns", ""),
            configurable.get("checkpoint_id"),
        )
        if key[2] is None:
            raise InvalidArgumentError("put_writes: config has no checkpoint_id")
        rows = [
            (task_id, WRITES_IDX_MAP.get(channel, idx), channel, *self.serde.dumps_typed(value))
            for idx, (channel, value) in enumerate(writes)
        ]
        replace = all(channel in WRITES_IDX_MAP for channel, _ in writes)
        self._store.put_writes(key, rows, task_path, replace=replace)  # type: ignore[arg-type]

    def _tuple(self, row: CheckpointRow) -> CheckpointTuple:
        loads = self.serde.loads_typed
        config: RunnableConfig = {
            "configurable": {
                "thread_id": row.thread_id,
                "checkpoint_ns": row.checkpoint_ns,
                "checkpoint_id": row.checkpoint_id,
            }
        }
        parent: RunnableConfig | None = None
        if row.parent_checkpoint_id is not None:
            parent = {
                "configurable": {
                    "thread_id": row.thread_id,
                    "checkpoint_ns": row.checkpoint_ns,
                    "checkpoint_id": row.parent_checkpoint_id,
                }
            }
        return CheckpointTuple(
            config,
            loads(row.checkpoint),
            loads(row.metadata),
            parent,
            [
                (task_id, channel, loads((vtype, value)))
                for task_id, channel, vtype, value in row.writes
            ],
        )


def _refuse_in_loop(name: str) -> None:
    """A sync call from a thread running an event loop would block it: refused."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop on this thread: a sync call is fine here
        return
    from .langgraph_async import SyncCallInEventLoopError

    raise SyncCallInEventLoopError(
        f"AsyncSqlmemSaver.{name}: a sync call from inside a running event loop would "
        f"block it; await the async method (a{name}) instead"
    )


class AsyncSqlmemSaver(SqlmemSaver):
    """`SqlmemSaver` for async programs: the async methods as the parent's; sync calls
    from inside a running event loop raise `SyncCallInEventLoopError` (as LangGraph's
    AsyncSqliteSaver), sync calls from other threads work."""

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        _refuse_in_loop("get_tuple")
        return super().get_tuple(config)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        _refuse_in_loop("list")
        return super().list(config, filter=filter, before=before, limit=limit)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        _refuse_in_loop("put")
        return super().put(config, checkpoint, metadata, new_versions)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        _refuse_in_loop("put_writes")
        super().put_writes(config, writes, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        _refuse_in_loop("delete_thread")
        super().delete_thread(thread_id)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        _refuse_in_loop("delete_for_runs")
        super().delete_for_runs(run_ids)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        _refuse_in_loop("copy_thread")
        super().copy_thread(source_thread_id, target_thread_id)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        _refuse_in_loop("prune")
        super().prune(thread_ids, strategy=strategy)


# -- helpers --------------------------------------------------------------------------------------


def _configurable(config: Any) -> dict[str, Any]:
    configurable = config.get("configurable") if isinstance(config, dict) else None
    if not isinstance(configurable, dict):
        raise InvalidArgumentError("config must be a dict with a 'configurable' dict")
    return configurable


def _thread_id(configurable: dict[str, Any]) -> str:
    thread_id = configurable.get("thread_id")
    if thread_id is None:
        raise InvalidArgumentError("config['configurable'] has no thread_id")
    return str(thread_id)


#: The filter keys SqliteSaver accepts: names and dotted paths of them.
_FILTER_KEY = re.compile(r"[a-zA-Z0-9_.-]+")


def _check_filter_key(key: Any) -> None:
    """Refuse the filter keys SqliteSaver refuses ("Invalid filter key", a ValueError).
    sqlmem's filters run in Python and never reach SQL text, so no key could inject
    anything here; the same refusal keeps a graph's behaviour the same on either saver
    (its own test suite checks it), and a key outside it names no metadata a graph writes."""
    if not isinstance(key, str) or _FILTER_KEY.fullmatch(key) is None:
        raise InvalidArgumentError(
            f"Invalid filter key: {key!r} (letters, digits, '_', '-' and '.' only)"
        )


def _has(metadata: Any, key: str, want: Any) -> bool:
    """`metadata[key] == want`; a key absent at the top that has dots is a path into
    nested dicts ("user.access-level"), as SqliteSaver reads filter keys."""
    if not isinstance(metadata, dict):
        return False
    if key in metadata:
        return bool(metadata[key] == want)
    if "." not in key:
        return False
    value: Any = metadata
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return False
        value = value[part]
    return bool(value == want)


def _sequence(values: Any) -> Sequence[Any]:
    if isinstance(values, (str, bytes)):
        raise InvalidArgumentError("thread_ids must be a sequence of str, not one string")
    return list(values)


def _take(found: Iterator[CheckpointTuple], count: int) -> list[CheckpointTuple]:
    return list(islice(found, count))
