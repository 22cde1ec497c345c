"""The grammar of `sqlmem docs PATH ACTION ...`, one small function per group of actions."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from .grammar import Commands, Parser, command, common, epilog, positive

__all__ = ["add_docs"]

#: Adds one action: its name, help text and examples; returns its parser for the arguments.
_Action = Callable[..., argparse.ArgumentParser]


def add_docs(commands: Commands) -> None:
    docs = command(
        commands,
        "docs",
        "list, show, edit, search and sync the workspace documents (MEMORY.md, notes ...)",
        "sqlmem docs memory.db list",
        "sqlmem docs memory.db show MEMORY.md",
        "echo '- likes tea' | sqlmem docs memory.db write PROFILE.md",
        "sqlmem docs memory.db export ./workspace",
    )
    docs.add_argument("path", metavar="PATH", help="a memory.db")
    actions = docs.add_subparsers(dest="docs_command", metavar="ACTION", parser_class=Parser)
    actions.required = True

    def action(name: str, help_text: str, *examples: str) -> argparse.ArgumentParser:
        parser = actions.add_parser(
            name,
            help=help_text,
            description=help_text[0].upper() + help_text[1:] + ".",
            epilog=epilog(*examples),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        common(parser)
        return parser

    _add_reading(action)
    _add_changing(action)
    _add_revisions(action)
    _add_search(action)
    _add_folder_sync(action)


def _add_reading(action: _Action) -> None:
    """`list` and `show`."""
    listing = action(
        "list",
        "list the documents by (sort_order, path), with their flags and revisions",
        "sqlmem docs memory.db list",
        "sqlmem docs memory.db list --prefix memory/ --json",
    )
    listing.add_argument("--prefix", default="", metavar="P", help="only paths starting with P")

    show = action(
        "show",
        "print a document's content (or an earlier revision's)",
        "sqlmem docs memory.db show MEMORY.md",
        "sqlmem docs memory.db show MEMORY.md --revision 3 > MEMORY.old.md",
    )
    show.add_argument("file", metavar="FILE", help="the document's path, e.g. MEMORY.md")
    show.add_argument("--revision", type=positive, default=None, metavar="N")


def _add_changing(action: _Action) -> None:
    """`write` and `edit`."""
    write = action(
        "write",
        "replace a document's content (from a file, or standard input)",
        "sqlmem docs memory.db write MEMORY.md --from ./MEMORY.md",
        "echo '# Profile' | sqlmem docs memory.db write PROFILE.md",
    )
    write.add_argument("file", metavar="FILE", help="the document's path, e.g. MEMORY.md")
    write.add_argument(
        "--from",
        dest="source",
        metavar="LOCALFILE",
        default=None,
        help="read the content from LOCALFILE (default: standard input)",
    )

    edit = action(
        "edit",
        "replace exact text in a document (OLD must occur once, unless --all)",
        "sqlmem docs memory.db edit MEMORY.md 'likes coffee' 'likes tea'",
        "sqlmem docs memory.db edit MEMORY.md 2025 2026 --all",
    )
    edit.add_argument("file", metavar="FILE")
    edit.add_argument("old", metavar="OLD", help="the exact text to replace")
    edit.add_argument("new", metavar="NEW", help="the text to put instead")
    edit.add_argument("--all", action="store_true", help="replace every occurrence")


def _add_revisions(action: _Action) -> None:
    """`history` and `restore`."""
    history = action(
        "history",
        "list a document's kept revisions, newest first",
        "sqlmem docs memory.db history MEMORY.md",
    )
    history.add_argument("file", metavar="FILE")

    restore = action(
        "restore",
        "write an earlier revision's content back as a new revision",
        "sqlmem docs memory.db restore MEMORY.md 3",
    )
    restore.add_argument("file", metavar="FILE")
    restore.add_argument("revision", type=positive, metavar="N", help="the revision to restore")


def _add_search(action: _Action) -> None:
    search = action(
        "search",
        "search the documents' blocks (runs of non-blank lines) by relevance",
        "sqlmem docs memory.db search 'dog name'",
        "sqlmem docs memory.db search 跑步 --prefix memory/ -k 3",
    )
    search.add_argument("query", metavar="QUERY", help="any text")
    search.add_argument("-k", "--top-k", type=positive, default=10, metavar="N")
    search.add_argument("--prefix", default="", metavar="P", help="only paths starting with P")


def _add_folder_sync(action: _Action) -> None:
    """`export` and `import`: the documents as files of a folder, and back."""
    export = action(
        "export",
        "write every document as a file under DIR (0700 folders, 0600 files)",
        "sqlmem docs memory.db export ./workspace",
    )
    export.add_argument("dir", metavar="DIR")

    load = action(
        "import",
        "read the .md files under DIR; each changed one becomes a new revision",
        "sqlmem docs memory.db import ./workspace",
    )
    load.add_argument("dir", metavar="DIR")
