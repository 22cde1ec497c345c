"""Evidence recall of conversation search on a file in LoCoMo's JSON shape:
`python -m benchmarks.recall PATH [--embedder wordllama|onnx:DIR] [--conversations 0-4]
[--facts] [--json]`, the same measurement as `sqlmem recall` (`sqlmem.evaluation`).

PATH `locomo` fetches the public LoCoMo file (Maharana et al. 2024, 10 long conversations)
into a cache folder the first time, and says so and stops, without failing, when the
machine is offline. The data is never committed to this repository.

Tuning rule of this project: tune and report on conversations 0-4 only (the dev half);
conversations 5-9 are the held-out half, measured independently.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

LOCOMO_URL = "https://raw.githubusercontent.com/snap-research/locomo/main/data/locomo10.json"


def cache_folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sqlmem-benchmarks"


def fetch_locomo(folder: Path | None = None, *, timeout: float = 30.0) -> Path | None:
    """The cached LoCoMo file, downloaded first if need be; None when it cannot be had."""
    target = (folder or cache_folder()) / "locomo10.json"
    if target.is_file():
        return target
    try:
        with urllib.request.urlopen(LOCOMO_URL, timeout=timeout) as response:
            data = response.read()
        json.loads(data)  # a proxy's error page is not the dataset
    except (OSError, urllib.error.URLError, ValueError) as exc:
        print(f"skipped: LoCoMo could not be fetched ({exc}); pass a local PATH", file=sys.stderr)
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    partial.write_bytes(data)
    partial.replace(target)
    return target


def main(argv: list[str] | None = None) -> int:
    from sqlmem.cli.grammar import embedder_spec
    from sqlmem.cli.output import Output
    from sqlmem.cli.recall import recall_data, render_table

    parser = argparse.ArgumentParser(prog="python -m benchmarks.recall", description=__doc__)
    parser.add_argument("path", metavar="PATH", help="a LoCoMo-shaped JSON file, or 'locomo'")
    parser.add_argument("--embedder", type=embedder_spec, default=None)
    parser.add_argument("--query-prefix", default="")
    parser.add_argument("--document-prefix", default="")
    parser.add_argument("--pooling", choices=("mean", "cls"), default="mean")
    parser.add_argument("--conversations", default=None, metavar="SEL")
    parser.add_argument("--facts", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    path: Path | None = Path(args.path)
    if args.path == "locomo":
        path = fetch_locomo()
        if path is None:
            return 0
    assert path is not None
    data = recall_data(
        path,
        embedder_name=args.embedder,
        onnx_options={
            "query_prefix": args.query_prefix,
            "document_prefix": args.document_prefix,
            "pooling": args.pooling,
        },
        conversations=args.conversations,
        facts=args.facts,
        progress=lambda line: print(line, file=sys.stderr),
    )
    data["command"] = "python -m benchmarks.recall " + " ".join(argv or sys.argv[1:])
    Output(args.json).result(data, render_table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
