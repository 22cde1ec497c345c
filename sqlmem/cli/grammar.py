"""The pieces every command's grammar is built from: the parser class that turns a bad
argument into `UsageError`, the one way a command is added (help text, description and
examples alike), and the argument types and options several commands share.

argparse prints a usage block and exits on a bad argument; a script calling `sqlmem` wants
one line and a status instead, so `Parser.error` raises `UsageError`, which `main` turns
into `sqlmem: error: ...` and exit status 2.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import NoReturn, TypeAlias

__all__ = [
    "EMBEDDERS",
    "Commands",
    "Parser",
    "UsageError",
    "at_least",
    "command",
    "common",
    "embedder_option",
    "embedder_spec",
    "epilog",
    "existing",
    "positive",
    "progress",
]


class UsageError(Exception):
    """The command line itself is wrong (exit status 2)."""

    def __init__(self, message: str, prog: str) -> None:
        super().__init__(message)
        self.prog = prog


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.prog)


# A string: argparse's subparsers action is generic for type checkers only.
Commands: TypeAlias = "argparse._SubParsersAction[Parser]"

#: Embedders the command line can build by name (`--embedder`); `onnx:DIR` names a folder.
EMBEDDERS = ("wordllama", "onnx:DIR")


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


positive = at_least(1)


def epilog(*examples: str) -> str:
    return "examples:\n" + "\n".join(f"  {e}" for e in examples)


def common(parser: argparse.ArgumentParser) -> None:
    """The options every command takes (`--json`)."""
    # SUPPRESS: a subparser's default would overwrite `sqlmem --json CMD` from the top.
    parser.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print the result as one JSON document (for scripts)",
    )


def command(
    commands: Commands, name: str, help_text: str, *examples: str
) -> argparse.ArgumentParser:
    """Add one command: its help line doubles as its description, and its examples end
    its `--help`."""
    parser = commands.add_parser(
        name,
        help=help_text,
        description=help_text[0].upper() + help_text[1:] + ".",
        epilog=epilog(*examples),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common(parser)
    return parser


def existing(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH", help="an existing memory.db")


def progress(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--progress",
        action="store_true",
        help="report progress on stderr (default: only on a terminal)",
    )


def embedder_spec(text: str) -> str:
    """`--embedder`'s value, checked as the command line is read (argparse `type=`)."""
    if text == "wordllama" or (text.startswith("onnx:") and len(text) > len("onnx:")):
        return text
    raise argparse.ArgumentTypeError(
        f"unknown embedder {text!r}; use one of {', '.join(EMBEDDERS)}"
    )


def embedder_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--embedder",
        type=embedder_spec,
        default=None,
        metavar="wordllama|onnx:DIR",
        help="embed with this model: wordllama (the 'embed' extra) or an ONNX export in a "
        "local folder (the 'onnx' extra)",
    )
