"""`Embedding` (a store's use of its embedder) lives in `sqlmem.rules.embedding`, beside
the embedder checks it is built on; this name is kept for the modules that import it from
here."""

from __future__ import annotations

from ..rules.embedding import Embedding

__all__ = ["Embedding"]
