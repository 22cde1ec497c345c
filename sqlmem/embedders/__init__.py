"""Embedders to pass as `embedder=`: sqlmem calls no model by itself.

- `HashEmbedder`: deterministic feature hashing of words, no model, no dependency beyond
  numpy. For tests and examples: it finds shared words, not meanings.
- `WordLlamaEmbedder` (extra `sqlmem[embed]`): a real small model whose weights ship in the
  `wordllama` wheel; runs offline, on the CPU, in milliseconds per batch.
- `OnnxEmbedder` (extra `sqlmem[onnx]`): any sentence-embedding ONNX export in a local
  folder (MiniLM, e5, bge ...), with query and document prefixes for asymmetric models.

Loaded on first use, so `import sqlmem.embedders` loads neither numpy models, wordllama nor
onnxruntime.
"""

from __future__ import annotations

import importlib

__all__ = ["HashEmbedder", "OnnxEmbedder", "WordLlamaEmbedder"]

_LAZY = {
    "HashEmbedder": ".hashing",
    "OnnxEmbedder": ".onnx",
    "WordLlamaEmbedder": ".word_llama",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
