"""What an embedder must look like (SPEC 17), checked before anything is opened.

Apart from the vector code on purpose: opening a store without an embedder must not load
numpy (tests/unit/test_import_time.py).
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidArgumentError

__all__ = ["check_embedder"]


def check_embedder(embedder: Any) -> Any:
    """`embedder` if it looks like an `Embedder` (a non-empty str `model` and an `embed`
    method), else InvalidArgumentError; None passes (no vectors)."""
    if embedder is None:
        return None
    model = getattr(embedder, "model", None)
    if not isinstance(model, str) or not model or not callable(getattr(embedder, "embed", None)):
        raise InvalidArgumentError(
            "embedder must have a non-empty str `model` and an `embed(texts)` method "
            "(see sqlmem.Embedder)"
        )
    return embedder
