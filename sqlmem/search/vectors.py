"""Vectors for semantic search: checking what an embedder returned, the stored
form, exact cosine ranking, and reciprocal rank fusion with BM25.

Written once for every backend, so the SQLite store, the in-memory twin and PostgreSQL
rank alike (the agreement tests compare them).

- An embedder is somebody else's code (a model, an HTTP API): its output is checked before
  anything is stored. A batch of the wrong type or shape is refused whole; a row with NaN,
  inf or no length (all zeros) is refused alone. Refused rows are stored without a vector,
  never as a corrupt one (`checked_rows`).
- Stored form: unit-length float32, little-endian, as a BLOB (`to_blob` / `from_blobs`).
  Normalising once at write time makes cosine a dot product at search time.
- Ranking is exact: `matrix @ query` over the candidates that passed the filters, then
  `argpartition` for the top k (no approximate index: vectors stay in the file, under its
  transactions, backups and forgetting).
- Hybrid: reciprocal rank fusion, `sum 1/(10 + rank)` over the two rankings (ranks from
  1), ties broken by BM25 rank. Rank fusion needs no score calibration: BM25 scores are
  unbounded and corpus-dependent, cosines are not, and adding them after min-max scaling
  lets one leg drown the other.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

__all__ = [
    "RRF_K",
    "EmbeddingProblem",
    "checked_rows",
    "content_key",
    "cosine_scores",
    "from_blobs",
    "hybrid_leg_size",
    "rank_by_cosine",
    "reciprocal_rank_fusion",
    "to_blob",
    "unit_query",
]

#: The "k" of reciprocal rank fusion, the one constant every backend's hybrid search uses.
#: 10, not the original paper's 60 (Cormack et al.): at 60 two middling placings outrank
#: one first place (2/90 > 1/61), so a fact both legs rank 30th beats the one the vectors
#: rank first. Measured over five embedders on a long-conversation benchmark and on our
#: synthetic one, 10 was no worse than 60 in 24 of 25 cells (+2.8 points of recall@10 on
#: average).
RRF_K = 10

Vector = npt.NDArray[np.float32]
_Id = TypeVar("_Id", bound=Hashable)


class EmbeddingProblem(Exception):
    """An embedder's output that cannot be stored (internal: callers log it and store the
    fact without a vector)."""


def checked_rows(output: Any, count: int) -> list[Vector | None]:
    """The embedder's output for `count` texts as unit-length float32 rows, None for a row
    that cannot be used (NaN, inf, all zeros). Raises EmbeddingProblem for output that is
    not a float32 matrix of `count` rows (an ndarray subclass is read as a plain array,
    a big-endian float32 one is converted: `to_blob` stores little-endian)."""
    output = _plain_array(output)
    if output.dtype.kind != "f" or output.dtype.itemsize != 4:  # either byte order
        raise EmbeddingProblem(f"expected float32 vectors, got {output.dtype}")
    if output.ndim != 2 or output.shape[0] != count or output.shape[1] == 0:
        raise EmbeddingProblem(
            f"expected an array of shape ({count}, dim), got {tuple(output.shape)}"
        )
    rows: list[Vector | None] = []
    wide = output.astype(np.float64)  # float32 squares overflow past ~1.8e19
    with np.errstate(all="ignore"):
        norms = np.linalg.norm(wide, axis=1)
    for row, norm in zip(wide, norms, strict=True):
        if not np.isfinite(norm) or norm == 0.0:
            rows.append(None)
        else:
            rows.append((row / norm).astype("<f4"))
    return rows


def _plain_array(output: Any) -> npt.NDArray[Any]:
    """The embedder's array as a plain ndarray. A subclass iterates and reduces in its
    own way (a `numpy.matrix` yields 1-row matrices, so each "row" kept the batch's
    layout and its stored length disagreed with its dimension); a masked array would hand
    over the values under its mask. Viewing the data as a plain array keeps the numbers
    and drops the subclass's behaviour; masked values are refused."""
    if not isinstance(output, np.ndarray):
        raise EmbeddingProblem(f"expected a numpy array, got {type(output).__name__}")
    if isinstance(output, np.ma.MaskedArray) and np.ma.getmaskarray(output).any():
        raise EmbeddingProblem("expected vectors, got a masked array with masked values")
    return np.asarray(output)


def unit_query(output: Any) -> Vector | None:
    """The query's vector at unit length, or None when the embedder gave none usable (a
    zero vector: no vector hits, not a division by zero)."""
    rows = checked_rows(output, 1)
    return rows[0]


def to_blob(vector: Vector) -> bytes:
    """The stored form: float32 little-endian."""
    return vector.astype("<f4", copy=False).tobytes()


def from_blobs(blobs: Sequence[bytes], dim: int) -> Vector:
    """Stored vectors as one (len(blobs), dim) matrix, without copying each row apart."""
    if not blobs:
        return np.zeros((0, dim), dtype=np.float32)
    return np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dim)


def content_key(model: str, text: str) -> str:
    """The cache key of a text's vector: the same text under the same model is embedded
    once, whichever fact holds it."""
    name = model.encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(len(name).to_bytes(8, "little"))  # no (model, text) pair
    digest.update(name)  # can pose as another by moving bytes across the boundary
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


#: Products of at most this many matrix elements go to BLAS (one thread at this size,
#: ~25 µs for 2,000 x 384); larger ones are summed by numpy's own single-threaded loop.
SINGLE_THREAD_BLAS_MAX = 1 << 20


def cosine_scores(matrix: Vector, query: Vector) -> Vector:
    """`matrix @ query`, on the calling thread only.

    Why: numpy's OpenBLAS splits a large product across every core, and on a machine
    where agents share a few busy cores, handing work to a second thread costs far more
    than the product: measured on a loaded 2-core machine, 10,000 x 384 took ~17 ms with
    OpenBLAS's two threads against ~0.64 ms in `einsum`'s loop. Limiting OpenBLAS's threads
    instead (threadpoolctl) is process-wide, so it also slows the application's own numpy
    work, and with this OpenBLAS a limit set from a thread other than the main one did not
    take effect at all; `einsum` (without `optimize`) never calls BLAS and never starts a
    thread. Small products stay with BLAS, which runs them on one thread and faster.
    """
    if matrix.size <= SINGLE_THREAD_BLAS_MAX:
        return matrix @ query
    scores: Vector = np.einsum("ij,j->i", matrix, query)
    return scores


def rank_by_cosine(matrix: Vector, query: Vector, top_k: int) -> list[tuple[int, float]]:
    """(row, cosine) of the `top_k` rows most similar to `query`, best first; ties by row.

    Rows and query are unit length, so the dot product is the cosine. `argpartition` finds
    the top k in linear time; only those k are sorted.
    """
    rows = matrix.shape[0]
    if top_k <= 0 or rows == 0:
        return []
    similarity = cosine_scores(matrix, query)
    if top_k < rows:
        # The k-th best value, then every row at least as good: the rows above it and all
        # rows equal to it, so that which of several equal rows make the cut does not
        # depend on the partition algorithm (backends agree on ties: the lower row first,
        # by the sort below). Two passes over the similarities after the product, no
        # negated copy: at 100,000 rows each pass costs ~40 µs, the product ~3 ms.
        kth = np.partition(similarity, rows - top_k)[rows - top_k]
        part = np.flatnonzero(similarity >= kth)
    else:
        part = np.arange(rows)
    order = part[np.lexsort((part, -similarity[part]))][:top_k]  # by (-similarity, row)
    return [(int(i), float(similarity[i])) for i in order]


def hybrid_leg_size(top_k: int) -> int:
    """How deep each leg of a hybrid search reads: `max(4 * top_k, 50)`, so fusion sees
    well past the page asked for, and at least 50 candidates for a small `top_k`."""
    return max(4 * top_k, 50)


def reciprocal_rank_fusion(
    lexical: Sequence[_Id], semantic: Sequence[_Id], top_k: int
) -> list[tuple[_Id, float]]:
    """Fuse two rankings (best first, no duplicates within one) into the best `top_k`
    (id, fused score): `sum 1/(RRF_K + rank)` over the rankings an id appears in, ranks
    from 1. Ties: the better BM25 rank first (absent from BM25 counts as last), then the
    better vector rank."""
    if top_k <= 0:
        return []
    fused: dict[_Id, float] = {}
    lexical_rank: dict[_Id, int] = {}
    semantic_rank: dict[_Id, int] = {}
    for rank, key in enumerate(lexical, start=1):
        lexical_rank[key] = rank
        fused[key] = 1.0 / (RRF_K + rank)
    for rank, key in enumerate(semantic, start=1):
        semantic_rank[key] = rank
        fused[key] = fused.get(key, 0.0) + 1.0 / (RRF_K + rank)
    last = len(lexical) + len(semantic) + 1
    ordered = sorted(
        fused,
        key=lambda key: (
            -fused[key],
            lexical_rank.get(key, last),
            semantic_rank.get(key, last),
        ),
    )
    return [(key, fused[key]) for key in ordered[:top_k]]
