"""`sqlmem ui TARGET`: the web inspector (extra `ui`) over a file, ":memory:" or a
PostgreSQL URL. Looking must not change: a file is opened read-only at its current
schema unless `--write` is given, and a missing file is never created."""

from __future__ import annotations

import argparse

from ..protocols import Database
from .memory_commands import load_embedder
from .opening import CommandError, existing_path, open_existing
from .output import Output

__all__ = ["run_ui"]


def run_ui(args: argparse.Namespace, out: Output) -> int:
    try:
        from ..ui.serve import serve  # Starlette and uvicorn load only for this command
    except ImportError:
        from ..ui import MISSING_EXTRA

        raise CommandError(MISSING_EXTRA) from None
    target: str = args.target
    is_url = target.startswith(("postgresql://", "postgres://"))
    if is_url and not args.agent_id:
        raise CommandError("a PostgreSQL URL needs --agent-id (whose memory to show)")
    if not is_url and target != ":memory:":
        existing_path(target)  # a typo must not leave a new file behind

    def open_db() -> Database:
        from .. import open as sqlmem_open

        embedder = load_embedder(args.embedder)
        if is_url:
            remote: Database = sqlmem_open(target, embedder=embedder, agent_id=args.agent_id)
            return remote
        if target == ":memory:" or args.write:
            opened: Database = sqlmem_open(target, embedder=embedder)
            return opened
        return open_existing(target, embedder)

    title = target.split("@")[-1] if is_url else target  # never print a URL's password
    return serve(open_db, host=args.host, port=args.port, write=args.write, title=title)
