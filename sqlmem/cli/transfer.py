"""`sqlmem export` and `sqlmem import`: the command-line side of sqlite/export.py
and sqlite/importer.py (format: rules/export_format.py).

Export writes to a temporary file beside the target and renames it into place, so an
interrupted export never leaves a truncated backup under the real name; the temporary
file (a partial copy of the memory) is removed on any failure and on SIGINT, SIGTERM and
SIGHUP. Folders it creates are 0700 and the file 0600, like the engine's own
(a memory file is private to its user).
It refuses any output that is the database or one of SQLite's files beside it, however
spelled: `..`, symbolic links, hard links. Import reads and
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

from ..rules.export_format import read_export, write_jsonl
from ..sqlite.core.backup import same_file
from ..sqlite.core.connection import FILE_MODE, ensure_folder
from ..sqlite.db import open as open_db
from ..sqlite.db import resolve_path
from ..sqlite.transfer.export import export_records
from ..sqlite.transfer.importer import import_stream
from .opening import CommandError, open_existing
from .output import Output, Progress
from .signals import exceptions_on_signals

__all__ = ["run_export", "run_import"]


def _show_progress(args: argparse.Namespace) -> bool:
    return bool(args.progress) or sys.stderr.isatty()


def run_export(args: argparse.Namespace, out: Output) -> int:
    # To standard output the export itself is the (JSON Lines) result, with or without
    # --json; with -o, --json describes what was written.
    to_stdout = args.output == "-"
    progress = Progress("exported", _show_progress(args))
    with open_existing(args.path) as db, progress:
        records = export_records(db, progress)
        if to_stdout:
            count = _write_stdout(records)
        else:
            target = _output_path(args.output, db.path)
            with exceptions_on_signals(), _replace_atomically(target) as fp:
                count = write_jsonl(records, fp)
    if not to_stdout:
        data = {"path": str(db.path), "output": str(target), "records": count - 1}
        out.result(data, lambda d: [f"exported {d['records']} records to {d['output']}"])
    return 0


def _write_stdout(records: Iterator[dict[str, Any]]) -> int:
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is not None:
        count = write_jsonl(records, buffer)
        buffer.flush()
        return count
    raw = io.BytesIO()  # a text-only stream (rare): the same bytes, decoded
    count = write_jsonl(records, raw)
    sys.stdout.write(raw.getvalue().decode("utf-8"))
    return count


#: SQLite's files of a database: replacing any of them destroys or corrupts it.
_DATABASE_FILES = ("", "-wal", "-shm", "-journal")


def _output_path(output: str, database: Path) -> Path:
    """Where `-o` writes: its folder resolved (`..`, symbolic links), its name kept.

    Refuses the database, its -wal, -shm or -journal under any spelling: the guard used
    to compare unresolved paths, so `-o dir/sub/../memory.db` replaced the database with
    JSON. A name that is a link is resolved too (os.replace would replace the link, but
    a person who names the database through a link means the database).
    """
    given = resolve_path(output)
    target = Path(os.path.realpath(given.parent)) / given.name
    if target.is_dir():
        raise CommandError(f"{target}: is a directory; -o takes a file name")
    real = os.path.realpath(target)
    for spelling in {database, Path(os.path.realpath(database))}:
        for suffix in _DATABASE_FILES:
            guarded = Path(f"{spelling}{suffix}")
            if real == os.path.realpath(guarded) or same_file(target, guarded):
                raise CommandError(
                    f"{output}: refusing to overwrite the database or its {suffix or 'file'}"
                    f" ({guarded})"
                )
    return target


@contextlib.contextmanager
def _replace_atomically(target: Path) -> Iterator[IO[bytes]]:
    """A binary file that becomes `target` only if the block completes.

    Whatever ends the block early, the temporary file goes: it holds a partial copy of
    the memory under a hidden name nobody would think of deleting.
    """
    ensure_folder(target.parent)  # 0700 each, whatever the umask
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, FILE_MODE)  # mkstemp's 0600 is filtered by the umask too
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
        stream = read_export(fp)  # a wrong file fails here, before the database
        target = resolve_path(args.path)
        if target.is_dir():
            raise CommandError(f"{target}: is a directory, not a database file")
        with open_db(target) as db, progress:
            counts = import_stream(db, stream, progress)
    data = {"path": str(target), "file": str(source), **counts.as_dict()}
    out.result(data, _import_text)
    return 0


def _import_text(data: dict[str, Any]) -> list[str]:
    return [
        f"imported {data['file']} into {data['path']}:",
        f"  messages   {data['messages']} added, {data['messages_skipped']} already there",
        f"  summaries  {data['summaries']} set",
        f"  facts      {data['facts']} added or updated, {data['facts_skipped']} unchanged",
        f"  documents  {data['documents']} added or updated, "
        f"{data['documents_skipped']} unchanged; {data['revisions']} revisions added",
        f"  kv         {data['kv']} added or updated, {data['kv_skipped']} unchanged",
        f"  checkpoints {data['checkpoints']} added ({data['checkpoint_writes']} pending "
        f"writes), {data['checkpoints_skipped']} already there",
    ]
