"""SPEC 17 building blocks: embedder output checks, stored form, exact cosine ranking,
reciprocal rank fusion, and the two embedders sqlmem ships."""

from __future__ import annotations

import socket
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sqlmem
from sqlmem.embedders import HashEmbedder, WordLlamaEmbedder
from sqlmem.search.vectors import (
    RRF_K,
    EmbeddingProblem,
    checked_rows,
    content_key,
    from_blobs,
    hybrid_leg_size,
    rank_by_cosine,
    reciprocal_rank_fusion,
    to_blob,
    unit_query,
)

# -- checking an embedder's output -------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "count"),
    [
        ([[1.0, 2.0]], 1),  # a list, not an array
        (np.ones((2, 3), dtype=np.float64), 2),  # wrong dtype
        (np.ones((1, 3), dtype=np.float32), 2),  # fewer rows than texts
        (np.ones((3, 3), dtype=np.float32), 2),  # more rows
        (np.ones(3, dtype=np.float32), 1),  # one dimension
        (np.ones((2, 0), dtype=np.float32), 2),  # no dimensions
        (np.ones((1, 2, 2), dtype=np.float32), 1),
        (None, 1),
    ],
)
def test_unusable_batches_are_refused_whole(output: Any, count: int) -> None:
    with pytest.raises(EmbeddingProblem):
        checked_rows(output, count)


def test_bad_rows_are_refused_alone_and_good_ones_normalised() -> None:
    output = np.array(
        [[3.0, 4.0], [np.nan, 1.0], [np.inf, 0.0], [0.0, 0.0], [1e-30, 0.0], [3e38, 3e38]],
        dtype=np.float32,
    )
    rows = checked_rows(output, 6)
    assert rows[1] is None and rows[2] is None and rows[3] is None
    for row, expected in ((rows[0], [0.6, 0.8]), (rows[4], [1.0, 0.0])):
        assert row is not None and row.dtype == np.dtype("<f4")
        np.testing.assert_allclose(row, expected, rtol=1e-6)
    big = rows[5]  # the norm of huge values overflows float32 but not the float64 check
    assert big is not None
    np.testing.assert_allclose(big, [2**-0.5, 2**-0.5], rtol=1e-6)


def test_a_zero_query_gives_no_vector() -> None:
    assert unit_query(np.zeros((1, 4), dtype=np.float32)) is None


def test_blobs_round_trip_little_endian() -> None:
    rows = [np.array([0.5, -1.25, 3.0], dtype=np.float32), np.arange(3, dtype=np.float32)]
    blobs = [to_blob(r) for r in rows]
    assert blobs[0] == np.array([0.5, -1.25, 3.0], dtype="<f4").tobytes()
    matrix = from_blobs(blobs, 3)
    assert matrix.shape == (2, 3)
    np.testing.assert_array_equal(matrix, np.stack(rows))
    assert from_blobs([], 7).shape == (0, 7)


def test_content_key_depends_on_model_and_text() -> None:
    assert content_key("m", "a") == content_key("m", "a")
    assert len({content_key("m", "a"), content_key("n", "a"), content_key("m", "b")}) == 3
    assert content_key("m\x00", "a") != content_key("m", "\x00a")


# -- exact ranking -----------------------------------------------------------------------


@given(
    st.integers(min_value=0, max_value=40),
    st.integers(min_value=1, max_value=6),
    st.integers(min_value=-2, max_value=50),
    st.integers(min_value=0, max_value=2**32 - 1),
)
def test_rank_by_cosine_is_the_exact_top_k(rows: int, dim: int, top_k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    # few distinct values, so equal similarities (ties) are common
    matrix = rng.integers(-2, 3, size=(rows, dim)).astype(np.float32)
    query = rng.integers(-2, 3, size=dim).astype(np.float32)
    got = rank_by_cosine(matrix, query, top_k)
    similarity = [float(x) for x in matrix @ query]
    expected = sorted(range(rows), key=lambda i: (-similarity[i], i))[: max(top_k, 0)]
    assert [i for i, _ in got] == expected
    assert [s for _, s in got] == [similarity[i] for i in expected]


# -- fusion ------------------------------------------------------------------------------


def test_rrf_by_hand() -> None:
    fused = reciprocal_rank_fusion(["a", "b", "c"], ["c", "d"], top_k=10)
    scores = dict(fused)
    assert scores["a"] == pytest.approx(1 / (RRF_K + 1))
    assert scores["c"] == pytest.approx(1 / (RRF_K + 3) + 1 / (RRF_K + 1))
    assert scores["d"] == pytest.approx(1 / (RRF_K + 2))
    # b (lexical 2) and d (semantic 2) tie: the BM25 hit first
    assert [k for k, _ in fused] == ["c", "a", "b", "d"]


def test_rrf_ties_go_to_the_better_bm25_rank() -> None:
    # x: lexical 1, semantic 2; y: lexical 2, semantic 1: equal sums
    assert [k for k, _ in reciprocal_rank_fusion(["x", "y"], ["y", "x"], 2)] == ["x", "y"]
    # a hit only the vector leg found loses a tie to one BM25 found
    fused = reciprocal_rank_fusion(["b"], ["v"], 2)
    assert fused[0][1] == fused[1][1] and [k for k, _ in fused] == ["b", "v"]


@given(
    st.lists(st.integers(0, 30), unique=True, max_size=20),
    st.lists(st.integers(0, 30), unique=True, max_size=20),
    st.integers(-1, 25),
)
def test_rrf_matches_its_definition(lexical: list[int], semantic: list[int], top_k: int) -> None:
    got = reciprocal_rank_fusion(lexical, semantic, top_k)
    score = {}
    for ranking in (lexical, semantic):
        for rank, key in enumerate(ranking, start=1):
            score[key] = score.get(key, 0.0) + 1 / (RRF_K + rank)
    assert len(got) == min(max(top_k, 0), len(score))
    assert all(s == pytest.approx(score[k]) for k, s in got)
    values = [s for _, s in got]
    assert values == sorted(values, reverse=True)
    if top_k > 0:  # nothing left out beats what came back
        floor = min(values, default=float("inf"))
        assert all(v <= floor + 1e-15 for k, v in score.items() if k not in dict(got))


def test_hybrid_legs_read_deep_enough() -> None:
    assert hybrid_leg_size(1) == 50
    assert hybrid_leg_size(10) == 50
    assert hybrid_leg_size(20) == 80


# -- the embedders -----------------------------------------------------------------------


def test_hash_embedder_is_deterministic_and_an_embedder() -> None:
    a, b = HashEmbedder(32), HashEmbedder(32)
    assert isinstance(a, sqlmem.Embedder)
    texts = ["The user is vegetarian.", "VEGETARIAN user", "", "日本語のテキスト"]
    out = a.embed(texts)
    assert out.dtype == np.float32 and out.shape == (4, 32)
    np.testing.assert_array_equal(out, b.embed(texts))
    assert not out[2].any()  # no words, no vector
    rows = checked_rows(out, 4)
    assert rows[2] is None
    assert rows[0] is not None and rows[1] is not None
    assert float(rows[0] @ rows[1]) > 0.5  # two shared words of three


@pytest.mark.parametrize("dim", [0, -1, True, 1.5, 70000])
def test_hash_embedder_refuses_bad_dims(dim: Any) -> None:
    with pytest.raises(sqlmem.InvalidArgumentError):
        HashEmbedder(dim)


def test_wordllama_runs_offline_and_finds_meanings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real model loads and embeds with every network path closed (SPEC 17)."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://unresolvable.invalid:9")

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("the embedder tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    embedder = WordLlamaEmbedder()
    assert isinstance(embedder, sqlmem.Embedder)
    assert embedder.model == "wordllama/l2_supercat-256"
    texts = ["The user is vegetarian.", "The user lives in Berlin.", "what do I eat?"]
    rows = checked_rows(embedder.embed(texts), 3)
    assert all(r is not None and r.shape == (256,) for r in rows)
    vegetarian, berlin, eat = rows
    assert vegetarian is not None and berlin is not None and eat is not None
    # BM25 shares no word between the first and the last; the model relates them.
    assert float(eat @ vegetarian) > float(eat @ berlin)


def test_one_first_place_outranks_two_middling_placings() -> None:
    """Regression: with the paper's k = 60, an id both legs rank 30th (2/90) beat the id
    one leg ranks first (1/61), so the vectors' best match sank below a shared nobody."""
    filler = [f"f{i}" for i in range(28)]
    lexical = ["first", *filler, "middling"]
    semantic = [*(f"g{i}" for i in range(29)), "middling"]
    fused = [key for key, _ in reciprocal_rank_fusion(lexical, semantic, 3)]
    assert fused[0] == "first"
