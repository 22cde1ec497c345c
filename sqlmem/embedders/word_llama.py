"""`WordLlamaEmbedder`: the `wordllama` model (extra `sqlmem[embed]`), loaded offline.

Why this model: its weights (a few MB of token embeddings, 256 dims) ship inside its wheel,
so tests, the demo and air-gapped agents get real semantic vectors with no download and no
GPU, at about 10 µs per short text.

It must never touch the network. `WordLlama.load` looks for its tokenizer file under
`<package>/tokenizer/` while the wheel ships it under `<package>/tokenizers/` (wordllama
0.4), and would then download it; pointing `cache_dir` at the package folder makes both
files resolve locally, and `disable_download=True` turns any miss into an error instead
of a request.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import InvalidArgumentError, SqlmemError

__all__ = ["WordLlamaEmbedder"]


class WordLlamaEmbedder:
    """A `wordllama` model as an `Embedder`; thread-safe, loaded once per instance."""

    def __init__(self, config: str = "l2_supercat", dim: int = 256) -> None:
        if not isinstance(config, str) or not config:
            raise InvalidArgumentError("config must be a wordllama configuration name")
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise InvalidArgumentError(f"dim must be a positive int, got {dim!r}")
        self.model = f"wordllama/{config}-{dim}"
        self._model = _load(config, dim)
        self._lock = threading.Lock()  # the tokenizer is not documented as thread-safe

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        with self._lock:
            vectors = self._model.embed(list(texts), norm=True)
        return np.asarray(vectors, dtype=np.float32)

    def __repr__(self) -> str:
        return f"WordLlamaEmbedder({self.model!r})"


def _load(config: str, dim: int) -> Any:
    try:
        import wordllama  # type: ignore[import-untyped]
    except ImportError as exc:
        raise SqlmemError(
            "WordLlamaEmbedder needs the 'embed' extra: pip install 'sqlmem[embed]'"
        ) from exc
    package = Path(wordllama.__file__).parent
    try:
        return wordllama.WordLlama.load(
            config=config, dim=dim, cache_dir=package, disable_download=True
        )
    except (OSError, ValueError, KeyError) as exc:
        raise SqlmemError(
            f"could not load the wordllama model {config!r} ({dim} dims): {exc}"
        ) from exc
