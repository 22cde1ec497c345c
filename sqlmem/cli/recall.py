"""`sqlmem recall PATH`: evidence recall R@5/10/25 and search p50 per mode on a
conversation benchmark file in LoCoMo's JSON shape (`sqlmem.evaluation`), so that users
measure search on their own conversations before choosing a model or a mode."""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .grammar import embedder_option

if TYPE_CHECKING:
    from .output import Output

__all__ = ["add_recall", "recall_data", "run_recall"]


def add_recall(commands: Any, command: Any) -> None:
    """The grammar; `command` is parser.py's helper."""
    recall = command(
        commands,
        "recall",
        "measure search: evidence recall and latency per mode on a conversation file",
        "sqlmem recall locomo10.json --conversations 0-4",
        "sqlmem recall chats.json --embedder wordllama",
        "sqlmem recall chats.json --embedder onnx:./e5-small "
        "--query-prefix 'query: ' --document-prefix 'passage: '",
    )
    recall.add_argument("path", metavar="PATH", help="a JSON file in LoCoMo's shape")
    embedder_option(recall)
    recall.add_argument("--query-prefix", default="", help="onnx: text before each query")
    recall.add_argument("--document-prefix", default="", help="onnx: text before each turn")
    recall.add_argument("--pooling", choices=("mean", "cls"), default="mean", help="onnx pooling")
    recall.add_argument(
        "--conversations", metavar="SEL", default=None, help="which ones, 0-based: 0-4 or 0,2"
    )
    recall.add_argument(
        "--facts", action="store_true", help="also one fact per turn, searched as facts"
    )


def run_recall(args: argparse.Namespace, out: Output) -> int:
    from .opening import existing_path  # not at import: `sqlmem --help` loads no pydantic

    data = recall_data(
        existing_path(args.path),
        embedder_name=args.embedder,
        onnx_options={
            "query_prefix": args.query_prefix,
            "document_prefix": args.document_prefix,
            "pooling": args.pooling,
        },
        conversations=args.conversations,
        facts=args.facts,
        progress=(lambda line: print(line, file=sys.stderr)) if sys.stderr.isatty() else None,
    )
    out.result(data, render_table)
    return 0


def recall_data(
    path: Path,
    *,
    embedder_name: str | None,
    onnx_options: dict[str, Any] | None = None,
    conversations: str | None = None,
    facts: bool = False,
    progress: Any = None,
) -> dict[str, Any]:
    """The measurement as one JSON-ready document (the command and the benchmark module)."""
    from ..evaluation.conversations import load_conversations, pick
    from ..evaluation.recall import measure
    from .memory_commands import load_embedder

    chosen = pick(load_conversations(path), conversations)
    embedder = (
        load_embedder(embedder_name, **(onnx_options or {}))
        if embedder_name and embedder_name.startswith("onnx:")
        else load_embedder(embedder_name)
    )
    modes = ("any", "vector", "hybrid") if embedder is not None else ("any",)
    with tempfile.TemporaryDirectory(prefix="sqlmem-recall-") as folder:
        rows = measure(
            chosen, Path(folder), modes=modes, embedder=embedder, facts=facts, progress=progress
        )
    return {
        "file": str(path),
        "conversations": [c.name for c in chosen],
        "questions": sum(len(c.questions) for c in chosen),
        "turns": sum(len(s.turns) for c in chosen for s in c.sessions),
        "embedder": getattr(embedder, "model", None),
        "python": platform.python_version(),
        "rows": [row.as_dict() for row in rows],
    }


def render_table(data: dict[str, Any]) -> list[str]:
    lines = [
        f"{data['questions']} questions over {data['turns']} turns in "
        f"{len(data['conversations'])} conversation(s); embedder: {data['embedder'] or 'none'}",
        "",
        f"{'search':<8} {'mode':<7} {'R@5':>6} {'R@10':>6} {'R@25':>6} {'p50 ms':>8}"
        f" {'cpu p50 ms':>11}",
    ]
    for row in data["rows"]:
        lines.append(
            f"{row['kind']:<8} {row['mode']:<7} {row['recall@5']:>6.1f} {row['recall@10']:>6.1f}"
            f" {row['recall@25']:>6.1f} {row['p50_ms']:>8.2f} {row['cpu_p50_ms']:>11.2f}"
        )
    return lines
