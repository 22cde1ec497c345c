"""Records built from stored rows without validation: the read path of every backend.

The engine wrote these values itself (checked on the way in), and reading is the hot
path, so records are built the way `model_construct` builds them, minus its per-field
bookkeeping (SPEC 4: reading must not re-validate). The SQLite stores and the in-memory
fact store build their records here, so a record reads back one way everywhere.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel

from ..records import Fact, Message, ToolCall
from .encoding import _DATETIMES, _new_datetime, dt_from_ms, dumps_json  # datetime cache inlined

__all__ = [
    "build_fact",
    "build_tool_call",
    "facts_from_rows",
    "message_from_values",
    "messages_from_read_rows",
    "messages_from_rows",
]

# Reading back what the engine wrote is the hot path: records are built without
# validation. This is what `model_construct` does, minus its per-field bookkeeping:
# a new instance, its `__dict__`, and pydantic's three slots set through their
# descriptors (about 1 µs for a Message instead of ~5.5 µs; `_construct_ok()` checks at
# import that the result equals `model_construct`'s, else we fall back to it).
_MESSAGE_FIELDS = frozenset(Message.model_fields)
_FACT_FIELDS = frozenset(Fact.model_fields)
_TOOL_CALL_FIELDS = frozenset(ToolCall.model_fields)
_new = object.__new__
_set = object.__setattr__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
_FAST = True


def _unvalidated(cls: Any, fields: frozenset[str], values: dict[str, Any]) -> Any:
    if not _FAST:
        return cls.model_construct(**values)
    record = _new(cls)
    _set(record, "__dict__", values)
    _set_fields_set(record, set(fields))
    _set_extra(record, None)
    _set_private(record, None)
    return record


_MESSAGE_FIELDS_SET = set(_MESSAGE_FIELDS)


def message_from_values(values: dict[str, Any]) -> Message:
    """A Message from a dict holding every field (trusted values), without validation.

    `_unvalidated` inlined: it runs once per message read (get_recent of 50 rows).
    """
    if not _FAST:
        return Message.model_construct(**values)
    record = _new(Message)
    _set(record, "__dict__", values)
    _set_fields_set(record, _MESSAGE_FIELDS_SET.copy())
    _set_extra(record, None)
    _set_private(record, None)
    return record


#: A read message's values before its row is applied, in the fields' order (`repr` and
#: `model_dump` follow it): a copy of this dict with the varying columns stored into it
#: costs ~0.2 µs less per message than an 11-key dict literal (get_recent(50): ~10 µs
#: of ~75). name, tool_call_id and is_error keep their defaults unless the row has them.
_MESSAGE_TEMPLATE: dict[str, Any] = dict.fromkeys(Message.model_fields)
_MESSAGE_TEMPLATE.update(name="", tool_call_id="", is_error=False)
_NO_SCORES: itertools.repeat[None] = itertools.repeat(None)


def messages_from_rows(
    rows: Iterable[Sequence[Any]],
    session_id: str | None,
    scores: Sequence[float] | None = None,
) -> list[Message]:
    """Messages from stored rows, without validation (the engine wrote them itself).

    A row is (seq, role, content, name, tool_call_id, tool_calls JSON, is_error,
    metadata JSON, created_at ms), the order of `history_sql.MESSAGE_COLUMNS`; `scores`
    (one per row) fill `score`. For get_recent(50) building the records costs more than
    the SQL, so everything a row needs is inlined in one loop: each call or lookup
    avoided per row shows.
    """
    if not _FAST:
        return _messages_constructed(rows, session_id, scores)
    out: list[Message] = []
    append = out.append
    new, set_dict, fields = _new, _set, _MESSAGE_FIELDS_SET
    set_fields_set, set_extra, set_private = _set_fields_set, _set_extra, _set_private
    cached_datetime, new_datetime, loads = _DATETIMES.get, _new_datetime, json.loads
    template = _MESSAGE_TEMPLATE.copy()
    template["session_id"] = session_id
    copy = template.copy
    # `zip` with the scores only when there are some: `enumerate` costs ~50 ns a row.
    pairs: Iterable[tuple[Sequence[Any], float | None]]
    if scores is None:
        pairs = zip(rows, _NO_SCORES, strict=False)
    else:
        pairs = zip(rows, scores, strict=True)
    for (seq, role, content, name, call_id, calls, error, meta, created), score in pairs:
        values = copy()
        values["role"] = role
        values["content"] = content
        if name:
            values["name"] = name
        if call_id:
            values["tool_call_id"] = call_id
        values["tool_calls"] = [] if calls == "[]" else _tool_calls(calls)
        if error:
            values["is_error"] = True
        values["metadata"] = {} if meta == "{}" else loads(meta)
        values["created_at"] = cached_datetime(created) or new_datetime(created)
        values["seq"] = seq
        if score is not None:
            values["score"] = score
        record = new(Message)  # `message_from_values` inlined
        set_dict(record, "__dict__", values)
        set_fields_set(record, fields.copy())
        set_extra(record, None)
        set_private(record, None)
        append(record)
    return out


def messages_from_read_rows(rows: Iterable[Sequence[Any]], session_id: str) -> list[Message]:
    """Messages from get_recent's and get_all's rows, without validation.

    A row is (seq, role, content, created_at ms, extra), `history_sql.READ_COLUMNS`:
    `extra` is NULL for a text-only message, else the JSON array [name, tool_call_id,
    tool calls, is_error, metadata]. `messages_from_rows`' loop, for this shape.
    """
    if not _FAST:
        return _messages_constructed(
            [(s, r, c, *_extra_columns(extra), t) for s, r, c, t, extra in rows], session_id, None
        )
    out: list[Message] = []
    append = out.append
    new, set_dict, fields = _new, _set, _MESSAGE_FIELDS_SET
    set_fields_set, set_extra, set_private = _set_fields_set, _set_extra, _set_private
    cached_datetime, new_datetime, loads = _DATETIMES.get, _new_datetime, json.loads
    template = _MESSAGE_TEMPLATE.copy()
    template["session_id"] = session_id
    copy = template.copy
    for seq, role, content, created, extra in rows:
        values = copy()
        values["role"] = role
        values["content"] = content
        if extra is None:
            values["tool_calls"] = []
            values["metadata"] = {}
        else:
            name, call_id, calls, error, meta = loads(extra)
            values["name"] = name
            values["tool_call_id"] = call_id
            values["tool_calls"] = [
                build_tool_call(c["id"], c["name"], c["arguments"]) for c in calls
            ]
            values["is_error"] = error != 0
            values["metadata"] = meta
        values["created_at"] = cached_datetime(created) or new_datetime(created)
        values["seq"] = seq
        record = new(Message)  # `message_from_values` inlined
        set_dict(record, "__dict__", values)
        set_fields_set(record, fields.copy())
        set_extra(record, None)
        set_private(record, None)
        append(record)
    return out


def _extra_columns(extra: str | None) -> tuple[str, str, str, int, str]:
    """READ_COLUMNS' `extra` back as MESSAGE_COLUMNS' five (name ... metadata JSON)."""
    if extra is None:
        return "", "", "[]", 0, "{}"
    name, call_id, calls, error, meta = json.loads(extra)
    return name, call_id, dumps_json(calls), error, dumps_json(meta)


def _messages_constructed(
    rows: Iterable[Sequence[Any]], session_id: str | None, scores: Sequence[float] | None
) -> list[Message]:
    """`messages_from_rows` through `model_construct` (a pydantic whose internals changed)."""
    return [
        Message.model_construct(
            role=role, content=content, name=name, tool_call_id=call_id,
            tool_calls=_tool_calls(calls), is_error=error != 0,
            metadata=json.loads(meta), created_at=dt_from_ms(created), seq=seq,
            session_id=session_id, score=None if scores is None else scores[i],
        )
        for i, (seq, role, content, name, call_id, calls, error, meta, created) in enumerate(rows)
    ]  # fmt: skip


_FACT_FIELDS_SET = set(_FACT_FIELDS)
#: Where a stored row's validity columns (key, valid_from, valid_to, superseded_by) end.
_VALIDITY_END = 20


def facts_from_rows(rows: Iterable[Sequence[Any]], *, ranked: bool) -> list[Fact]:
    """Facts from stored rows, without validation (the engine wrote them itself).

    A row is (id, content, source, category, tags JSON, metadata JSON, created_at ms,
    updated_at ms, layer, kind, confidence, salience, references JSON, expires_at ms or
    None, fingerprint, hits, key, valid_from ms or None (not given: created_at), valid_to ms or
    None, superseded_by or None) (`facts_sql`'s column list), then with `ranked` its bm25
    score (lower is better; the Fact gets it negated, higher is better). `build_fact`
    inlined in one loop, as `messages_from_rows`: a search builds up to top_k facts on
    every call (~1.1 -> ~0.8 µs a fact).
    """
    out: list[Fact] = []
    append = out.append
    fast, new, set_dict, fields = _FAST, _new, _set, _FACT_FIELDS_SET
    set_fields_set, set_extra, set_private = _set_fields_set, _set_extra, _set_private
    cached_datetime, new_datetime, loads = _DATETIMES.get, _new_datetime, json.loads
    score = None
    for row in rows:
        if ranked:
            score = -row[-1]
        (fact_id, content, source, category, tags, meta, created, updated, layer,
         kind, confidence, salience, refs, expires, fingerprint, hits) = row[:16]  # fmt: skip
        if len(row) >= _VALIDITY_END + ranked:
            key, valid_from, valid_to, successor = row[16:_VALIDITY_END]
        else:  # a row of the 0.2 columns: a fact in no chain
            key, valid_from, valid_to, successor = "", None, None, None
        values = {
            "id": fact_id,
            "content": content,
            "source": source,
            "tags": [] if tags == "[]" else _tag_list(tags),
            "category": category,
            "metadata": {} if meta == "{}" else loads(meta),
            "created_at": cached_datetime(created) or new_datetime(created),
            "updated_at": cached_datetime(updated) or new_datetime(updated),
            "layer": layer,
            "kind": kind,
            "confidence": confidence,
            "salience": salience,
            "references": [] if refs == "[]" else loads(refs),
            "expires_at": None
            if expires is None
            else (cached_datetime(expires) or new_datetime(expires)),
            "fingerprint": fingerprint,
            "hits": hits,
            "key": key,
            "valid_from": None
            if valid_from is None
            else (cached_datetime(valid_from) or new_datetime(valid_from)),
            "valid_to": None
            if valid_to is None
            else (cached_datetime(valid_to) or new_datetime(valid_to)),
            "superseded_by": successor,
            "score": score,
        }
        if fast:  # `_unvalidated` inlined
            record = new(Fact)
            set_dict(record, "__dict__", values)
            set_fields_set(record, fields.copy())
            set_extra(record, None)
            set_private(record, None)
        else:
            record = Fact.model_construct(**values)
        append(record)
    return out


def _tool_calls(text: str) -> list[ToolCall]:
    if text == "[]":
        return []
    return [build_tool_call(t["id"], t["name"], t["arguments"]) for t in json.loads(text)]


def build_tool_call(id: str, name: str, arguments: str) -> ToolCall:
    return _unvalidated(  # type: ignore[no-any-return]
        ToolCall, _TOOL_CALL_FIELDS, {"id": id, "name": name, "arguments": arguments}
    )


#: Decoded tag lists by their stored JSON text. Facts share a small set of tag lists
#: (json.loads is ~1 µs, a lookup and a list copy ~0.1 µs); bounded by clearing.
_TAG_LISTS: dict[str, tuple[str, ...]] = {}
_TAG_LISTS_MAX = 4096


def _tag_list(text: str) -> list[str]:
    if text == "[]":
        return []
    cached = _TAG_LISTS.get(text)
    if cached is None:
        cached = tuple(json.loads(text))
        if len(_TAG_LISTS) >= _TAG_LISTS_MAX:
            _TAG_LISTS.clear()
        _TAG_LISTS[text] = cached
    return list(cached)


def build_fact(
    fact_id: str,
    content: str,
    source: str,
    category: str,
    tags: str,
    metadata: str,
    created_ms: int,
    updated_ms: int,
    layer: str,
    kind: str,
    confidence: float,
    salience: float,
    refs: str,
    expires_ms: int | None,
    fingerprint: str,
    hits: int,
    score: float | None = None,
    key: str = "",
    valid_from_ms: int | None = None,
    valid_to_ms: int | None = None,
    superseded_by: str | None = None,
) -> Fact:
    """A Fact from its stored values (JSON text, unix ms), without validation.

    For one fact (`get`, the in-memory twin); many come from `facts_from_rows`, which this
    calls so that both stores build facts one way.
    """
    row = (
        *(fact_id, content, source, category, tags, metadata, created_ms, updated_ms),
        *(layer, kind, confidence, salience, refs, expires_ms, fingerprint, hits),
        *(key, valid_from_ms, valid_to_ms),
        superseded_by,
    )
    if score is None:
        return facts_from_rows([row], ranked=False)[0]
    return facts_from_rows([(*row, -score)], ranked=True)[0]


def _construct_ok() -> bool:
    """True when our builders give exactly what `model_construct` gives."""
    global _FAST
    _FAST = True
    try:
        fact = build_fact(
            "i", "c", "s", "a/b", '["t"]', '{"k":1}', 1, 2,
            "episodic", "k", 0.5, 0.25, '["r"]', 3, "ab", 2, 0.5, "a.b", 1, 4, "j",
        )  # fmt: skip
        call = build_tool_call("x", "f", "{}")
        message = message_from_values(
            {
                "role": "tool",
                "content": "c",
                "name": "n",
                "tool_call_id": "x",
                "tool_calls": [call],
                "is_error": True,
                "metadata": {"k": [1]},
                "created_at": None,
                "seq": 3,
                "session_id": "s",
                "score": None,
            }
        )
        pairs = [
            (fact, Fact.model_construct(**fact.__dict__)),
            (call, ToolCall.model_construct(**call.__dict__)),
            (message, Message.model_construct(**message.__dict__)),
        ]
        return all(
            a == b
            and a.model_dump() == b.model_dump()
            and repr(a) == repr(b)
            and a.model_fields_set == b.model_fields_set
            for a, b in pairs
        )
    except Exception:  # pragma: no cover - a pydantic release changed its internals
        return False


_FAST = _construct_ok()
