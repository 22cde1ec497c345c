"""The commands of facts that change: `sqlmem fact-history` (a slot's versions) and
`sqlmem forget` (a session, message or document and the facts derived only from it), and
the `--as-of` time of `sqlmem search`."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the stores load when a command runs: `sqlmem --help` stays light
    from .output import Output

__all__ = ["add_facts_commands", "parse_as_of", "run_fact_history", "run_forget"]


def parse_as_of(text: str) -> datetime:
    """An ISO 8601 date or time (UTC when it names no zone), for argparse."""
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an ISO 8601 date or time: {text!r} (e.g. 2025-06-01 or 2025-06-01T12:00Z)"
        ) from None
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


def add_facts_commands(commands: Any, command: Any, existing: Any) -> None:
    """Register the commands; `command` and `existing` are parser.py's helpers."""
    history = command(
        commands,
        "fact-history",
        "show every version of a fact: a key's chain, or the chain of a fact id",
        "sqlmem fact-history memory.db --key user.city",
        "sqlmem fact-history memory.db --id 3f2a...",
    )
    existing(history)
    which = history.add_mutually_exclusive_group(required=True)
    which.add_argument("--key", metavar="KEY", help="a slot such as user.city")
    which.add_argument("--id", metavar="ID", help="a fact id (its chain)")
    forget = command(
        commands,
        "forget",
        "remove a session, message or document and every fact derived only from it",
        "sqlmem forget memory.db telegram:42",
        "sqlmem forget memory.db 'msg:telegram:42#17'",
        "sqlmem forget memory.db MEMORY.md",
    )
    existing(forget)
    forget.add_argument(
        "source",
        metavar="SOURCE",
        help="a session id, msg:{session}#{seq}, doc:{path} or a path ending in .md",
    )


def run_fact_history(args: argparse.Namespace, out: Output) -> int:
    from .opening import open_existing
    from .output import fact_json

    with open_existing(args.path) as db:
        chain = db.facts.history(key=args.key, id=args.id)
    data = {"key": args.key, "id": args.id, "history": [fact_json(f) for f in chain]}
    out.result(data, _history_text)
    return 0


def _history_text(data: dict[str, Any]) -> Iterator[str]:
    from .output import preview

    if not data["history"]:
        yield "no such fact" if data["id"] else f"no facts with key {data['key']!r}"
    for fact in data["history"]:
        start = fact.get("valid_from") or fact["created_at"]
        end = fact.get("valid_to")
        span = f"{_day(start)} .. {_day(end) if end else 'now'}"
        yield f"{span}  {preview(fact['content'])}  ({fact['id']})"


def _day(value: Any) -> str:
    return value.isoformat(timespec="seconds") if isinstance(value, datetime) else str(value)


def run_forget(args: argparse.Namespace, out: Output) -> int:
    from ..sqlite.db import open as open_db
    from .opening import existing_path

    with open_db(existing_path(args.path)) as db:
        report = db.forget(args.source)
    data = {"source": args.source, **report._asdict()}
    out.result(
        data,
        lambda d: [
            f"forgot {d['source']}: {d['messages']} messages, {d['facts']} facts, "
            f"{d['documents']} documents ({d['revisions']} earlier revisions); "
            "'sqlmem vacuum' removes their bytes from the file"
        ],
    )
    return 0
