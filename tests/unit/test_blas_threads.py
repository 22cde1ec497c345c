"""Vector scoring never hands a large product to OpenBLAS's thread pool (on a busy machine
a second thread costs milliseconds): it runs on the calling thread and ranks exactly as
the BLAS product does."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np

import sqlmem
from sqlmem.embedders.hashing import HashEmbedder
from sqlmem.search.vectors import SINGLE_THREAD_BLAS_MAX, cosine_scores, rank_by_cosine


class _SpyMatrix(np.ndarray):  # type: ignore[type-arg]
    """Counts the products that go to BLAS (`@`)."""

    products = 0

    def __matmul__(self, other: Any) -> Any:
        _SpyMatrix.products += 1
        return np.asarray(self) @ other


def _unit_rows(rows: int, dim: int, seed: int) -> np.ndarray:  # type: ignore[type-arg]
    matrix = np.random.default_rng(seed).standard_normal((rows, dim)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def test_a_large_product_never_goes_to_blas_and_ranks_the_same() -> None:
    dim = 64
    rows = SINGLE_THREAD_BLAS_MAX // dim + 1
    matrix, query = _unit_rows(rows, dim, 1), _unit_rows(1, dim, 2)[0]
    spy = matrix.view(_SpyMatrix)
    _SpyMatrix.products = 0
    scores = cosine_scores(spy, query)
    assert _SpyMatrix.products == 0
    assert scores.dtype == np.float32
    np.testing.assert_allclose(scores, matrix @ query, atol=1e-5)
    ranked = rank_by_cosine(spy, query, 10)
    assert _SpyMatrix.products == 0
    expected = np.argsort(-(matrix.astype(np.float64) @ query.astype(np.float64)))[:10]
    assert [row for row, _ in ranked] == [int(i) for i in expected]


def test_a_small_product_stays_with_blas() -> None:
    matrix, query = _unit_rows(100, 32, 3), _unit_rows(1, 32, 4)[0]
    _SpyMatrix.products = 0
    cosine_scores(matrix.view(_SpyMatrix), query)
    assert _SpyMatrix.products == 1


def test_scoring_from_many_threads_agrees(tmp_path: Path) -> None:
    """Vector search from worker threads (as the async API runs it) gives one answer."""
    with sqlmem.open(tmp_path / "m.db", embedder=HashEmbedder(32)) as db:
        db.facts.index_many(
            [sqlmem.Fact(id=f"f{i}", content=f"hedgehog number {i} eats owls") for i in range(50)]
        )
        expected = [f.id for f in db.facts.search("hedgehog owls", 5, mode="vector")]
        found: list[list[str]] = []

        def search() -> None:
            found.append([f.id for f in db.facts.search("hedgehog owls", 5, mode="vector")])

        threads = [threading.Thread(target=search) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(expected) == 5 and found == [expected] * 4
