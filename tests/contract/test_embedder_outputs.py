"""Hostile embedder outputs on every backend: a memory is never lost to an embedder.

Regression: an embedder returning a `numpy.matrix` passed the output checks, then the
write failed on the vectors table's length check, so `index`, `index_many` and `remember`
stored nothing. Every output below is either used (same numbers, plain little-endian
float32 stored) or refused (the fact is stored without a vector, a warning is logged),
and the store never raises.
"""

from __future__ import annotations

import itertools
import logging
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sqlmem
from sqlmem import Fact
from sqlmem.embedders import HashEmbedder

Shape = Callable[[npt.NDArray[np.float32]], Any]


class _Subclass(np.ndarray):  # type: ignore[type-arg]
    """An ndarray subclass with no behaviour of its own (as a memmap or a tensor's view)."""


#: Outputs whose numbers are the right ones: the vectors must be stored and found.
USABLE: dict[str, Shape] = {
    "matrix": lambda a: _matrix(a),
    "big_endian": lambda a: a.astype(">f4"),
    "fortran_order": np.asfortranarray,
    "strided": lambda a: np.repeat(a, 2, axis=1)[:, ::2],
    "subclass": lambda a: a.view(_Subclass),
    "masked_nothing_masked": np.ma.masked_array,
    "read_only": lambda a: _read_only(a),
}

#: Outputs that cannot be stored: each fact is kept without a vector.
REFUSED: dict[str, Shape] = {
    "object_dtype": lambda a: a.astype(object),
    "float64": lambda a: a.astype(np.float64),
    "float16": lambda a: a.astype(np.float16),
    "int32": lambda a: (a * 100).astype(np.int32),
    "three_d": lambda a: a[:, None, :],
    "one_d": lambda a: a.ravel(),
    "one_row_short": lambda a: a[:-1],
    "one_row_too_many": lambda a: np.vstack([a, a[:1]]),
    "no_columns": lambda a: a[:, :0],
    "list": lambda a: a.tolist(),
    "masked_values": lambda a: np.ma.masked_array(a, mask=np.ones(a.shape, bool)),
    "string": lambda a: "not vectors",
}


def _matrix(a: npt.NDArray[np.float32]) -> Any:
    with warnings.catch_warnings():  # numpy discourages the class; embedders still use it
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        return np.asmatrix(a)


def _read_only(a: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    a.setflags(write=False)
    return a


class ShapedEmbedder:
    """HashEmbedder whose output is passed through `shape` (identity when None)."""

    def __init__(self, shape: Shape | None = None) -> None:
        self.inner = HashEmbedder(64)
        self.model = self.inner.model
        self.shape = shape

    def embed(self, texts: Sequence[str]) -> Any:
        out = self.inner.embed(texts)
        return out if self.shape is None else self.shape(out)


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Any]]:
    opened: list[Any] = []

    def build(embedder: Any) -> Any:
        if request.param == "memory":
            return sqlmem.InMemoryFactStore(embedder=embedder)
        if request.param == "postgres":
            from pgserver import new_agent_id

            from sqlmem import postgres

            pg = postgres.open(
                request.getfixturevalue("pg_dsn"), new_agent_id(), embedder=embedder, pool_size=2
            )
            opened.append(pg)
            return pg.facts
        db = sqlmem.open(tmp_path / f"m{len(opened)}.db", embedder=embedder)
        opened.append(db)
        return db.facts

    yield build
    for db in opened:
        db.close()


def _write_every_way(facts: Any) -> str:
    facts.index(Fact(id="a", content="red apples"))
    facts.index_many([Fact(id="b", content="green pears"), Fact(id="c", content="blue sky")])
    return str(facts.remember(Fact(content="yellow bananas")))


@pytest.mark.parametrize("name", sorted(USABLE))
def test_an_unusual_but_valid_array_is_stored_as_plain_vectors(
    make: Callable[..., Any], name: str
) -> None:
    facts = make(ShapedEmbedder(USABLE[name]))
    remembered = _write_every_way(facts)
    assert facts.count() == 4
    plain = make(ShapedEmbedder())  # the same facts with the embedder's plain output
    _write_every_way(plain)
    for query in ("red apples", "green pears", "blue sky", "yellow bananas"):
        got = [(f.id, round(f.score, 5)) for f in facts.search(query, mode="vector", top_k=4)]
        want = [(f.id, round(f.score, 5)) for f in plain.search(query, mode="vector", top_k=4)]
        assert [score for _, score in got] == [score for _, score in want]
        assert got[0][1] == pytest.approx(1.0)
    assert facts.search("yellow bananas", mode="vector", top_k=1)[0].id == remembered
    assert facts.embed_pending() == 0  # nothing was left without a vector


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_an_unusable_output_costs_the_vector_never_the_fact(
    make: Callable[..., Any], name: str, caplog: pytest.LogCaptureFixture
) -> None:
    embedder = ShapedEmbedder(REFUSED[name])
    facts = make(embedder)
    with caplog.at_level(logging.WARNING, logger="sqlmem"):
        remembered = _write_every_way(facts)
    assert facts.count() == 4
    assert {f.id for f in facts.list(limit=10)} == {"a", "b", "c", remembered}
    assert "stored without vectors" in caplog.text
    assert facts.search("red apples", mode="vector") == []  # no corrupt vector anywhere
    assert facts.search("apples", mode="hybrid")[0].id == "a"  # found through BM25
    embedder.shape = None
    assert facts.embed_pending() == 4
    assert facts.search("red apples", mode="vector", top_k=1)[0].id == "a"


# Half the draws are float32 rows of the right shape (the outputs a store can use), so the
# subclasses and odd layouts of those meet the write path often.
_dtypes = st.one_of(
    st.sampled_from(["<f4", ">f4"]),
    st.sampled_from(["<f8", "<f2", "<i4", "|u1", "|b1", "<c8", "O"]),
)
_shapes = st.one_of(
    st.sampled_from([(1, 8), (2, 8)]),
    st.sampled_from([(0, 8), (1, 0), (8,), (1, 1, 8), (3, 8), ()]),
)


@pytest.fixture(scope="module")
def two_stores(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ShapedEmbedder, list[Any]]]:
    """One SQLite store and one twin sharing a mutable embedder, for the hypothesis runs
    (a file per example would cost seconds)."""
    embedder = ShapedEmbedder()
    db = sqlmem.open(tmp_path_factory.mktemp("outputs") / "m.db", embedder=embedder)
    yield embedder, [db.facts, sqlmem.InMemoryFactStore(embedder=embedder)]
    db.close()


_examples = itertools.count()


@settings(max_examples=200, deadline=None)
@given(
    dtype=_dtypes,
    shape=_shapes,
    fill=st.sampled_from(["random", "nan", "inf", "zero", "huge"]),
    subclass=st.sampled_from(["plain", "matrix", "subclass", "fortran"]),
)
def test_whatever_the_embedder_returns_the_fact_is_stored(
    two_stores: tuple[ShapedEmbedder, list[Any]],
    dtype: str,
    shape: tuple[int, ...],
    fill: str,
    subclass: str,
) -> None:
    rng = np.random.default_rng(0)
    if fill == "random":
        base = rng.normal(size=shape) if shape else np.float64(1.0)
    else:
        value = {"nan": np.nan, "inf": np.inf, "zero": 0.0, "huge": 3e38}[fill]
        base = np.full(shape, value)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # casting NaN to int, the matrix class...
        output: Any = np.asarray(base).astype(dtype)
        if subclass == "matrix" and output.ndim == 2:
            output = np.asmatrix(output)
        elif subclass == "subclass":
            output = output.view(_Subclass)
        elif subclass == "fortran" and output.ndim >= 2:
            output = np.asfortranarray(output)
    embedder, stores = two_stores
    embedder.shape = lambda _: output
    text = f"red apples number {next(_examples)}"  # new text: never served by the cache
    for store in stores:
        before = store.count()
        fact_id = store.index(Fact(content=text))  # never raises
        assert store.count() == before + 1 and store.get(fact_id) is not None
        for hit in store.search(text, mode="vector", top_k=3):  # never raises either
            assert -1.0001 <= hit.score <= 1.0001
