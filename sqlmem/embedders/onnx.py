"""`OnnxEmbedder`: any sentence-embedding model exported to ONNX, run from a local folder
(extra `sqlmem[onnx]`: onnxruntime and tokenizers).

Why: WordLlama is small and fast but finds less than a transformer; a transformer export
(all-MiniLM-L6-v2, e5, bge ...) finds more, and onnxruntime runs it on the CPU without
PyTorch. The folder is the user's download; nothing is fetched at run time.

- Files: `model.onnx` (or `onnx/model.onnx`, as Hugging Face repositories lay it out) and
  `tokenizer.json` (the `tokenizers` library's format). The longest input is the
  tokenizer's own truncation length, else `model_max_length` of `tokenizer_config.json`,
  else `max_position_embeddings` of `config.json`, else 512 tokens; longer texts are cut.
- Asymmetric models: `query_prefix` goes before every search query (`embed_query`),
  `document_prefix` before every stored text (`embed`): e5 wants "query: " and
  "passage: ", bge-en v1.5 "Represent this sentence for searching relevant passages: "
  on queries only. The stored `model` name carries the folder, the prefixes and the
  pooling, so changing any of them marks stored vectors stale (`embed_pending` redoes
  them) instead of mixing two vector spaces.
- Pooling: "mean" over the real tokens (sentence-transformers' MiniLM, e5) or "cls" (the
  first token: bge). An export that already outputs a pooled `sentence_embedding` is used
  as it is.
- Threads: onnxruntime takes every core by default, which starves the agent beside it and
  other processes; `threads` (default 1) pins the intra-op pool. One short query costs a few
  milliseconds with one thread on MiniLM; raise it for bulk `embed_pending` runs.
- Batches of `batch_size` texts, sorted by length first so that a batch pads little, then
  put back in the caller's order.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import InvalidArgumentError, SqlmemError

__all__ = ["OnnxEmbedder"]

_POOLINGS = ("mean", "cls")
_DEFAULT_MAX_LENGTH = 512
_EXTRA_HINT = "OnnxEmbedder needs the 'onnx' extra: pip install 'sqlmem[onnx]'"


class OnnxEmbedder:
    """A sentence-embedding ONNX export in a local folder, as a `QueryEmbedder`."""

    def __init__(
        self,
        model_dir: str | Path,
        *,
        query_prefix: str = "",
        document_prefix: str = "",
        pooling: str = "mean",
        normalize: bool = True,
        batch_size: int = 32,
        threads: int = 1,
    ) -> None:
        _check_args(query_prefix, document_prefix, pooling, batch_size, threads)
        folder = Path(model_dir)
        onnxruntime, tokenizers = _import_extra()
        model_file = _model_file(folder)
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self.pooling = pooling
        self.normalize = bool(normalize)
        self.batch_size = batch_size
        self.model = _model_name(folder, query_prefix, document_prefix, pooling)
        self.max_length = _max_length(folder)
        self._tokenizer = _load_tokenizer(tokenizers, folder, self.max_length)
        self._session = _load_session(onnxruntime, model_file, threads)
        self._inputs = {i.name: i.type for i in self._session.get_inputs()}
        self._output = _pick_output([o.name for o in self._session.get_outputs()])
        self._lock = threading.Lock()  # one run at a time: the session's threads are pinned

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Vectors of stored texts (the document prefix before each)."""
        return self._embed([self.document_prefix + t for t in texts])

    def embed_query(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Vectors of search queries (the query prefix before each)."""
        return self._embed([self.query_prefix + t for t in texts])

    def __repr__(self) -> str:
        return f"OnnxEmbedder({self.model!r})"

    def _embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        parts: list[npt.NDArray[np.float32]] = []
        with self._lock:
            for start in range(0, len(order), self.batch_size):
                batch = [texts[i] for i in order[start : start + self.batch_size]]
                parts.append(self._run(batch))
        sorted_rows = np.concatenate(parts, axis=0)
        out = np.empty_like(sorted_rows)
        out[np.asarray(order)] = sorted_rows
        if self.normalize:
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            out /= np.where(norms == 0.0, 1.0, norms).astype(np.float32)
        return out

    def _run(self, batch: list[str]) -> npt.NDArray[np.float32]:
        encodings = self._tokenizer.encode_batch(batch)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        types = np.zeros((len(batch), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n] = encoding.ids
            mask[row, :n] = 1
            types[row, :n] = encoding.type_ids
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        inputs = {
            name: _as_input_type(feed[name], kind)
            for name, kind in self._inputs.items()
            if name in feed
        }
        (hidden,) = self._session.run([self._output], inputs)
        return _pool(np.asarray(hidden, dtype=np.float32), mask, self.pooling)


def _check_args(
    query_prefix: object,
    document_prefix: object,
    pooling: object,
    batch_size: object,
    threads: object,
) -> None:
    if not isinstance(query_prefix, str) or not isinstance(document_prefix, str):
        raise InvalidArgumentError("query_prefix and document_prefix must be str")
    if pooling not in _POOLINGS:
        raise InvalidArgumentError(
            f"pooling must be one of {', '.join(_POOLINGS)}, got {pooling!r}"
        )
    for name, value in (("batch_size", batch_size), ("threads", threads)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidArgumentError(f"{name} must be an int >= 1, got {value!r}")


def _import_extra() -> tuple[Any, Any]:
    try:
        import onnxruntime  # type: ignore[import-untyped]
        import tokenizers
    except ImportError as exc:
        raise SqlmemError(_EXTRA_HINT) from exc
    return onnxruntime, tokenizers


def _model_file(folder: Path) -> Path:
    for candidate in (folder / "model.onnx", folder / "onnx" / "model.onnx"):
        if candidate.is_file():
            return candidate
    raise SqlmemError(f"no model.onnx (nor onnx/model.onnx) in {str(folder)!r}")


def _model_name(folder: Path, query_prefix: str, document_prefix: str, pooling: str) -> str:
    """The name stored with every vector: what changes the vectors is in it."""
    name = f"onnx/{folder.resolve().name}/{pooling}"
    if query_prefix or document_prefix:
        name += f"/query={query_prefix!r}/document={document_prefix!r}"
    return name


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _max_length(folder: Path) -> int:
    """The longest input the model was trained on, from the files beside it."""
    candidates = (
        (_read_json(folder / "tokenizer.json").get("truncation") or {}).get("max_length"),
        _read_json(folder / "tokenizer_config.json").get("model_max_length"),
        _read_json(folder / "config.json").get("max_position_embeddings"),
    )
    for value in candidates:
        # tokenizer_config.json says 1e30 for "no limit"; positions past 8192 are not real
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 8192:
            return value
    return _DEFAULT_MAX_LENGTH


def _load_tokenizer(tokenizers: Any, folder: Path, max_length: int) -> Any:
    path = folder / "tokenizer.json"
    if not path.is_file():
        raise SqlmemError(f"no tokenizer.json in {str(folder)!r}")
    try:
        tokenizer = tokenizers.Tokenizer.from_file(str(path))
    except Exception as exc:  # the tokenizers library raises plain Exception on a bad file
        raise SqlmemError(f"could not read {str(path)!r}: {exc}") from exc
    tokenizer.no_padding()  # _run pads each batch to its longest text itself
    tokenizer.enable_truncation(max_length=max_length)
    return tokenizer


def _load_session(onnxruntime: Any, model_file: Path, threads: int) -> Any:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    try:
        return onnxruntime.InferenceSession(
            str(model_file), sess_options=options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # onnxruntime's own exception types are not public API
        raise SqlmemError(f"could not load {str(model_file)!r}: {exc}") from exc


def _pick_output(names: list[str]) -> str:
    """A pooled `sentence_embedding` when the export has one, else its first output (the
    last hidden state)."""
    return "sentence_embedding" if "sentence_embedding" in names else names[0]


def _as_input_type(values: npt.NDArray[np.int64], kind: str) -> npt.NDArray[Any]:
    return values.astype(np.int32) if kind == "tensor(int32)" else values


def _pool(
    hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64], pooling: str
) -> npt.NDArray[np.float32]:
    if hidden.ndim == 2:  # already one vector per text
        return hidden
    if pooling == "cls":
        return hidden[:, 0, :]
    weights = mask[:, :, None].astype(np.float32)
    pooled: npt.NDArray[np.float32] = (hidden * weights).sum(axis=1) / np.maximum(
        weights.sum(axis=1), np.float32(1.0)
    )
    return pooled
