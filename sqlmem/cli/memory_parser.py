"""The grammar of the commands that care for a database and read its memory: maintain,
vacuum, embed, pack (run by `memory_commands`)."""

from __future__ import annotations

from .grammar import Commands, at_least, command, embedder_option, embedder_spec, existing, progress

__all__ = ["add_memory_commands"]


def add_memory_commands(commands: Commands) -> None:
    """Add maintain, vacuum, embed and pack."""
    maintain = command(
        commands,
        "maintain",
        "periodic care: expire facts, merge the search indexes, checkpoint (no rebuild)",
        "sqlmem maintain memory.db",
    )
    existing(maintain)
    vacuum = command(
        commands,
        "vacuum",
        "make deletions physical: rebuild the file so no byte of deleted data remains",
        "sqlmem vacuum memory.db",
    )
    existing(vacuum)
    embed = command(
        commands,
        "embed",
        "add vectors to the facts that have none (for --mode vector and hybrid)",
        "sqlmem embed memory.db --embedder wordllama",
    )
    existing(embed)
    embed.add_argument(
        "--embedder",
        type=embedder_spec,
        default="wordllama",
        metavar="wordllama|onnx:DIR",
        help="the model (default wordllama)",
    )
    embed.add_argument(
        "--batch-size", type=at_least(1), default=64, metavar="N", help="texts per model call"
    )
    progress(embed)
    pack = command(
        commands,
        "pack",
        "print the memory pack for a query: layered items within a token budget",
        "sqlmem pack memory.db 'what does the user eat?'",
        "sqlmem pack memory.db '' --budget 500 --json",
    )
    existing(pack)
    pack.add_argument("query", metavar="QUERY", help="any text ('' for the newest items)")
    pack.add_argument("--budget", type=at_least(0), default=1800, help="soft token budget")
    pack.add_argument(
        "--max-budget", type=at_least(0), default=3500, help="hard token budget (>= --budget)"
    )
    embedder_option(pack)
