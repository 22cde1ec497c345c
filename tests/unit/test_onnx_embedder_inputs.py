"""OnnxEmbedder's plumbing on tiny hand-built ONNX models whose output is known exactly:
an embedding table looked up by token id, so mean pooling must give the average of the
real tokens' rows and CLS pooling the first row. Covers exports without token_type_ids
and exports taking int32 ids, which the MiniLM file of the other tests does not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx  # the `test` extra installs it
import pytest
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, models, pre_tokenizers

from sqlmem.embedders import OnnxEmbedder

VOCAB = {"[PAD]": 0, "[UNK]": 1, "red": 2, "green": 3, "tea": 4, "car": 5}
TABLE = np.arange(len(VOCAB) * 4, dtype=np.float32).reshape(len(VOCAB), 4) + 1.0


def _write_model(folder: Path, *, id_type: int, with_types: bool) -> Path:
    """input_ids (and attention_mask, token_type_ids when asked) -> Gather(TABLE)."""
    ids = helper.make_tensor_value_info("input_ids", id_type, ["batch", "seq"])
    mask = helper.make_tensor_value_info("attention_mask", id_type, ["batch", "seq"])
    inputs = [ids, mask]
    if with_types:
        inputs.append(helper.make_tensor_value_info("token_type_ids", id_type, ["batch", "seq"]))
    out = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["b", "s", 4])
    table = numpy_helper.from_array(TABLE, name="table")
    nodes = [helper.make_node("Gather", ["table", "input_ids"], ["last_hidden_state"])]
    graph = helper.make_graph(nodes, "lookup", inputs, [out], initializer=[table])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    folder.mkdir(parents=True)
    onnx.save(model, str(folder / "model.onnx"))
    tokenizer = Tokenizer(models.WordLevel(VOCAB, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(folder / "tokenizer.json"))
    return folder


@pytest.mark.parametrize(
    ("id_type", "with_types"),
    [(TensorProto.INT64, False), (TensorProto.INT32, False), (TensorProto.INT64, True)],
)
def test_mean_pooling_averages_the_real_tokens(
    tmp_path: Path, id_type: int, with_types: bool
) -> None:
    folder = _write_model(tmp_path / "lookup", id_type=id_type, with_types=with_types)
    embedder = OnnxEmbedder(folder, normalize=False, batch_size=2)
    out = embedder.embed(["red tea", "green", "red green tea car", "tea"])
    expected = np.stack(
        [
            TABLE[[2, 4]].mean(axis=0),
            TABLE[3],
            TABLE[[2, 3, 4, 5]].mean(axis=0),
            TABLE[4],
        ]
    )
    np.testing.assert_allclose(out, expected, rtol=1e-6)  # padding never counted


def test_cls_pooling_takes_the_first_token_and_prefixes_are_tokens(tmp_path: Path) -> None:
    folder = _write_model(tmp_path / "lookup", id_type=TensorProto.INT64, with_types=False)
    cls = OnnxEmbedder(folder, pooling="cls", normalize=False, query_prefix="car ")
    np.testing.assert_allclose(cls.embed(["green tea"]), TABLE[[3]])
    np.testing.assert_allclose(cls.embed_query(["green tea"]), TABLE[[5]])  # "car green tea"


def test_normalized_rows_have_unit_length(tmp_path: Path) -> None:
    folder = _write_model(tmp_path / "lookup", id_type=TensorProto.INT64, with_types=False)
    out = OnnxEmbedder(folder).embed(["red tea", "car"])
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-6)
