"""The inspection commands: info, check, migrate, search and history.

Each command gathers a plain dict (what `--json` prints) and says how to render it as
text; `Output` does the printing. Read-only commands open files through `open_existing`,
so they never create a file or upgrade a schema.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

from ..sqlite.core.migrations import latest_version
from ..sqlite.db import MemoryDB, resolve_path
from ..sqlite.db import open as open_db
from .grammar import UsageError
from .memory_commands import load_embedder
from .opening import CommandError, existing_path, open_existing, schema_version
from .output import Output, fact_json, human_bytes, message_json, message_line, preview

__all__ = ["run_check", "run_history", "run_info", "run_migrate", "run_search"]


# -- info -----------------------------------------------------------------------------------


def run_info(args: argparse.Namespace, out: Output) -> int:
    path = existing_path(args.path)
    version, latest = schema_version(path), latest_version()
    if 0 < version < latest:  # describe it without upgrading it
        data: dict[str, Any] = {
            "path": str(path),
            "schema_version": version,
            "latest_version": latest,
            "needs_migration": True,
        }
    else:
        with open_existing(args.path) as db:
            data = db.stats()
        data["latest_version"] = latest
        data["needs_migration"] = False
    out.result(data, _info_text)
    return 0


def _info_text(data: dict[str, Any]) -> Iterator[str]:
    yield f"path            {data['path']}"
    yield f"schema version  {data['schema_version']} (latest {data['latest_version']})"
    if data["needs_migration"]:
        yield f"                run 'sqlmem migrate {data['path']}' to upgrade it"
        return
    yield f"sessions        {data['sessions']}"
    yield (
        f"messages        {data['messages_active']} active, {data['messages_archived']} archived"
    )
    yield f"facts           {data['facts']}"
    yield f"documents       {data['documents']}"
    yield f"kv entries      {data['kv_entries']}"
    yield f"checkpoints     {data['checkpoints']} ({data['checkpoint_writes']} pending writes)"
    yield (
        f"file size       {human_bytes(data['file_bytes'])} (WAL {human_bytes(data['wal_bytes'])})"
    )
    yield (
        f"pages           {data['page_count']} x {data['page_size']} B, {data['free_pages']} free"
    )


# -- check ----------------------------------------------------------------------------------


def run_check(args: argparse.Namespace, out: Output) -> int:
    with open_existing(args.path) as db:
        report = db.check()  # no write lock: see MemoryDB._fts_problems
    data = {"path": report.path, "ok": report.ok, "problems": report.problems}
    out.result(data, _check_text)
    return 0 if report.ok else 1


def _check_text(data: dict[str, Any]) -> Iterator[str]:
    if data["ok"]:
        yield f"ok: {data['path']} (integrity and full-text indexes)"
        return
    yield f"DAMAGED: {data['path']}"
    for problem in data["problems"]:
        yield f"  {preview(problem, 200)}"


# -- migrate --------------------------------------------------------------------------------


def run_migrate(args: argparse.Namespace, out: Output) -> int:
    path = resolve_path(args.path)
    if path.is_dir():
        raise CommandError(f"{path}: is a directory, not a database file")
    created = not path.exists()
    before = 0 if created else schema_version(path)
    with open_db(path) as db:
        after = db.stats()["schema_version"]
    data = {
        "path": str(path),
        "created": created,
        "schema_version_before": before,
        "schema_version": after,
        "applied": after - before,
    }
    out.result(data, _migrate_text)
    return 0


def _migrate_text(data: dict[str, Any]) -> Iterator[str]:
    verb = "created" if data["created"] else "migrated"
    if data["applied"]:
        plural = "" if data["applied"] == 1 else "s"
        yield (
            f"{verb} {data['path']}: schema version {data['schema_version_before']} -> "
            f"{data['schema_version']} ({data['applied']} migration{plural} applied)"
        )
    else:
        yield f"{data['path']}: already at the latest schema version {data['schema_version']}"


# -- search ---------------------------------------------------------------------------------


# Messages appended with history_search off that no open with search on has indexed yet;
# only the flagged sessions' messages are scanned.
_UNINDEXED = """
SELECT count(*) FROM messages
WHERE session IN (SELECT pk FROM sessions WHERE unindexed AND (?1 IS NULL OR session_id = ?1))
  AND NOT searchable
"""


def run_search(args: argparse.Namespace, out: Output) -> int:
    if args.history and args.mode in ("all", "raw"):
        raise _usage(
            f"--mode applies to facts only as {args.mode}; with --history: any, vector, hybrid",
            "search",
        )
    if args.session is not None and not args.history:
        raise _usage("--session applies to --history only", "search")
    if args.history and args.as_of is not None:
        raise _usage("--as-of applies to fact search only, not with --history", "search")
    if (args.mode in ("vector", "hybrid")) != (args.embedder is not None):
        raise _usage("--mode vector and hybrid go with --embedder (and only they)", "search")
    note = None
    with open_existing(args.path, load_embedder(args.embedder)) as db:
        if args.history:
            found = db.history.search(
                args.query, session_id=args.session, top_k=args.top_k, mode=args.mode or "any"
            )
            results = [message_json(m) for m in found]
            note = _unindexed_note(db, args.session, args.path)
        else:
            facts = db.facts.search(
                args.query, args.top_k, mode=args.mode or "any", as_of=args.as_of
            )
            results = [fact_json(f) for f in facts]
    data: dict[str, Any] = {
        "query": args.query,
        "kind": "messages" if args.history else "facts",
        "results": results,
    }
    if note is not None:
        data["note"] = note
    out.result(data, _search_text)
    return 0


def _unindexed_note(db: MemoryDB, session: str | None, path: str) -> str | None:
    """Say that search cannot see messages stored with history search off.

    Opening the file with search on indexes them (the open hook), but that is a write,
    which a read-only command never does: the user is told instead.
    """
    with db.engine.read() as conn:
        rows: list[Any] = conn.execute(_UNINDEXED, (session,)).fetchall()
    count = int(rows[0][0])
    if not count:
        return None
    which = (
        "1 message stored with history search off is"
        if count == 1
        else (f"{count} messages stored with history search off are")
    )
    return (
        f"{which} not indexed, so search cannot find them; 'sqlmem migrate {path}' "
        "(which opens the file for writing) indexes them"
    )


def _usage(message: str, command: str) -> UsageError:
    return UsageError(message, f"sqlmem {command}")


def _search_text(data: dict[str, Any]) -> Iterator[str]:
    results = data["results"]
    if not results:
        yield f"no {data['kind']} match {data['query']!r}"
    if "note" in data:
        yield f"note: {data['note']}"
    for rank, item in enumerate(results, start=1):
        score = f"{item['score']:.2f}"
        if data["kind"] == "facts":
            extra = [item["id"]]
            if item["category"]:
                extra.append(item["category"])
            if item["tags"]:
                extra.append("#" + " #".join(item["tags"]))
            yield f"{rank:>2}. [{score}] {preview(item['content'])}  ({', '.join(extra)})"
        else:
            yield f"{rank:>2}. [{score}] {item['session_id']} {message_line(item)}"


# -- history --------------------------------------------------------------------------------


def run_history(args: argparse.Namespace, out: Output) -> int:
    with open_existing(args.path) as db:
        active = db.history.count(args.session)
        summary = db.history.get_summary(args.session)
        if args.all:
            messages = db.history.get_all(args.session, include_archived=True)
            archived_count = len(messages) - active
        else:
            messages = db.history.get_recent(args.session, args.n)
            archived_count = 0
    data = {
        "session_id": args.session,
        "summary": summary,
        "active": active,
        "messages": [message_json(m, archived=i < archived_count) for i, m in enumerate(messages)],
    }
    out.result(data, _history_text)
    return 0


def _history_text(data: dict[str, Any]) -> Iterator[str]:
    messages = data["messages"]
    if not messages and not data["summary"]:
        yield f"session {data['session_id']!r}: no messages"
        return
    yield f"session {data['session_id']!r}: {data['active']} active messages"
    if data["summary"]:
        yield f"summary: {preview(data['summary'], 200)}"
    for message in messages:
        yield message_line(message)
