"""The grammar of the 0.2 maintenance and memory commands: maintain, vacuum, embed, pack."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

__all__ = ["EMBEDDERS", "add_memory_commands", "at_least", "embedder_option", "embedder_spec"]


#: Embedders the command line can build by name (`--embedder`); `onnx:DIR` names a folder.
EMBEDDERS = ("wordllama", "onnx:DIR")


def embedder_spec(text: str) -> str:
    """`--embedder`'s value, checked as the command line is read (argparse `type=`)."""
    if text == "wordllama" or (text.startswith("onnx:") and len(text) > len("onnx:")):
        return text
    raise argparse.ArgumentTypeError(
        f"unknown embedder {text!r}; use one of {', '.join(EMBEDDERS)}"
    )


def at_least(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number >= `minimum` (and <= `maximum`). A bad value is
    then a usage error (exit status 2) that names the flag, not a store's refusal naming
    its parameter."""

    def whole_number(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {minimum} or more, got {value}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum}, got {value}")
        return value

    return whole_number


def embedder_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--embedder",
        type=embedder_spec,
        default=None,
        metavar="wordllama|onnx:DIR",
        help="embed with this model: wordllama (the 'embed' extra) or an ONNX export in a "
        "local folder (the 'onnx' extra)",
    )


def add_memory_commands(commands: Any, command: Any, existing: Any, progress: Any) -> None:
    """Register the commands; `command`, `existing` and `progress` are parser.py's helpers."""
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
