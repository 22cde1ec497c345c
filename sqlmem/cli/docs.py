"""`sqlmem docs PATH ACTION`: the workspace documents of a database.

`list`, `show`, `history`, `search` and `export` only read: they open the file through
`open_existing` (never created, never migrated, never written, no write lock). `write`,
`edit`, `restore` and `import` open it like a program does (created and migrated if
needed), each change one transaction.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..doc_records import DocumentInfo
from ..errors import map_os_error
from ..sqlite.db import MemoryDB, resolve_path
from ..sqlite.db import open as open_db
from .opening import CommandError, open_existing
from .output import Output, human_bytes, preview

__all__ = ["run_docs"]

_READ_ONLY = frozenset(("list", "show", "history", "search", "export"))


def run_docs(args: argparse.Namespace, out: Output) -> int:
    action = args.docs_command
    if action in _READ_ONLY:
        db = open_existing(args.path)
    else:
        path = resolve_path(args.path)
        if path.is_dir():
            raise CommandError(f"{path}: is a directory, not a database file")
        db = open_db(path)
    with db:
        data, render = _ACTIONS[action](db, args)
    out.result(data, render)
    return 0


Result = tuple[dict[str, Any], Any]


def _info(info: DocumentInfo) -> dict[str, Any]:
    return {
        "path": info.path,
        "enabled": info.enabled,
        "sort_order": info.sort_order,
        "revision": info.revision,
        "size": info.size,
        "created_at": info.created_at,
        "updated_at": info.updated_at,
    }


def _list(db: MemoryDB, args: argparse.Namespace) -> Result:
    found = db.docs.list(args.prefix)
    return {"prefix": args.prefix, "documents": [_info(i) for i in found]}, _list_text


def _list_text(data: dict[str, Any]) -> Iterator[str]:
    if not data["documents"]:
        yield "no documents" + (f" under {data['prefix']!r}" if data["prefix"] else "")
    for doc in data["documents"]:
        mark = "on " if doc["enabled"] else "off"
        yield (
            f"{mark} {doc['sort_order']:>4}  {doc['path']}  "
            f"(rev {doc['revision']}, {human_bytes(doc['size'])})"
        )


def _show(db: MemoryDB, args: argparse.Namespace) -> Result:
    if args.revision is None:
        doc = db.docs.read(args.file)
        if doc is None:
            raise CommandError(f"no document at {args.file!r}")
        data = {**_info(doc), "content": doc.content}
    else:
        content = db.docs.read_revision(args.file, args.revision)
        data = {"path": args.file, "revision": args.revision, "content": content}
    return data, _show_text


def _show_text(data: dict[str, Any]) -> Iterator[str]:
    # The content as it is (a final newline added only when it has none), so that
    # `show F > F.md` gives back the file an editor would save.
    content: str = data["content"]
    if content:
        yield content.removesuffix("\n")


def _write(db: MemoryDB, args: argparse.Namespace) -> Result:
    content = _read_input(args.source)
    done = db.docs.write(args.file, content)
    return done.model_dump(), _write_text


def _read_input(source: str | None) -> str:
    try:
        if source is None or source == "-":
            data = sys.stdin.buffer.read()
        else:
            data = Path(source).read_bytes()
    except OSError as exc:
        raise map_os_error(exc, source or "stdin", "cannot read the content") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CommandError(f"{source or 'stdin'}: not UTF-8 text ({exc.reason})") from None


def _write_text(data: dict[str, Any]) -> Iterator[str]:
    if data["created"]:
        yield f"created {data['path']} ({data['bytes']} bytes, revision 1)"
    elif data["overwritten"]:
        yield f"wrote {data['path']} ({data['bytes']} bytes, revision {data['revision']})"
    else:
        yield f"{data['path']}: unchanged (revision {data['revision']})"


def _edit(db: MemoryDB, args: argparse.Namespace) -> Result:
    count = db.docs.edit(args.file, args.old, args.new, replace_all=args.all)
    doc = db.docs.read(args.file)
    revision = doc.revision if doc is not None else None
    data = {"path": args.file, "replacements": count, "revision": revision}
    return data, _edit_text


def _edit_text(data: dict[str, Any]) -> Iterator[str]:
    plural = "" if data["replacements"] == 1 else "s"
    yield (
        f"{data['path']}: {data['replacements']} replacement{plural} (revision {data['revision']})"
    )


def _history(db: MemoryDB, args: argparse.Namespace) -> Result:
    doc = db.docs.read(args.file)
    if doc is None:
        raise CommandError(f"no document at {args.file!r}")
    kept = db.docs.revisions(args.file)
    data = {
        "path": args.file,
        "current": {"revision": doc.revision, "size": doc.size, "updated_at": doc.updated_at},
        "revisions": [r.model_dump() for r in kept],
    }
    return data, _history_text


def _history_text(data: dict[str, Any]) -> Iterator[str]:
    current = data["current"]
    yield f"{data['path']}: revision {current['revision']} (current), {current['size']} bytes"
    for r in data["revisions"]:
        when = f"{r['updated_at']:%Y-%m-%d %H:%M:%S}"
        yield f"  revision {r['revision']:>4}  {r['size']:>8} bytes  {when}"


def _restore(db: MemoryDB, args: argparse.Namespace) -> Result:
    done = db.docs.restore(args.file, args.revision)
    return {**done.model_dump(), "restored": args.revision}, _restore_text


def _restore_text(data: dict[str, Any]) -> Iterator[str]:
    if data["overwritten"]:
        yield (
            f"restored {data['path']} to revision {data['restored']}'s content "
            f"(now revision {data['revision']})"
        )
    else:
        yield f"{data['path']}: already holds revision {data['restored']}'s content"


def _search(db: MemoryDB, args: argparse.Namespace) -> Result:
    hits = db.docs.search(args.query, top_k=args.top_k, prefix=args.prefix)
    data = {"query": args.query, "results": [h.model_dump() for h in hits]}
    return data, _search_text


def _search_text(data: dict[str, Any]) -> Iterator[str]:
    if not data["results"]:
        yield f"no document block matches {data['query']!r}"
    for rank, hit in enumerate(data["results"], start=1):
        lines = f"{hit['start_line']}-{hit['end_line']}"
        yield f"{rank:>2}. [{hit['score']:.2f}] {hit['path']}:{lines}  {preview(hit['text'])}"


def _export(db: MemoryDB, args: argparse.Namespace) -> Result:
    count = db.docs.export_dir(args.dir)
    return {"dir": str(resolve_path(args.dir)), "written": count}, _export_text


def _export_text(data: dict[str, Any]) -> Iterator[str]:
    yield f"wrote {data['written']} documents under {data['dir']}"


def _import(db: MemoryDB, args: argparse.Namespace) -> Result:
    done = db.docs.import_dir(args.dir)
    return {"dir": str(resolve_path(args.dir)), **done.model_dump()}, _import_text


def _import_text(data: dict[str, Any]) -> Iterator[str]:
    yield (
        f"imported {data['dir']}: {data['created']} created, {data['updated']} updated, "
        f"{data['unchanged']} unchanged, {data['skipped']} skipped"
    )


_ACTIONS = {
    "list": _list,
    "show": _show,
    "write": _write,
    "edit": _edit,
    "history": _history,
    "restore": _restore,
    "search": _search,
    "export": _export,
    "import": _import,
}
