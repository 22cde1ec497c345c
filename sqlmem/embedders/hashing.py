"""`HashEmbedder`: a deterministic stand-in for a model, for tests and examples.

Each word (a run of letters or digits, casefolded) is hashed to one of `dim` buckets with
a sign (feature hashing), so texts sharing words get similar vectors and the same text
always gets the same vector, in every process and on every machine (BLAKE2b, not
Python's salted `hash`). It knows no meanings: "vegetarian" and "eat" stay unrelated.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ..errors import InvalidArgumentError

__all__ = ["HashEmbedder"]

_WORD = re.compile(r"[^\W_]+")


class HashEmbedder:
    """Feature hashing of words into `dim` float32 dimensions (unnormalised)."""

    def __init__(self, dim: int = 64) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= 65536:
            raise InvalidArgumentError(f"dim must be an int in [1, 65536], got {dim!r}")
        self.dim = dim
        self.model = f"sqlmem-hash-{dim}"

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.casefold()):
                digest = hashlib.blake2b(
                    word.encode("utf-8", "surrogatepass"), digest_size=8
                ).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % self.dim] += 1.0 if value >> 63 else -1.0
        return out

    def __repr__(self) -> str:
        return f"HashEmbedder(dim={self.dim})"
