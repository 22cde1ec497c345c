"""The vector side of `SqlmemStore`: LangGraph's `index` config, the texts a
put embeds, and vector / hybrid ranking of the items a search found.

Config, as LangGraph defines it (`langgraph.store.base.IndexConfig`): `{"dims": int,
"embed": Embeddings | callable | "provider:model", "fields": [...]}` (`fields` defaults to
`["$"]`, the whole value as JSON; SqliteStore's name `text_fields` is read too). sqlmem's
own key: `"hybrid": True` ranks a query by reciprocal rank fusion of BM25 and the vectors
(k = 10 as in fact search, each leg `max(4 * (offset + limit), 50)` deep, `score` the fused value)
instead of by the vectors alone (`score` the cosine, as LangGraph's stores report it).

Embedding happens BEFORE the write transaction (`prepare` / `aprepare` run over a whole
batch first): a slow model never holds the file's write lock. An embedder that raises or
returns unusable output loses no write: the item is stored without vectors and a warning
goes to the "sqlmem" logger, as for facts; a search then ranks it after the scored items.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import Op, PutOp, SearchOp
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path, tokenize_path

from ..errors import InvalidArgumentError
from ..search.vectors import (
    EmbeddingProblem,
    Vector,
    checked_rows,
    hybrid_leg_size,
    reciprocal_rank_fusion,
    to_blob,
    unit_query,
)

__all__ = ["Prepared", "StoreIndex", "rank_by_vectors"]

_log = logging.getLogger("sqlmem")

#: What `prepare` computed for a batch, by op position: a put's `(field, dims, blob)`
#: rows, or a search's query vector (None: the embedder gave no usable vector).
Prepared = dict[int, Any]


class StoreIndex:
    """A checked `index` config and its embedder."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        if not isinstance(config, Mapping):
            raise InvalidArgumentError(f"index must be a mapping, got {type(config).__name__}")
        dims = config.get("dims")
        if isinstance(dims, bool) or not isinstance(dims, int) or dims <= 0:
            raise InvalidArgumentError(f"index['dims'] must be a positive int, got {dims!r}")
        embed = config.get("embed")
        if not (isinstance(embed, (str, Embeddings)) or callable(embed)):
            raise InvalidArgumentError(
                "index['embed'] is required (Embeddings, a function or 'provider:model')"
            )
        if config.get("distance_type", "cosine") != "cosine":
            raise InvalidArgumentError(
                f"index['distance_type'] {config['distance_type']!r}: sqlmem ranks by cosine only"
            )
        self.dims = dims
        self.hybrid = bool(config.get("hybrid", False))
        fields = config.get("fields") or config.get("text_fields") or ["$"]
        self.fields = _tokenized([fields] if isinstance(fields, str) else fields)
        try:
            self.embeddings = ensure_embeddings(config["embed"])
        except (ValueError, TypeError, ImportError) as exc:
            raise InvalidArgumentError(f"index['embed']: {exc}") from exc

    # -- before the transaction --------------------------------------------------------------

    def prepare(self, ops: Sequence[Op]) -> Prepared:
        puts, texts, queries = self._requests(ops)
        vectors = self._embed_documents(texts) if texts else []
        out = _put_rows(puts, vectors, self.dims)
        for i, query in queries:
            try:
                out[i] = self._query_vector(self.embeddings.embed_query(query))
            except Exception as exc:  # somebody else's model, as for writes
                _query_failed(exc)
                out[i] = None
        return out

    async def aprepare(self, ops: Sequence[Op]) -> Prepared:
        puts, texts, queries = self._requests(ops)
        vectors = await self._aembed_documents(texts) if texts else []
        out = _put_rows(puts, vectors, self.dims)
        for i, query in queries:
            try:
                out[i] = self._query_vector(await self.embeddings.aembed_query(query))
            except Exception as exc:
                _query_failed(exc)
                out[i] = None
        return out

    def _requests(
        self, ops: Sequence[Op]
    ) -> tuple[list[tuple[int, list[str]]], list[str], list[tuple[int, str]]]:
        """The puts' (op position, field names) with their texts in one flat list, and the
        searches' queries."""
        puts: list[tuple[int, list[str]]] = []
        texts: list[str] = []
        queries: list[tuple[int, str]] = []
        for i, op in enumerate(ops):
            if isinstance(op, PutOp) and isinstance(op.value, dict) and op.index is not False:
                names, found = self.texts(op)
                puts.append((i, names))
                texts.extend(found)
            elif isinstance(op, SearchOp) and op.query:
                queries.append((i, op.query))
        return puts, texts, queries

    def texts(self, op: PutOp) -> tuple[list[str], list[str]]:
        """(field names, texts) a put embeds: each indexed path's texts; a path that
        reaches several gets "path.0", "path.1"... (as LangGraph's stores name them)."""
        index: Any = op.index
        if index is None:
            paths = self.fields
        elif isinstance(index, (list, tuple)) and all(isinstance(p, str) for p in index):
            paths = _tokenized(list(index))
        else:
            raise InvalidArgumentError(
                f"index must be False, None or a list of field paths, got {index!r:.80}"
            )
        names: list[str] = []
        texts: list[str] = []
        for path, tokens in paths:
            try:
                found = get_text_at_path(op.value, tokens)
            except (TypeError, ValueError, RecursionError):  # no JSON: the put refuses it
                found = []
            for j, text in enumerate(found):
                names.append(f"{path}.{j}" if len(found) > 1 else path)
                texts.append(text)
        return names, texts

    def _embed_documents(self, texts: list[str]) -> list[Vector | None]:
        try:
            return self._rows(self.embeddings.embed_documents(texts), len(texts))
        except Exception as exc:  # somebody else's model: the write goes on without vectors
            return _lost(exc, len(texts))

    async def _aembed_documents(self, texts: list[str]) -> list[Vector | None]:
        try:
            return self._rows(await self.embeddings.aembed_documents(texts), len(texts))
        except Exception as exc:
            return _lost(exc, len(texts))

    def _rows(self, output: Any, count: int) -> list[Vector | None]:
        matrix = np.asarray(output, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[1:] != (self.dims,):
            raise EmbeddingProblem(
                f"expected {count} vectors of {self.dims} dims, got shape {matrix.shape}"
            )
        return checked_rows(matrix, count)

    def _query_vector(self, output: Any) -> Vector | None:
        matrix = np.asarray([output], dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[1] != self.dims:
            raise EmbeddingProblem(
                f"the query's vector has shape {matrix.shape[1:]}, expected ({self.dims},)"
            )
        return unit_query(matrix)


def _tokenized(fields: Any) -> list[tuple[str, str | list[str]]]:
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise InvalidArgumentError(f"index fields must be a list of str, got {fields!r:.80}")
    try:
        return [(f, "$" if f == "$" else tokenize_path(f)) for f in fields]
    except (ValueError, IndexError) as exc:
        raise InvalidArgumentError(f"index fields: {exc}") from exc


def _lost(exc: Exception, count: int) -> list[Vector | None]:
    _log.warning("sqlmem: LangGraph store embedder failed; items stored without vectors: %s", exc)
    return [None] * count


def _query_failed(exc: Exception) -> None:
    """A query the embedder failed (logged): its search ranks no item by vector (all come
    unscored, newest first), rather than failing the agent's turn (as fact search does)."""
    _log.warning(
        "sqlmem: LangGraph store embedder failed for a query; searching without its vector: %s: %s",
        type(exc).__name__,
        exc,
    )


def _put_rows(
    puts: list[tuple[int, list[str]]], vectors: list[Vector | None], dims: int
) -> Prepared:
    out: Prepared = {}
    at = 0
    for i, names in puts:
        rows = []
        for name, vector in zip(names, vectors[at : at + len(names)], strict=True):
            if vector is not None:
                rows.append((name, dims, to_blob(vector)))
        at += len(names)
        out[i] = rows
    return out


# -- ranking ------------------------------------------------------------------------------------


def rank_by_vectors(
    query: Vector | None,
    wanted: Sequence[tuple[str, str]],
    vectors: Sequence[tuple[str, str, bytes]],
    dims: int,
) -> list[tuple[int, float | None]]:
    """(position in `wanted`, score) best first: an item's score is the best cosine of its
    vectors with the query (exact: one matrix product over the candidates' vectors); the
    items without a vector follow with score None, in their given order (newest first)."""
    position = {item: i for i, item in enumerate(wanted)}
    owners: list[int] = []
    blobs: list[bytes] = []
    for namespace, key, blob in vectors:
        i = position.get((namespace, key))
        if i is not None:
            owners.append(i)
            blobs.append(blob)
    best = np.full(len(wanted), -np.inf, dtype=np.float64)
    if query is not None and blobs:
        matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dims)
        np.maximum.at(best, np.asarray(owners), (matrix @ query).astype(np.float64))
    scored = np.flatnonzero(np.isfinite(best))
    order = scored[np.lexsort((scored, -best[scored]))]  # by (-score, newest first)
    ranked: list[tuple[int, float | None]] = [(int(i), float(best[i])) for i in order]
    ranked.extend((int(i), None) for i in np.flatnonzero(~np.isfinite(best)))
    return ranked


def fuse(
    lexical: Sequence[int], semantic: Sequence[tuple[int, float | None]], depth: int
) -> list[tuple[int, float | None]]:
    """Hybrid: reciprocal rank fusion of the BM25 ranking and the vector ranking (only
    items with a vector), each `hybrid_leg_size(depth)` deep, as in fact search."""
    leg = hybrid_leg_size(depth)
    vector_leg = [i for i, score in semantic if score is not None][:leg]
    fused = reciprocal_rank_fusion(list(lexical[:leg]), vector_leg, leg)
    return [(i, score) for i, score in fused]
