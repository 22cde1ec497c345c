"""How an export stream reaches a backend's importer: validated batches of `batch_size`
records, each handed to the backend's one-transaction writer, with progress every 10,000
records. One rule for every backend (SQLite's importer, PostgreSQL's transfer), so batch
boundaries, validation positions and progress agree between them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .export_format import ExportStream, Progress, Row, validate_batch

__all__ = ["write_in_batches"]


def write_in_batches(
    stream: ExportStream,
    write: Callable[[list[Row]], None],
    progress: Progress | None,
    batch_size: int,
) -> None:
    """Validate the stream's records `batch_size` at a time and `write` each batch (the
    caller's writer commits it as one transaction); a bad record raises with its position
    before its batch is written."""
    batch: list[tuple[int, Any]] = []
    done = 0
    for item in stream.records:
        batch.append(item)
        if len(batch) >= batch_size:
            write(validate_batch(batch, stream.unit))
            done += len(batch)
            batch.clear()
            if progress is not None and done % 10_000 == 0:
                progress(done)
    if batch:
        write(validate_batch(batch, stream.unit))
