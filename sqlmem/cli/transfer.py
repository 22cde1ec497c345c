"""`sqlmem export` and `sqlmem import`: the command-line side of `sqlmem.transfer`.

Export writes to a temporary file beside the target and renames it into place, so an
interrupted export never leaves a truncated backup under the real name. Import reads and
checks the file's header before it opens (or creates) the database, so a wrong file
leaves no empty database behind.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from .. import transfer
from ..db import open as open_db
from ..db import resolve_path
from .opening import CommandError, open_existing
from .output import Output, Progress

__all__ = ["run_export", "run_import"]


def _show_progress(args: argparse.Namespace) -> bool:
    return bool(args.progress) or sys.stderr.isatty()


def run_export(args: argparse.Namespace, out: Output) -> int:
    # To standard output the export itself is the (JSON Lines) result, with or without
    # --json; with -o, --json describes what was written.
    to_stdout = args.output == "-"
    progress = Progress("exported", _show_progress(args))
    with open_existing(args.path) as db, progress:
        records = transfer.export_records(db, progress)
        if to_stdout:
            count = _write_stdout(records)
        else:
            target = resolve_path(args.output)
            if target in (db.path, Path(f"{db.path}-wal")):
                raise CommandError(f"{target}: refusing to overwrite the database itself")
            with _replace_atomically(target) as fp:
                count = transfer.write_jsonl(records, fp)
    if not to_stdout:
        data = {"path": str(db.path), "output": str(target), "records": count - 1}
        out.result(data, lambda d: [f"exported {d['records']} records to {d['output']}"])
    return 0


def _write_stdout(records: Iterator[dict[str, Any]]) -> int:
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is not None:
        count = transfer.write_jsonl(records, buffer)
        buffer.flush()
        return count
    raw = io.BytesIO()  # a text-only stream (rare): the same bytes, decoded
    count = transfer.write_jsonl(records, raw)
    sys.stdout.write(raw.getvalue().decode("utf-8"))
    return count


@contextlib.contextmanager
def _replace_atomically(target: Path) -> Iterator[IO[bytes]]:
    """A binary file that becomes `target` only if the block completes."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fp:
            yield fp
            fp.flush()
            os.fsync(fp.fileno())  # the new name must never point at unwritten data
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def run_import(args: argparse.Namespace, out: Output) -> int:
    source = Path(args.file)
    if source.is_dir():
        raise CommandError(f"{source}: is a directory, not an export file")
    progress = Progress("imported", _show_progress(args))
    with open(source, "rb") as fp:
        stream = transfer.read_export(fp)  # a wrong file fails here, before the database
        target = resolve_path(args.path)
        if target.is_dir():
            raise CommandError(f"{target}: is a directory, not a database file")
        with open_db(target) as db, progress:
            counts = transfer.import_stream(db, stream, progress)
    data = {"path": str(target), "file": str(source), **counts.as_dict()}
    out.result(data, _import_text)
    return 0


def _import_text(data: dict[str, Any]) -> list[str]:
    return [
        f"imported {data['file']} into {data['path']}:",
        f"  messages   {data['messages']} added, {data['messages_skipped']} already there",
        f"  summaries  {data['summaries']} set",
        f"  facts      {data['facts']} added or updated, {data['facts_skipped']} unchanged",
    ]
