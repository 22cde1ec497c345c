"""`sqlmem maintain`, `vacuum`, `embed` and `pack`, and the embedder option
that `search` and these share."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..sqlite.db import open as open_db
from .grammar import EMBEDDERS, UsageError
from .opening import CommandError, existing_path, open_existing
from .output import Output, Progress

__all__ = ["load_embedder", "run_embed", "run_maintain", "run_pack", "run_vacuum"]


def load_embedder(name: str | None, **onnx_options: Any) -> Any:
    """The embedder `--embedder NAME` asks for (None without one). `onnx:DIR` builds an
    OnnxEmbedder of that folder with `onnx_options` (prefixes, pooling)."""
    if name is None:
        return None
    if name == "wordllama":
        from ..embedders.word_llama import WordLlamaEmbedder

        return WordLlamaEmbedder()  # SqlmemError (one line) when the extra is missing
    if name.startswith("onnx:"):
        from ..embedders.onnx import OnnxEmbedder

        return OnnxEmbedder(name[len("onnx:") :], **onnx_options)
    raise CommandError(f"unknown embedder {name!r}; use one of {', '.join(EMBEDDERS)}")


def run_maintain(args: argparse.Namespace, out: Output) -> int:
    with open_db(existing_path(args.path)) as db:
        data = {"path": str(db.path), **db.maintain()}
    out.result(
        data,
        lambda d: [
            f"expired {d['expired_facts']} facts; merged {len(d['optimized'])} search "
            f"indexes; checkpointed {d['checkpointed']} WAL frames"
        ],
    )
    return 0


def run_vacuum(args: argparse.Namespace, out: Output) -> int:
    path = existing_path(args.path)
    before = path.stat().st_size
    with open_db(path) as db:
        db.vacuum()
    data = {"path": str(path), "bytes_before": before, "bytes_after": path.stat().st_size}
    out.result(data, lambda d: [f"vacuumed: {d['bytes_before']:,} -> {d['bytes_after']:,} bytes"])
    return 0


def run_embed(args: argparse.Namespace, out: Output) -> int:
    """Vectors for the facts, then the messages, without one (embed_pending), with
    progress on a terminal."""
    embedder = load_embedder(args.embedder)
    shown = bool(args.progress) or sys.stderr.isatty()
    with open_db(existing_path(args.path), embedder=embedder) as db:
        with Progress("embedded", shown, "facts") as progress:
            added = db.facts.embed_pending(
                batch_size=args.batch_size, progress=lambda done, total: progress(done)
            )
        with Progress("embedded", shown, "messages") as progress:
            messages = db.history.embed_pending(
                batch_size=args.batch_size, progress=lambda done, total: progress(done)
            )
        stats = db.stats()
    data = {
        "path": str(db.path),
        "model": embedder.model,
        "embedded": added,
        "left": stats["facts_without_vectors"],
        "messages_embedded": messages,
        "messages_left": stats["messages_without_vectors"],
    }
    out.result(data, _embed_text)
    return 0


def _embed_text(data: dict[str, Any]) -> list[str]:
    return [
        f"embedded {data['embedded']} facts with {data['model']}; {data['left']} without",
        f"embedded {data['messages_embedded']} messages; {data['messages_left']} without",
    ]


def run_pack(args: argparse.Namespace, out: Output) -> int:
    """The memory pack for a query, with its diagnostics; read-only."""
    from ..context.pack import build_memory_pack
    from ..context.pack_config import PackConfig

    if args.max_budget < args.budget:
        raise UsageError(
            f"--max-budget ({args.max_budget}) must be at least --budget ({args.budget})",
            "sqlmem pack",
        )
    config = PackConfig(soft_budget_tokens=args.budget, max_budget_tokens=args.max_budget)
    with open_existing(args.path, load_embedder(args.embedder)) as db:
        pack = build_memory_pack(db.facts, args.query, config)
    data = {
        "query": args.query,
        "text": pack.text,
        "tokens": pack.tokens,
        "items": [
            {
                "id": item.fact.id,
                "layer": item.layer,
                "score": round(item.score, 6),
                "relevance": round(item.relevance, 6),
                "recency": round(item.recency, 6),
                "content": item.fact.content,
            }
            for item in pack.items
        ],
        "diagnostics": pack.diagnostics,
    }

    def text(d: dict[str, Any]) -> list[str]:
        lines = d["text"].splitlines() or ["(nothing selected)"]
        diag = d["diagnostics"]
        return [
            *lines,
            "",
            f"{d['tokens']} tokens; candidates {diag['candidates']}; selected "
            f"{diag['selected']}; skipped for budget {diag['skipped_for_budget']}",
        ]

    out.result(data, text)
    return 0
