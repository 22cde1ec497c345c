"""LangGraph's checkpoints and pending writes in the in-memory database: the checkpoint
port of `sqlmem.adapters.ports` over dicts, with the SQLite file's semantics (regular
writes kept as first written, special channels replaced; search newest first by
checkpoint id, then thread, then namespace)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple, cast

from ..rules.checkpoint_checks import check_search, check_strategy, checked_key, texts
from ..rules.checks import check_text
from ..rules.framework_rows import CheckpointRow, WriteRow

__all__ = ["InMemoryCheckpointStore"]

Key = tuple[str, str, str]  # (thread_id, checkpoint_ns, checkpoint_id)
WriteKey = tuple[str, int]  # (task_id, idx)


class _Stored(NamedTuple):
    parent_id: str | None
    checkpoint: tuple[str, bytes]
    metadata: tuple[str, bytes]
    run_id: str | None


class _Write(NamedTuple):
    channel: str
    value_type: str
    value: bytes
    task_path: str


class InMemoryCheckpointStore:
    """Checkpoints and pending writes by thread and namespace; thread-safe. `_lock` is the
    database's when it runs `atomic()`."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._checkpoints: dict[Key, _Stored] = {}
        self._writes: dict[Key, dict[WriteKey, _Write]] = {}

    def _snapshot(self) -> object:
        return dict(self._checkpoints), {key: dict(w) for key, w in self._writes.items()}

    def _restore(self, state: object) -> None:
        self._checkpoints, self._writes = cast(
            tuple[dict[Key, _Stored], dict[Key, dict[WriteKey, _Write]]], state
        )

    def put(
        self,
        key: tuple[str, str, str],
        parent_id: str | None,
        checkpoint: tuple[str, bytes],
        metadata: tuple[str, bytes],
        run_id: str | None,
    ) -> None:
        checked = checked_key(key)
        with self._lock:
            self._checkpoints[checked] = _Stored(parent_id, checkpoint, metadata, run_id)

    def put_writes(
        self,
        key: tuple[str, str, str],
        writes: Sequence[tuple[str, int, str, str, bytes]],
        task_path: str,
        *,
        replace: bool,
    ) -> None:
        checked = checked_key(key)
        with self._lock:
            held = self._writes.setdefault(checked, {})
            for task_id, idx, channel, vtype, value in writes:
                if replace or (task_id, idx) not in held:
                    held[task_id, idx] = _Write(channel, vtype, value, task_path)

    def get(self, thread_id: str, ns: str, checkpoint_id: str | None) -> CheckpointRow | None:
        check_text(thread_id, "thread_id")
        check_text(ns, "checkpoint_ns")
        with self._lock:
            if checkpoint_id is None:
                ids = [k[2] for k in self._checkpoints if k[0] == thread_id and k[1] == ns]
                if not ids:
                    return None
                checkpoint_id = max(ids)
            check_text(checkpoint_id, "checkpoint_id")
            key = (thread_id, ns, checkpoint_id)
            return self._row(key) if key in self._checkpoints else None

    def search(
        self,
        thread_id: str | None,
        ns: str | None,
        checkpoint_id: str | None,
        before: str | None,
    ) -> Iterator[CheckpointRow]:
        check_search(thread_id, ns, checkpoint_id, before)
        with self._lock:
            keys = [
                k
                for k in self._checkpoints
                if (thread_id is None or k[0] == thread_id)
                and (ns is None or k[1] == ns)
                and (checkpoint_id is None or k[2] == checkpoint_id)
                and (before is None or k[2] < before)
            ]
            keys.sort(key=lambda k: (k[2], k[0], k[1]), reverse=True)
            return iter([self._row(k) for k in keys])

    def delete_thread(self, thread_id: str) -> None:
        check_text(thread_id, "thread_id")
        with self._lock:
            self._drop(lambda k: k[0] == thread_id)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        wanted = set(texts(run_ids, "run_ids"))
        with self._lock:
            gone = {k for k, s in self._checkpoints.items() if s.run_id in wanted}
            self._drop(gone.__contains__)

    def copy_thread(self, source: str, target: str) -> None:
        check_text(source, "source_thread_id")
        check_text(target, "target_thread_id")
        if source == target:
            return
        with self._lock:
            for k, stored in list(self._checkpoints.items()):
                if k[0] == source:
                    self._checkpoints[target, k[1], k[2]] = stored
            for k, writes in list(self._writes.items()):
                if k[0] == source:
                    self._writes.setdefault((target, k[1], k[2]), {}).update(writes)

    def prune(self, thread_ids: Sequence[str], strategy: str) -> None:
        wanted = texts(thread_ids, "thread_ids")
        check_strategy(strategy)
        with self._lock:
            for thread_id in wanted:
                latest: dict[str, str] = {}
                for t, ns, cid in self._checkpoints:
                    if t == thread_id and cid > latest.get(ns, ""):
                        latest[ns] = cid
                self._drop(_pruned(thread_id, None if strategy == "delete" else latest))

    def _drop(self, gone: Callable[[Key], bool]) -> None:
        for key in [k for k in self._checkpoints if gone(k)]:
            del self._checkpoints[key]
        for key in [k for k in self._writes if gone(k)]:
            del self._writes[key]

    def _row(self, key: Key) -> CheckpointRow:
        stored = self._checkpoints[key]
        held = self._writes.get(key, {})
        ordered = sorted(held.items(), key=lambda kv: (kv[1].task_path, kv[0][0], kv[0][1]))
        writes: list[WriteRow] = [
            (task_id, w.channel, w.value_type, w.value) for (task_id, _), w in ordered
        ]
        return CheckpointRow(*key, stored.parent_id, stored.checkpoint, stored.metadata, writes)


def _pruned(thread_id: str, latest: dict[str, str] | None) -> Callable[[Key], bool]:
    """What a prune of the thread removes: everything (`latest` None), or what is older
    than the newest checkpoint of its namespace."""
    if latest is None:
        return lambda k: k[0] == thread_id
    return lambda k: k[0] == thread_id and k[1] in latest and k[2] < latest[k[1]]
