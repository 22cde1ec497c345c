"""What every workload gets: sizes, the corpus, a temp folder, a logger."""

from __future__ import annotations

import gc
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .data import Corpus

__all__ = ["SIZES", "Context", "Sizes"]


@dataclass(frozen=True)
class Sizes:
    w1_messages: int
    w1_sessions: int
    w1_rounds: int
    history_messages: int  # W2 and W5 share one history database per side
    w2_session_messages: int
    w2_calls: int
    w5_queries: int
    w3_facts: int
    w3_queries: int
    w3b_queries: int
    w3c_single: int
    w3c_batches: int
    w3c_batch_size: int
    w4_agents: int
    w6_seconds: float
    w6_facts: int


SIZES = {
    "full": Sizes(
        w1_messages=20_000, w1_sessions=100, w1_rounds=10,
        history_messages=100_000, w2_session_messages=10_000, w2_calls=2_000,
        w5_queries=300,
        w3_facts=100_000, w3_queries=1_000, w3b_queries=500,
        w3c_single=5_000, w3c_batches=20, w3c_batch_size=1_000,
        w4_agents=1_000, w6_seconds=10.0, w6_facts=10_000,
    ),
    "quick": Sizes(
        w1_messages=2_000, w1_sessions=20, w1_rounds=4,
        history_messages=6_000, w2_session_messages=1_000, w2_calls=300,
        w5_queries=60,
        w3_facts=6_000, w3_queries=150, w3b_queries=60,
        w3c_single=500, w3c_batches=4, w3c_batch_size=1_000,
        w4_agents=60, w6_seconds=1.5, w6_facts=2_000,
    ),
    "smoke": Sizes(
        w1_messages=120, w1_sessions=4, w1_rounds=2,
        history_messages=400, w2_session_messages=100, w2_calls=20,
        w5_queries=10,
        w3_facts=300, w3_queries=20, w3b_queries=10,
        w3c_single=30, w3c_batches=2, w3c_batch_size=50,
        w4_agents=4, w6_seconds=0.3, w6_facts=200,
    ),
}  # fmt: skip


@dataclass
class Context:
    sizes: Sizes
    corpus: Corpus
    tmp: Path
    verbose: bool = True
    #: Shared built databases (e.g. the history database of W2 and W5), by name.
    cache: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self.cache = {}
        self._start = time.monotonic()

    def log(self, message: str) -> None:
        if self.verbose:
            print(f"[{time.monotonic() - self._start:7.1f}s] {message}", file=sys.stderr)

    def folder(self, name: str) -> Path:
        path = self.tmp / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def settle(self) -> None:
        """Collect garbage and put dirty pages on disk before timing starts: the kernel's
        writeback of a database just built (hundreds of MB) would otherwise share the 2
        cores with the timed calls. The runner calls it before each workload, and the
        builders of the shared databases after building them."""
        gc.collect()
        os.sync()

    def warm(self, count: int, seed: int, calls: Sequence[Callable[[str], object]]) -> None:
        """Run `count` OTHER queries (not the timed ones) through every call: the steady
        state of a long-running store, with its vocabulary scanned and its page cache
        warm. Both sides run them, so both page caches are equally warm."""
        for q, _ in self.corpus.queries(count, seed=seed):
            for call in calls:
                call(q)

    def sizes_dict(self) -> dict[str, Any]:
        return asdict(self.sizes)
