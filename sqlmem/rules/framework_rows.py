"""The rows the frameworks' ports exchange (`sqlmem.adapters.ports`), built by every
backend: bytes as the frameworks wrote them, names and ids as text."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["CheckpointRow", "KVRow", "KVVectorRow", "WriteRow"]

#: (namespace, key, value, created_at ms, updated_at ms) of one live key-value row.
KVRow = tuple[str, str, bytes, int, int]
#: (namespace, key, vector bytes) of one stored item vector.
KVVectorRow = tuple[str, str, bytes]
#: (task_id, channel, value type, value bytes) of one pending write, in LangGraph's order.
WriteRow = tuple[str, str, str, bytes]


class CheckpointRow(NamedTuple):
    """One stored checkpoint with its pending writes (bytes as the serde wrote them)."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    checkpoint: tuple[str, bytes]
    metadata: tuple[str, bytes]
    writes: list[WriteRow]
