"""The argument grammar of `sqlmem`: one subcommand per job, each with an example."""

from __future__ import annotations

import argparse

from .docs_parser import add_docs
from .facts_commands import add_facts_commands, parse_as_of
from .grammar import (
    Commands,
    Parser,
    UsageError,
    at_least,
    command,
    embedder_option,
    epilog,
    existing,
    positive,
    progress,
)
from .memory_parser import add_memory_commands
from .recall import add_recall

__all__ = ["UsageError", "build_parser"]

DESCRIPTION = """\
Look inside and maintain sqlmem memory databases (one agent's memory per file).
Start with 'sqlmem demo', which needs no network and takes a second."""


def build_parser() -> argparse.ArgumentParser:
    """The whole grammar: the top-level options, then one small function per command."""
    parser = Parser(
        prog="sqlmem",
        description=DESCRIPTION,
        epilog=epilog(
            "sqlmem demo",
            "sqlmem info sqlmem-demo/agents/demo-agent/memory.db",
            "sqlmem search memory.db \"what's my dog's name?\"",
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--json", action="store_true", default=False, help=argparse.SUPPRESS)
    parser.add_argument("--version", action="store_true", help="print the sqlmem version")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    # The order here is the order `sqlmem --help` lists the commands in.
    for add in (_demo, _info, _check, _migrate, _search, _history, _sessions, _export, _import):
        add(commands)
    add_docs(commands)
    add_memory_commands(commands)
    add_facts_commands(commands, command, existing)
    _mcp(commands)
    add_recall(commands, command)
    _ui(commands)
    return parser


def _demo(commands: Commands) -> None:
    demo = command(
        commands,
        "demo",
        "create a demo agent database: a conversation, facts, compaction and searches",
        "sqlmem demo",
        "sqlmem demo /tmp/sqlmem-demo --json",
    )
    demo.add_argument(
        "dir",
        nargs="?",
        default="sqlmem-demo",
        metavar="DIR",
        help="folder for the demo's data (default: ./sqlmem-demo); running again reuses it",
    )


def _info(commands: Commands) -> None:
    info = command(
        commands,
        "info",
        "show counts, sizes and the schema version of a database",
        "sqlmem info memory.db",
        "sqlmem info memory.db --json",
    )
    existing(info)


def _check(commands: Commands) -> None:
    check = command(
        commands,
        "check",
        "verify a database (SQLite integrity check and FTS index check); exit 1 if damaged",
        "sqlmem check memory.db",
    )
    existing(check)


def _migrate(commands: Commands) -> None:
    migrate = command(
        commands,
        "migrate",
        "create a database or bring it to the latest schema",
        "sqlmem migrate memory.db",
    )
    migrate.add_argument("path", metavar="PATH", help="a memory.db (created if missing)")


def _search(commands: Commands) -> None:
    search = command(
        commands,
        "search",
        "search facts (or, with --history, messages) by relevance",
        "sqlmem search memory.db \"what's my dog's name?\"",
        "sqlmem search memory.db 跑步 -k 3",
        "sqlmem search memory.db 'weather Lisbon' --history --session demo:lisbon",
        "sqlmem search memory.db 'NEAR(dog name, 3)' --mode raw",
        "sqlmem search memory.db 'what do I eat?' --mode hybrid --embedder wordllama",
        "sqlmem search memory.db 'where was I born?' --history --mode vector --embedder wordllama",
        "sqlmem search memory.db 'where does the user live?' --as-of 2024-06-01",
    )
    existing(search)
    search.add_argument("query", metavar="QUERY", help="any text (FTS5 syntax with --mode raw)")
    search.add_argument(
        "-k",
        "--top-k",
        type=positive,
        default=10,
        metavar="N",
        help="at most N results (default 10)",
    )
    search.add_argument(
        "--history",
        action="store_true",
        help="search conversation messages (archived included) instead of facts",
    )
    search.add_argument(
        "--mode",
        choices=("any", "all", "raw", "vector", "hybrid"),
        default=None,
        help="match any word (default), all words, raw FTS5 (all, raw: facts only), or by "
        "meaning (vector, hybrid: need --embedder; facts or, with --history, messages)",
    )
    embedder_option(search)
    search.add_argument(
        "--session", metavar="S", default=None, help="with --history: only this session"
    )
    search.add_argument(
        "--as-of",
        type=parse_as_of,
        default=None,
        metavar="TIME",
        help="facts only: those valid at this ISO 8601 date or time instead of now",
    )


def _history(commands: Commands) -> None:
    history = command(
        commands,
        "history",
        "show a session's messages and summary",
        "sqlmem history memory.db demo:lisbon",
        "sqlmem history memory.db demo:lisbon --all",
    )
    existing(history)
    history.add_argument("session", metavar="SESSION", help="the session id")
    how_many = history.add_mutually_exclusive_group()
    how_many.add_argument(
        "-n",
        type=positive,
        default=20,
        metavar="N",
        help="the last N active messages (default 20)",
    )
    how_many.add_argument(
        "--all", action="store_true", help="every message, archived ones included"
    )


def _sessions(commands: Commands) -> None:
    sessions = command(
        commands,
        "sessions",
        "list the sessions with their active and archived message counts and last activity",
        "sqlmem sessions memory.db",
        "sqlmem sessions memory.db --json",
    )
    existing(sessions)


def _export(commands: Commands) -> None:
    export = command(
        commands,
        "export",
        "write every message, summary and fact as JSON Lines",
        "sqlmem export memory.db -o backup.jsonl",
        "sqlmem export memory.db | head -3",
    )
    existing(export)
    export.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        default="-",
        help="write to FILE (default: standard output)",
    )
    progress(export)


def _import(commands: Commands) -> None:
    load = command(
        commands,
        "import",
        "add the records of an export to a database (idempotent: re-running adds nothing)",
        "sqlmem import restored.db backup.jsonl",
    )
    load.add_argument("path", metavar="PATH", help="a memory.db (created if missing)")
    load.add_argument("file", metavar="FILE", help="a file written by 'sqlmem export'")
    progress(load)


def _mcp(commands: Commands) -> None:
    mcp = command(
        commands,
        "mcp",
        "serve the memory tools over MCP on stdio (needs the 'mcp' extra)",
        "sqlmem mcp memory.db",
        "sqlmem mcp memory.db --read-only",
    )
    mcp.add_argument(
        "path", metavar="PATH", help="a memory.db (created if missing, unless read-only)"
    )
    mcp.add_argument(
        "--read-only",
        action="store_true",
        help="offer only the tools that read; the file must exist and is never written",
    )
    mcp.add_argument(
        "--busy-timeout-ms",
        type=at_least(0, 2**31 - 1),  # StoreConfig's range (a C int in SQLite)
        default=5000,
        metavar="MS",
        help="how long a write waits for another writer before answering busy (default 5000)",
    )


def _ui(commands: Commands) -> None:
    ui = command(
        commands,
        "ui",
        "a local web inspector of one agent's memory (needs the 'ui' extra)",
        "sqlmem ui memory.db",
        "sqlmem ui memory.db --port 9000 --write",
    )
    ui.add_argument(
        "target", metavar="TARGET", help='an existing memory.db, ":memory:" or a postgresql:// URL'
    )
    ui.add_argument("--port", type=int, default=8765, help="port to listen on (0: any free one)")
    ui.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine)"
    )
    ui.add_argument(
        "--write", action="store_true", help="allow restoring document revisions (CSRF-protected)"
    )
    ui.add_argument("--agent-id", default=None, help="whose memory, for a PostgreSQL URL")
    embedder_option(ui)
